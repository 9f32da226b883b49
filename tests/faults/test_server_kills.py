"""The real server is killed (SIGKILL) at random moments while a writer PATCHes, and
restarted on the same data directory, several times: no acknowledged write is lost.

SIGKILL tests a crash of the process, not a power loss: what a dead process wrote is
still in the kernel's page cache. That ``fsync`` covers power loss is shown by the store's
own tests (each write fsyncs the file, then its directory) and the fault tests in
``test_fsync_failures.py``; docs/testing.md says why a test cannot pull the plug.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memnet.services.audit import fold
from tests.conftest import AGENT_KEY, REPO

KILLS = 6
DEADLINE_S = 45.0  # the whole test, on a slow 2-core machine
MAX_WRITES = 1500  # 16 characters each: the project document's 32,000 stay far off
URL = "/v1/tenants/t1/users/u1/documents/projects/crash.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """``python -m funchost serve`` on a free port over ``data_dir``, restartable."""

    data_dir: Path
    log: Path  # in the run's log directory: the secret scan reads it (tests/secret_scan.py)
    settings: dict[str, str] = field(default_factory=dict)  # more MEMNET_* settings
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMNET_")}
        env.update(
            MEMNET_PROFILES_DIR=str(REPO / "profiles"),
            MEMNET_CALLERS_FILE=str(REPO / "callers.dev.json"),
            # A retry may take over the claim a killed request left pending at once.
            MEMNET_IDEMPOTENCY_LEASE_SECONDS="0",
        )
        env.update(self.settings)
        command = [sys.executable, "-m", "funchost", "serve", "--port", str(self.port)]
        command += ["--data-dir", str(self.data_dir), "--settings", "none.json"]
        log = self.log.open("ab")
        self.process = subprocess.Popen(command, cwd=REPO, env=env, stdout=log, stderr=log)
        log.close()
        wait_until(lambda: request(self.port, "GET", "/v1/health")[0] == 200, 20)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)


def request(port: int, method: str, path: str, body: Any = None, **headers: str) -> Any:
    """``(status, ETag, JSON body)``; an OSError or HTTPException when the server is gone."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        sent = {"Authorization": f"Bearer {AGENT_KEY}", "Content-Type": "application/json"}
        connection.request(method, path, payload, {**sent, **headers})
        response = connection.getresponse()
        data = response.read()
        return response.status, response.getheader("ETag"), json.loads(data or b"null")
    finally:
        connection.close()


def wait_until(condition: Any, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    raise AssertionError("timed out")


@dataclass
class Writer:
    """PATCHes one facet per request, each with its own Idempotency-Key and If-Match from
    the last response. A request cut off by a kill is sent again, same key and ETag, until
    the restarted server answers: it lands exactly once either way."""

    server: Server
    etag: str
    acknowledged: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    cut_off: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        for n in range(MAX_WRITES):
            if self.stop.is_set():
                return
            self.write(f"w{n:04d}")

    def write(self, name: str) -> None:
        ops = [{"op": "add", "path": f"/content/facets/{name}", "value": name}]
        headers = {"If-Match": self.etag, "Idempotency-Key": f"key-{name}"}
        deadline = time.monotonic() + 30  # finish it even when stopped: know its outcome
        while time.monotonic() < deadline:
            try:
                status, etag, body = request(
                    self.server.port, "PATCH", URL, {"ops": ops}, **headers
                )
            except ConnectionRefusedError:
                time.sleep(0.02)  # not restarted yet: the same request again
                continue
            except (OSError, http.client.HTTPException):
                self.cut_off += 1  # killed mid-request: the same request again
                continue
            if status != 200:
                self.problems.append(f"{name}: {status} {body}")
                self.stop.set()
                return
            self.etag, self.acknowledged[name] = etag, name
            return
        self.problems.append(f"{name}: no answer in 30 s")
        self.stop.set()


@pytest.fixture
def server(tmp_path: Path, subprocess_log: Path) -> Iterator[Server]:
    running = Server(tmp_path / "data", subprocess_log)
    running.start()
    yield running
    if running.process is not None and running.process.poll() is None:
        running.kill()


def test_sigkill_at_random_moments_loses_no_acknowledged_patch(server: Server):
    started = time.monotonic()
    create = [{"op": "replace", "path": "/content/summary", "value": "crash test"}]
    status, etag, _ = request(
        server.port, "PATCH", URL, {"ops": create}, **{"If-None-Match": "*", "Idempotency-Key": "c"}
    )
    assert status == 201
    writer = Writer(server, etag)
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    for _ in range(KILLS):
        wait_for_writes(writer)
        time.sleep(random.uniform(0.0, 0.3))  # then kill, most likely mid-PATCH
        server.kill()
        server.start()
    wait_for_writes(writer)
    writer.stop.set()
    thread.join(timeout=20)

    assert writer.problems == []
    assert writer.cut_off >= KILLS // 2  # most kills landed in the middle of a request
    document, changes = read_back(server.port)
    facets = document["content"]["facets"]
    lost = sorted(set(writer.acknowledged) - set(facets))
    unacknowledged = sorted(set(facets) - set(writer.acknowledged))
    assert (lost, unacknowledged) == ([], [])
    assert facets == writer.acknowledged  # every acknowledged write, and nothing else
    assert [c["ops"][0]["value"] for c in reversed(changes[:-1])] == sorted(facets)
    assert fold(list(reversed(changes))) == document
    assert time.monotonic() - started < DEADLINE_S


def wait_for_writes(writer: Writer, count: int = 3) -> None:
    """Until the writer has ``count`` more acknowledged writes (or gave up)."""
    done = len(writer.acknowledged) + count
    wait_until(lambda: len(writer.acknowledged) >= done or writer.stop.is_set(), 20)


def read_back(port: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The document and its whole history, newest first (paged)."""
    status, _, body = request(port, "GET", URL)
    assert status == 200
    changes: list[dict[str, Any]] = []
    query = "?limit=1000"
    while query:
        status, _, page = request(port, "GET", f"{URL}:history{query}")
        assert status == 200, page
        changes += page["changes"]
        query = f"?limit=1000&before={page['next_before']}" if page.get("next_before") else ""
    return body["document"], changes
