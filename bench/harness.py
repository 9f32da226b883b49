"""Benchmark plumbing: a ``memnet serve`` subprocess, keep-alive HTTP clients,
a bounded concurrent load loop, latency statistics, and a description of the machine."""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
AGENT_KEY = "dev-agent-key"
START_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# -- the server under test ---------------------------------------------------------------


@dataclass
class Server:
    port: int
    process: subprocess.Popen[bytes]
    workdir: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self) -> str:
        path = self.workdir / "server.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else "(no log)"


def server_env(workdir: Path, extra: dict[str, str]) -> dict[str, str]:
    """The server's own environment: every MEMNET_* setting is stated, none inherited."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMNET_")}
    env.update(
        MEMNET_STORAGE="local",
        MEMNET_DATA_DIR=str(workdir / "data"),
        MEMNET_PROFILES_DIR=str(REPO / "profiles"),
        MEMNET_CALLERS_FILE=str(REPO / "callers.dev.json"),
        MEMNET_BLOB_CONTAINER="memnet",
    )
    env.update(extra)
    return env


def profiles_env(workdir: Path, profiles_dir: Path) -> dict[str, str]:
    """Settings for another profiles directory: the dev callers (same keys), each allowed
    every profile, written to ``workdir/callers.json``."""
    callers = json.loads((REPO / "callers.dev.json").read_text())
    for caller in callers["callers"]:
        caller["profiles"] = ["*"]
    path = workdir / "callers.json"
    path.write_text(json.dumps(callers, indent=2))
    return {"MEMNET_PROFILES_DIR": str(profiles_dir), "MEMNET_CALLERS_FILE": str(path)}


def start_server(
    extra_env: dict[str, str] | None = None,
    profiles_dir: Path | None = None,
    cpus: set[int] | None = None,
    module: str = "memnet",
) -> Server:
    """Start ``memnet serve`` on a free loopback port; wait for /v1/health.
    ``profiles_dir``: serve that directory's profiles (see :func:`profiles_env`);
    ``cpus``: pin the server to these CPUs (None: wherever the OS puts it);
    ``module``: the ``python -m`` module whose ``serve`` command runs it (a bench that
    changes a constant of the server before it starts)."""
    workdir = Path(tempfile.mkdtemp(prefix="memnet-bench-"))
    port = free_port()
    command = [sys.executable, "-m", module, "serve", "--host", HOST, "--port", str(port)]
    command += ["--settings", str(workdir / "no-local-settings.json")]  # env only
    env = server_env(workdir, extra_env or {})
    if profiles_dir is not None:
        env.update(profiles_env(workdir, profiles_dir))
    with (workdir / "server.log").open("wb") as log:
        pin = None if cpus is None else (lambda: os.sched_setaffinity(0, cpus))
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=log, preexec_fn=pin
        )
    server = Server(port, process, workdir)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            if Client(port).request("GET", "/v1/health").status == 200:
                return server
        except OSError:
            pass
        time.sleep(0.1)
    tail = server.log_tail()
    server.stop()
    raise RuntimeError(f"memnet server did not come up:\n{tail}")


# -- clients -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    status: int
    etag: str | None
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class Client:
    """One keep-alive HTTP/1.1 connection, reopened if the server closes it."""

    def __init__(self, port: int, key: str | None = AGENT_KEY) -> None:
        self._port, self._key = port, key
        self._conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> Reply:
        payload = None if body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json", **(headers or {})}
        if self._key:
            sent["Authorization"] = f"Bearer {self._key}"
        for attempt in (1, 2):
            conn = self._conn or http.client.HTTPConnection(HOST, self._port, timeout=60)
            try:
                conn.request(method, path, body=payload, headers=sent)
                response = conn.getresponse()
                data = response.read()
            except (http.client.RemoteDisconnected, ConnectionError):
                conn.close()
                self._conn = None
                if attempt == 2:
                    raise
                continue
            self._conn = conn
            return Reply(response.status, response.getheader("ETag"), data)
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# -- the memnet document API ------------------------------------------------------------


def doc_url(user: str, namespace: str = "user", path: str = "user_dynamic.json") -> str:
    return f"/v1/tenants/bench/users/{user}/documents/{namespace}/{path}"


def patch(
    client: Client, url: str, ops: list[dict[str, Any]], etag: str | None, rebase: bool = False
) -> Reply:
    condition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    headers = {**condition, "Idempotency-Key": uuid.uuid4().hex}
    body: dict[str, Any] = {"ops": ops, **({"rebase": True} if rebase else {})}
    return client.request("PATCH", url, body, headers)


def create(client: Client, url: str, ops: list[dict[str, Any]]) -> str:
    reply = patch(client, url, ops, None)
    if reply.status != 201 or reply.etag is None:
        raise RuntimeError(f"create {url}: {reply.status} {reply.body[:300]!r}")
    return reply.etag


# -- load loop and statistics --------------------------------------------------------------

Op = Callable[[], bool]  # one request; True when it got the expected answer


@dataclass
class Run:
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    elapsed_s: float = 0.0
    capped: bool = False


def run_load(
    clients: int, requests: int, time_cap_s: float, make_op: Callable[[int], Op], warmup: int = 3
) -> Run:
    """``clients`` threads share ``requests`` tickets (after ``warmup`` untimed ops each)
    and stop early at ``time_cap_s``."""
    run, lock = Run(), threading.Lock()
    tickets = itertools.count()
    ready = threading.Barrier(clients + 1)
    deadline = [math.inf]

    def worker(index: int) -> None:
        op = make_op(index)
        for _ in range(warmup):
            _safely(op)
        ready.wait()
        while next(tickets) < requests and time.perf_counter() < deadline[0]:
            started = time.perf_counter()
            ok = _safely(op)
            took = (time.perf_counter() - started) * 1000
            with lock:
                run.latencies_ms.append(took)
                run.errors += 0 if ok else 1

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    deadline[0] = started + time_cap_s
    for thread in threads:
        thread.join()
    run.elapsed_s = time.perf_counter() - started
    run.capped = len(run.latencies_ms) < requests
    return run


def _safely(op: Op) -> bool:
    try:
        return op()
    except Exception:  # a failed request counts as an error, it must not end the run
        return False


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))]


def summarize(latencies_ms: list[float], elapsed_s: float, **extra: Any) -> dict[str, Any]:
    return {
        "count": len(latencies_ms),
        "p50_ms": round(percentile(latencies_ms, 50), 3),
        "p95_ms": round(percentile(latencies_ms, 95), 3),
        "p99_ms": round(percentile(latencies_ms, 99), 3),
        "throughput_rps": round(len(latencies_ms) / elapsed_s, 1) if elapsed_s else None,
        "elapsed_s": round(elapsed_s, 3),
        **extra,
    }


def summarize_run(run: Run) -> dict[str, Any]:
    return summarize(run.latencies_ms, run.elapsed_s, errors=run.errors, capped=run.capped)


def time_calls(call: Callable[[int], object], count: int, warmup: int = 5) -> dict[str, Any]:
    """Latency of ``call(i)`` run ``count`` times in a row, in this thread."""
    for i in range(warmup):
        call(-1 - i)
    latencies, started = [], time.perf_counter()
    for i in range(count):
        begun = time.perf_counter()
        call(i)
        latencies.append((time.perf_counter() - begun) * 1000)
    return summarize(latencies, time.perf_counter() - started)


# -- the machine -------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    return {
        "cpu_model": _first_value(Path("/proc/cpuinfo"), "model name") or platform.processor(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "memory_gib": round(
            int((_first_value(Path("/proc/meminfo"), "MemTotal") or "0 kB").split()[0]) / 1024**2, 1
        ),
        "os": _os_name(),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def _first_value(path: Path, key: str) -> str | None:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip() == key:
            return value.strip()
    return None


def _os_name() -> str:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return platform.system()
    for line in text.splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip('"')
    return platform.system()


def scale_main(name: str, doc: str, run: Callable[[int, int, bool], dict[str, Any]]) -> None:
    """The command line of a benchmark of one user at scale (``bench.export``,
    ``bench.transfer``): ``--events``, ``--changes``, ``--tracemalloc``, ``--out``; the
    result printed and kept as ``{name}-{stamp}.json``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument(
        "--tracemalloc", action="store_true", help="also the Python heap's peak (slower)"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    result = run(args.events, args.changes, args.tracemalloc)
    print(json.dumps(result, indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")
