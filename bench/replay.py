"""The replay pipeline against a real ``memnet serve``, per storage backend.

    .venv/bin/python -m bench.replay [--backend local|azurite|all] [--snapshots N]
                                     [--llm-snapshots N] [--backlog N] [--guard on|off|both]
                                     [--write-docs]
    .venv/bin/python -m bench.replay --from-results bench/results/replay-<ts>.json

The host runs the queue-triggered replay worker itself (and the snapshot blob trigger, by
polling the store). Over real HTTP, per backend, each phase on a fresh server (and, for
``azurite``, a fresh Azurite):

1. **rules**: a burst of ``--calibrate`` snapshots measures the worker's capacity; then
   ``--snapshots`` uploads (``PUT .../snapshots/{c}/{s}``, ~10 messages with statements
   the rule extractor matches) at a steady rate below it (``--rate``, default half the
   capacity), each ``GET .../replay`` polled until it is finished; upload-to-applied
   latency from the upload's start to the record's final ``updated_at``.
2. **llm**: the same with ``MEMNET_EXTRACTOR=openai`` against :mod:`bench.fake_llm`,
   which sleeps ``--llm-delay`` s per call: ``--llm-snapshots`` at ``--llm-rate``, then a
   burst of ``--llm-burst`` at once; each replay split into queue wait, work before the
   call, the call (timed by the fake server), and work after it.
3. **backlog**: ``--backlog`` snapshots uploaded as fast as 8 clients can (rule
   extractor), the queue length and the backlog age sampled every second until drained;
   once per ``--backlog-runs`` entry (``N`` host processes on one store and queue,
   ``/nopoll``: without the blob trigger's poller).

``--guard`` sets the starter profile's poisoning guard (docs/security.md): ``on`` (the
default) serves the profile as shipped, ``off`` the same profile without ``guard_rules``
(a copy in a temporary profiles directory), ``both`` runs the rules and llm phases once
more with the guard off after each run with it on, for the guard's cost (the backlog
runs with the guard on only).

Plus, in-process, the storage calls one upload and one replay make (counted). Raw JSON
goes to bench/results/replay-<timestamp>.json; ``--write-docs`` writes the "## Replay"
section at the end of docs/performance.md (``--from-results``: from a saved run, measuring
nothing). The defaults take about 14 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import replay_report
from bench.fake_llm import FakeLLM
from bench.harness import REPO, Client, Server, machine, percentile, server_env, start_server
from bench.storage import CountingStore, creation_cost, open_backend

RESULTS = REPO / "bench" / "results"
TENANT = "bench"
PROFILE = "project-copilot-v1"
PROJECTS = ("alpha", "beta", "gamma")
TERMINAL = frozenset({"applied", "partially_applied", "unresolved", "failed"})
REPLAY_QUEUE = "memnet-replay"
PHASE_TIMEOUT_S = 900.0
UPLOADERS = 8
STALL_S = 120  # a backlog whose queue does not move for this long is given up


# -- snapshots -----------------------------------------------------------------------------


@dataclass
class Snap:
    """One snapshot: what was sent, and what was seen of its replay (epoch seconds)."""

    user: str
    conversation: str
    snapshot: str
    token: str
    project: str
    upload_start: float = 0.0
    upload_end: float = 0.0
    upload_status: int = 0
    created_at: float | None = None  # the record's, at upload (server clock)
    claim_at: float | None = None  # the record's updated_at seen while claimed, not planned
    finished_at: float | None = None  # the record's updated_at once finished
    observed_at: float | None = None  # when the poll saw it finished (bench clock)
    status: str | None = None
    source: str | None = None  # upload, or blob_trigger when the trigger created the record
    attempts: int = 0
    changes: int = 0
    events: int = 0
    rejected: list[str] = field(default_factory=list)
    error: Any = None

    @property
    def url(self) -> str:
        return (
            f"/v1/tenants/{TENANT}/users/{self.user}/snapshots/{self.conversation}/{self.snapshot}"
        )

    @property
    def latency_ms(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.upload_start) * 1000


def make_snaps(tag: str, count: int, users: int) -> list[Snap]:
    return [
        Snap(
            user=f"{tag}-u{i % users:03d}",
            conversation=f"c{i:05d}",
            snapshot="s1",
            token=f"{tag}-{i:05d}",
            project=PROJECTS[(i // users) % len(PROJECTS)],
        )
        for i in range(count)
    ]


def transcript(snap: Snap) -> dict[str, Any]:
    """Ten messages; three user statements the starter profile's rules match (a fact to
    remember, a preference, a project decision), unique to the snapshot."""
    said = [
        ("user", f"Hi, let's work on {snap.project} today. [bench:{snap.token}]"),
        ("assistant", "Sure. What would you like to go over?"),
        ("user", f"Remember that my badge code is {snap.token} at the north entrance."),
        ("assistant", "Noted, I will keep that in mind."),
        ("user", f"I prefer status reports that start with item {snap.token} first."),
        ("assistant", "Understood: that item goes first from now on."),
        ("user", f"We decided to ship milestone {snap.token} on Friday after the review."),
        ("assistant", "Great, I have recorded the decision for the project."),
        ("user", "Thanks, that is all for today."),
        ("assistant", "You are welcome. Talk soon!"),
    ]
    messages = [
        {"id": f"m{n + 1}", "role": role, "text": text, "timestamp": f"2026-11-24T10:{n:02d}:00Z"}
        for n, (role, text) in enumerate(said)
    ]
    return {
        "messages": messages,
        "service_id": "assistant-a",
        "profile_id": PROFILE,
        "project_hint": snap.project,
        "metadata": {"bench": "replay"},
    }


def upload(client: Client, snap: Snap) -> None:
    snap.upload_start = time.time()
    reply = client.request("PUT", snap.url, transcript(snap))
    snap.upload_end = time.time()
    snap.upload_status = reply.status
    if reply.status != 202:
        raise RuntimeError(f"PUT {snap.url}: {reply.status} {reply.body[:300]!r}")
    snap.created_at = epoch(reply.json()["created_at"])


def epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def observe(snap: Snap, record: dict[str, Any], seen_at: float) -> bool:
    """Take what a status poll shows; True once the replay is finished."""
    status = record["status"]
    planned = record.get("patches") or record.get("events")
    if status == "running" and snap.claim_at is None and not planned:  # claimed only
        snap.claim_at = epoch(record["updated_at"])
    if status not in TERMINAL:
        return False
    snap.status, snap.finished_at, snap.observed_at = status, epoch(record["updated_at"]), seen_at
    snap.attempts, snap.source = int(record.get("attempts") or 0), record.get("source")
    snap.changes, snap.events = len(record.get("changes") or []), len(record.get("events") or [])
    snap.rejected = [str(r.get("code")) for r in record.get("rejected") or []]
    snap.error = record.get("error")
    return True


def poll_until_done(
    port: int, snaps: list[Snap], uploaded: threading.Event, interval: float, timeout: float
) -> None:
    """Poll every uploaded, unfinished snapshot's status every ``interval`` s until all
    are finished (``uploaded`` set when the uploader is through)."""
    client, deadline = Client(port), time.time() + timeout
    while time.time() < deadline:
        done_uploading = uploaded.is_set()
        pending = [s for s in snaps if s.upload_status == 202 and s.finished_at is None]
        for snap in pending:
            reply = client.request("GET", snap.url + "/replay")
            if reply.status == 200:
                observe(snap, reply.json(), time.time())
        if done_uploading and all(s.finished_at is not None for s in snaps if s.upload_status):
            return
        time.sleep(interval)
    client.close()


# -- end to end at a steady rate, and bursts -----------------------------------------------


def steady(port: int, snaps: list[Snap], rate: float, poll: float = 0.05) -> dict[str, Any]:
    """Upload ``snaps`` one every ``1 / rate`` s from one client; poll them until done."""
    uploaded = threading.Event()
    poller = threading.Thread(
        target=poll_until_done, args=(port, snaps, uploaded, poll, PHASE_TIMEOUT_S), daemon=True
    )
    poller.start()
    client, start, late = Client(port), time.time(), 0
    for i, snap in enumerate(snaps):
        wait = start + i / rate - time.time()
        if wait > 0:
            time.sleep(wait)
        else:
            late += 1
        upload(client, snap)
    uploaded.set()
    poller.join()
    return {**outcome(snaps), "rate_per_s": round(rate, 3), "uploads_behind_schedule": late}


def burst(port: int, snaps: list[Snap], clients: int = UPLOADERS, poll: float = 0.05) -> Any:
    """Upload ``snaps`` as fast as ``clients`` clients can; poll them until done."""
    uploaded = threading.Event()
    poller = threading.Thread(
        target=poll_until_done, args=(port, snaps, uploaded, poll, PHASE_TIMEOUT_S), daemon=True
    )
    poller.start()
    upload_all([port], snaps, clients)
    uploaded.set()
    poller.join()
    return outcome(snaps)


def upload_all(ports: list[int], snaps: list[Snap], clients: int) -> None:
    """``clients`` threads share the uploads; client ``i`` talks to ``ports[i % n]``."""
    tickets, lock = itertools.count(), threading.Lock()

    def run(index: int) -> None:
        client = Client(ports[index % len(ports)])
        while True:
            with lock:
                i = next(tickets)
            if i >= len(snaps):
                return
            upload(client, snaps[i])

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def outcome(snaps: list[Snap]) -> dict[str, Any]:
    """Latency (upload start to the record's final ``updated_at``), throughput, and how
    the replays ended."""
    done = [s for s in snaps if s.finished_at is not None]
    latencies = [s.latency_ms for s in done if s.latency_ms is not None]
    uploads = [(s.upload_end - s.upload_start) * 1000 for s in snaps if s.upload_status]
    seen = [(s.observed_at - s.upload_start) * 1000 for s in done if s.observed_at]
    finishes = sorted(s.finished_at for s in done if s.finished_at is not None)
    span = (finishes[-1] - min(s.upload_start for s in snaps)) if finishes else 0.0
    busy = finishes[-1] - finishes[0] if len(finishes) > 1 else 0.0
    return {
        "snapshots": len(snaps),
        "finished": len(done),
        "latency": stats(latencies),
        "latency_observed": stats(seen),
        "upload": stats(uploads),
        "elapsed_s": round(span, 3),
        "throughput_per_s": round(len(done) / span, 3) if span else None,
        # finishes per second between the first and the last finish: the worker's rate
        # while it has work (a burst) or the offered rate (a steady run)
        "finish_rate_per_s": round((len(finishes) - 1) / busy, 3) if busy else None,
        "statuses": dict(Counter(s.status or "unfinished" for s in snaps)),
        "rejected": dict(Counter(code for s in snaps for code in s.rejected)),
        "errors": dict(Counter(str((s.error or {}).get("code")) for s in snaps if s.error)),
        "attempts_over_1": sum(1 for s in done if s.attempts > 1),
        "sources": dict(Counter(s.source or "?" for s in done)),
        "changes_per_replay": round(sum(s.changes for s in done) / len(done), 2) if done else 0,
        "events_per_replay": round(sum(s.events for s in done) / len(done), 2) if done else 0,
    }


def stats(values_ms: list[float]) -> dict[str, Any]:
    if not values_ms:
        return {"count": 0}
    return {
        "count": len(values_ms),
        "p50_ms": round(percentile(values_ms, 50), 1),
        "p95_ms": round(percentile(values_ms, 95), 1),
        "p99_ms": round(percentile(values_ms, 99), 1),
        "max_ms": round(max(values_ms), 1),
        "mean_ms": round(sum(values_ms) / len(values_ms), 1),
    }


# -- the LLM's time beside the pipeline's ---------------------------------------------------


def breakdown(snaps: list[Snap], fake: FakeLLM) -> dict[str, Any]:
    """Per replay: upload, queue wait (record created -> claimed), before the call
    (claimed -> the fake server has the request: open, decrypt, read the targets, build
    the prompt, the SDK), the call (timed by the fake server), after it (the answer
    written -> finished: parse, contract check, plan stored, digest, patches, finish),
    and the overhead (upload-to-applied minus the fake's delay)."""
    with fake.lock:
        calls = list(fake.calls)
    by_token: dict[str, list[Any]] = {}
    for call in calls:
        by_token.setdefault(call.token or "?", []).append(call)
    parts: dict[str, list[float]] = {
        k: [] for k in ("upload", "queue_wait", "before_call", "call", "after_call", "overhead")
    }
    unclaimed = 0
    for snap in snaps:
        mine = by_token.get(snap.token)
        if snap.finished_at is None or not mine or snap.created_at is None:
            continue
        call = mine[0]
        parts["upload"].append((snap.upload_end - snap.upload_start) * 1000)
        parts["call"].append((call.end - call.start) * 1000)
        parts["after_call"].append((snap.finished_at - call.end) * 1000)
        parts["overhead"].append((snap.finished_at - snap.upload_start - fake.delay) * 1000)
        if snap.claim_at is None:
            unclaimed += 1
            continue
        parts["queue_wait"].append((snap.claim_at - snap.created_at) * 1000)
        parts["before_call"].append((call.start - snap.claim_at) * 1000)
    tokens = {s.token for s in snaps}
    return {
        "parts": {name: stats(values) for name, values in parts.items()},
        "claim_not_observed": unclaimed,
        "calls": sum(len(v) for k, v in by_token.items() if k in tokens),
        "snapshots_called_twice": sum(1 for k, v in by_token.items() if k in tokens and len(v) > 1),
    }


# -- the backlog ---------------------------------------------------------------------------


class CpuMeter:
    """CPU seconds of the server process and of the Azurite processes (children of this
    one), from /proc; ``sample`` gives each one's share of a CPU since the last sample."""

    def __init__(self, server_pids: list[int]) -> None:
        self._pids = {"server": server_pids, "azurite": _azurite_pids()}
        self._last = self._read(), time.monotonic()

    def _read(self) -> dict[str, float]:
        return {name: sum(_cpu_seconds(p) for p in pids) for name, pids in self._pids.items()}

    def sample(self) -> dict[str, float]:
        now, when = self._read(), time.monotonic()
        (before, then), self._last = self._last, (now, when)
        took = max(when - then, 1e-6)
        return {name: round((now[name] - before[name]) / took, 2) for name in now}


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _azurite_pids() -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"azurite" in cmdline:
            found.append(int(entry.name))
    return found


def backlog(servers: list[Server], env: dict[str, str], snaps: list[Snap]) -> dict[str, Any]:
    """Upload ``snaps`` as fast as :data:`UPLOADERS` clients can (spread over the
    ``servers``, which share one store and queue; the worker cannot keep up) and sample
    every second, until drained: the queue's length and the CPU used (all servers
    together; Azurite). Afterwards every record is read once for its exact finish time,
    which gives the finished count and the backlog age (the age of the oldest snapshot
    not yet finished) at each sample."""
    from memnet import wiring
    from memnet.settings import Settings

    queue = wiring.message_queue(Settings.from_env(env))
    meter = CpuMeter([server.process.pid for server in servers])
    samples: list[dict[str, Any]] = []
    start, uploads_done, stalled = time.time(), threading.Event(), list[float]()

    def sample() -> None:
        while True:
            time.sleep(max(0.0, start + len(samples) + 1 - time.time()))
            now = time.time()
            length = queue.count(REPLAY_QUEUE)
            uploaded = sum(1 for s in snaps if s.upload_end and s.upload_end <= now)
            samples.append(
                {
                    "t_s": round(now - start, 2),
                    "at": now,
                    "queue_length": length,
                    "uploaded": uploaded,
                    "cpu": meter.sample(),
                }
            )
            if (uploads_done.is_set() and length == 0) or now - start > PHASE_TIMEOUT_S:
                return
            recent = [p["queue_length"] for p in samples[-STALL_S:]]
            if uploads_done.is_set() and len(recent) == STALL_S and len(set(recent)) == 1:
                stalled.append(now - start)  # no progress for STALL_S s: give up
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    upload_all([server.port for server in servers], snaps, UPLOADERS)
    uploads_done.set()
    upload_s = max(s.upload_end for s in snaps) - start
    sampler.join()
    poll_until_done(servers[0].port, snaps, uploads_done, 0.5, 120.0)  # read every record
    poison = queue.count(REPLAY_QUEUE + "-poison")
    result = outcome(snaps)
    del result["latency_observed"]  # read after the drain: not a latency
    finishes = sorted(
        ((s.finished_at, s) for s in snaps if s.finished_at is not None), key=lambda p: p[0]
    )
    for point in samples:
        at = point.pop("at")
        finished = [s for f, s in finishes if f <= at]
        point["finished"] = len(finished)
        waiting = [s.upload_end for s in snaps if s.upload_end <= at and not _done_by(s, at)]
        point["oldest_unfinished_age_s"] = round(at - min(waiting), 2) if waiting else 0.0
    drained = finishes[-1][0] - start if finishes else None
    after = [f for f, _ in finishes if f > start + upload_s]
    return {
        **result,
        "hosts": len(servers),
        "uploaders": UPLOADERS,
        "upload_phase_s": round(upload_s, 3),
        "upload_rate_per_s": round(len(snaps) / upload_s, 1),
        "finished_during_uploads": len(finishes) - len(after),
        "drain_s": round(drained, 3) if drained else None,
        "drain_rate_after_uploads_per_s": (
            round(len(after) / (finishes[-1][0] - start - upload_s), 3) if len(after) > 1 else None
        ),
        "poison_messages": poison,
        "stalled_at_s": round(stalled[0], 1) if stalled else None,
        "samples": samples,
    }


def _done_by(snap: Snap, at: float) -> bool:
    return snap.finished_at is not None and snap.finished_at <= at


# -- storage calls per upload and per replay, in-process ------------------------------------


def storage_calls(profiles_dir: Path) -> dict[str, Any]:
    """The BlobStore calls of one upload and of its replay (rule extractor), counted
    with a counting store over the embedded one, and the queue calls of each."""
    from memnet import bootstrap
    from memnet.adapters.local.blobstore import FileBlobStore
    from memnet.adapters.local.queue import SqliteQueue
    from memnet.domain.layout import SnapshotRef
    from memnet.settings import Settings

    with tempfile.TemporaryDirectory(prefix="memnet-bench-replay-") as tmp:
        root = Path(tmp)
        store = CountingStore(FileBlobStore(root / "blobs", "memnet"))
        queue = CountingQueue(SqliteQueue(root / "queue.sqlite3"))
        settings = Settings(
            data_dir=root,
            profiles_dir=profiles_dir,
            callers_file=REPO / "callers.dev.json",
        )
        services = bootstrap.build(settings, blobs=store, queue=queue)
        caller = services.authenticator.authenticate({"authorization": "Bearer dev-agent-key"})
        counted: dict[str, Any] = {}
        for i in range(3):  # the first replay of a user creates its documents
            snap = make_snaps(f"count{i}", 1, 1)[0]
            ref = SnapshotRef(TENANT, snap.user, snap.conversation, snap.snapshot)
            store.calls.clear()
            queue.calls.clear()
            services.snapshots.upload(caller, ref, transcript(snap))
            upload_calls = (list(store.calls), list(queue.calls))
            (message,) = queue.inner.receive(REPLAY_QUEUE, max_messages=1)
            store.calls.clear()
            queue.calls.clear()
            record = services.replay.handle_message(message.body)
            queue.inner.delete(REPLAY_QUEUE, message)
            counted = {
                "upload": dict(Counter(upload_calls[0])),
                "upload_queue": dict(Counter(upload_calls[1])),
                "replay": dict(Counter(store.calls)),
                "replay_queue": dict(Counter(queue.calls)),
                "replay_status": record["status"] if record else None,
                "replay_changes": len(record["changes"]) if record else None,
                "replay_events": len(record["events"]) if record else None,
            }
        return counted


class CountingQueue:
    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, list[str]()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if callable(attr) and name in ("send", "receive", "delete", "release", "count"):

            def counted(*args: Any, **kwargs: Any) -> Any:
                self.calls.append(name)
                return attr(*args, **kwargs)

            return counted
        return attr


# -- per backend, main ---------------------------------------------------------------------


LEFT_OVER: list[Path] = []  # the servers' directories, deleted at the end of the run


def stop_server(server: Server) -> None:
    """Stop ``server`` but keep its directory until the whole run is over: deleting
    thousands of files slows the file creations of the next phase on ext4 (see
    :func:`bench.storage.creation_cost`)."""
    server.process.terminate()
    try:
        server.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()
    LEFT_OVER.append(server.workdir)


def clean_up() -> None:
    while LEFT_OVER:
        shutil.rmtree(LEFT_OVER.pop(), ignore_errors=True)


def fresh_server(backend_env: dict[str, str], container: str, extra: dict[str, str]) -> Server:
    """A server on its own container (the Azurite backend is shared by the phases)."""
    return start_server({**backend_env, "MEMNET_BLOB_CONTAINER": container, **extra})


def warm_up(port: int, tag: str, count: int = 2) -> None:
    burst(port, make_snaps(tag, count, count))


def server_log_counts(server: Server) -> dict[str, int]:
    path = server.workdir / "server.log"
    text = path.read_text(errors="replace") if path.exists() else ""
    return {
        "blob_trigger_runs": text.count("blob function snapshot_written ran"),
        "queue_function_failures": text.count("queue function"),
        "pop_receipt_expired": text.count("pop receipt expired"),
        "poisoned": text.count("moved to memnet-replay-poison"),
        "tracebacks": text.count("Traceback"),
    }


def bench_rules(env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    server = fresh_server(env, "bench-rules", {})
    try:
        warm_up(server.port, "rw")
        calibration = burst(server.port, make_snaps("rc", args.calibrate, 10))
        capacity = calibration["finish_rate_per_s"] or 1.0
        rate = args.rate or round(capacity / 2, 2)
        print(f"  rules capacity ~{capacity}/s; steady run at {rate}/s", flush=True)
        run = steady(server.port, make_snaps("rs", args.snapshots, args.users), rate)
        print("  rules  " + replay_report.brief(run), flush=True)
        return {"calibration": calibration, "steady": run, "server_log": server_log_counts(server)}
    finally:
        stop_server(server)


def bench_llm(env: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    fake = FakeLLM(args.llm_delay).start()
    server = fresh_server(env, "bench-llm", fake.server_env())
    try:
        warm_up(server.port, "lw")
        rate = args.llm_rate or round(0.8 / args.llm_delay, 3)
        snaps = make_snaps("ls", args.llm_snapshots, min(args.users, args.llm_snapshots))
        run = steady(server.port, snaps, rate)
        run["breakdown"] = breakdown(snaps, fake)
        print("  llm    " + replay_report.brief(run), flush=True)
        result: dict[str, Any] = {"delay_s": args.llm_delay, "steady": run}
        if args.llm_burst:
            bsnaps = make_snaps("lb", args.llm_burst, min(args.users, args.llm_burst))
            result["burst"] = burst(server.port, bsnaps)
            result["burst"]["breakdown"] = breakdown(bsnaps, fake)
            print("  burst  " + replay_report.brief(result["burst"]), flush=True)
        result["server_log"] = server_log_counts(server)
        return result
    finally:
        stop_server(server)
        fake.stop()


def bench_backlog(name: str, args: argparse.Namespace, guard: dict[str, str]) -> dict[str, Any]:
    """One backlog run per entry of ``--backlog-runs``: ``N`` ``funchost serve``
    processes on one store and queue, as Functions scales queue consumers out
    (``N/nopoll``: with the snapshot blob trigger's poller off, as on Azure, where Event
    Grid delivers blob events and nothing lists the store). All use the first one's data
    directory (the local store and queue; on both backends the snapshot key file and the
    search index). Each run has a backend of its own (a fresh Azurite: the emulator slows
    down as it fills). After the drain, one listing of the store under ``tenants/`` (what
    the poller does every 2 s) is timed."""
    runs = []
    for spec in args.backlog_runs:
        hosts, _, mode = spec.partition("/")
        count, poll = int(hosts), mode != "nopoll"
        container = f"bench-backlog-h{count}{'' if poll else '-np'}"
        extra = {} if poll else {"FUNCHOST_BLOB_POLL_SECONDS": "0"}
        with open_backend(name) as backend:
            env = {**backend.server_env, **guard}
            first = fresh_server(env, container, extra)
            servers = [first]
            try:
                shared = {**extra, "MEMNET_DATA_DIR": str(first.workdir / "data")}
                servers += [fresh_server(env, container, shared) for _ in range(count - 1)]
                warm_up(first.port, f"bw{count}")
                probe = creation_cost(first.workdir / "creation-probe") if name == "local" else None
                full_env = server_env(first.workdir, {**env, "MEMNET_BLOB_CONTAINER": container})
                snaps = make_snaps(
                    f"b{count}{'p' if poll else 'n'}", args.backlog, args.backlog_users
                )
                result = backlog(servers, full_env, snaps)
                result.update(blob_poller=poll, listing=time_listing(full_env))
                if probe is not None:  # how fast the file system created files just before
                    result["file_creation_p50_ms"] = probe["p50_ms"]
                result["server_log"] = [server_log_counts(server) for server in servers]
                print(f"  backlog {spec} " + replay_report.brief(result), flush=True)
                runs.append(result)
            finally:
                for server in reversed(servers):
                    stop_server(server)
    return {"runs": runs}


def time_listing(env: dict[str, str]) -> dict[str, Any]:
    """The blobs under ``tenants/`` and how long listing them once takes (ms)."""
    from memnet import wiring
    from memnet.settings import Settings

    store = wiring.blob_store(Settings.from_env(env))
    started = time.perf_counter()
    names = sum(1 for _ in store.list_names("tenants/"))
    return {"blobs": names, "list_ms": round((time.perf_counter() - started) * 1000, 1)}


def unguarded_profiles() -> Path:
    """A copy of ``profiles/`` whose starter profile has no ``guard_rules`` (the guard
    off), in a temporary directory deleted with the servers' at the end of the run."""
    root = Path(tempfile.mkdtemp(prefix="memnet-bench-profiles-"))
    LEFT_OVER.append(root)
    shutil.copytree(REPO / "profiles", root / "profiles")
    path = root / "profiles" / f"{PROFILE}.json"
    raw = json.loads(path.read_text())
    raw.pop("guard_rules", None)
    path.write_text(json.dumps(raw, indent=2))
    return root / "profiles"


def guard_env(guard: str) -> dict[str, str]:
    """The servers' settings for one ``--guard`` setting: the profiles as shipped (on),
    or the starter without its ``guard_rules`` (off)."""
    return {} if guard == "on" else {"MEMNET_PROFILES_DIR": str(unguarded_profiles())}


def bench_backend(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Each phase with the first of ``args.guards``; the rules and llm phases once more
    for each other guard setting, under ``guard_<setting>``."""
    print(f"[{name}]", flush=True)
    result: dict[str, Any] = {"backend": name}
    first, *others = args.guards
    for phase in ("rules", "llm", "backlog"):
        if phase not in args.phases:
            continue
        result[phase] = bench_phase(name, phase, first, args)
        same = same_rate(args, result[phase])
        for guard in others if phase != "backlog" else []:
            result.setdefault(f"guard_{guard}", {})[phase] = bench_phase(name, phase, guard, same)
    return result


def same_rate(args: argparse.Namespace, run: dict[str, Any]) -> argparse.Namespace:
    """``args`` with the steady rules rate ``run`` used, so that the other guard
    settings are offered the same load (not half of their own calibration)."""
    rate = run.get("steady", {}).get("rate_per_s") or args.rate
    return argparse.Namespace(**{**vars(args), "rate": rate})


def bench_phase(name: str, phase: str, guard: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"  {phase}, guard {guard}", flush=True)
    started, load = time.time(), os.getloadavg()[0]
    if phase == "backlog":
        result = bench_backlog(name, args, guard_env(guard))
    else:  # a backend of its own (a fresh Azurite: the emulator slows as it fills)
        with open_backend(name) as backend:
            run = bench_rules if phase == "rules" else bench_llm
            result = run({**backend.server_env, **guard_env(guard)}, args)
    result["guard"] = guard
    result["phase_s"] = round(time.time() - started, 1)
    # the machine may be shared: the 1-minute load average before and after
    result["loadavg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.replay",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", choices=("local", "azurite", "all"), default="all")
    parser.add_argument("--snapshots", type=int, default=200, help="rules, steady run")
    parser.add_argument("--users", type=int, default=20, help="users the snapshots spread over")
    parser.add_argument("--calibrate", type=int, default=100, help="rules burst for capacity")
    parser.add_argument("--rate", type=float, default=0.0, help="rules uploads/s (0: half cap.)")
    parser.add_argument("--llm-snapshots", type=int, default=30)
    parser.add_argument("--llm-delay", type=float, default=2.0, help="fake model s per call")
    parser.add_argument("--llm-rate", type=float, default=0.0, help="0: 80%% of 1/delay")
    parser.add_argument("--llm-burst", type=int, default=16, help="0: no burst")
    parser.add_argument("--backlog", type=int, default=1000)
    parser.add_argument("--backlog-users", type=int, default=100)
    parser.add_argument(
        "--backlog-runs",
        default="1,1/nopoll,2/nopoll",
        help="backlog runs: N funchost processes each, /nopoll: blob trigger poller off",
    )
    parser.add_argument(
        "--phases", default="rules,llm,backlog", help="comma-separated subset of the phases"
    )
    parser.add_argument(
        "--guard",
        choices=("on", "off", "both"),
        default="on",
        help="the starter's poisoning guard: as shipped, without guard_rules, or each",
    )
    parser.add_argument("--write-docs", action="store_true", help="write docs/performance.md")
    parser.add_argument(
        "--from-results", type=Path, help="measure nothing: write the docs from this raw JSON"
    )
    args = parser.parse_args(argv)
    args.phases = set(args.phases.split(","))
    args.backlog_runs = [n for n in args.backlog_runs.split(",") if n]
    args.guards = ["on", "off"] if args.guard == "both" else [args.guard]
    return args


def git_commit() -> str | None:
    """HEAD when the run started (others may commit while it runs)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        )
    except OSError:
        return None
    return done.stdout.strip() or None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_results:
        saved = json.loads(args.from_results.read_text())
        print(f"wrote {replay_report.write_markdown(saved, REPO / 'docs' / 'performance.md')}")
        return 0
    names = ["local", "azurite"] if args.backend == "all" else [args.backend]
    started = datetime.now(UTC)
    settings = {k: v for k, v in vars(args).items() if k not in ("write_docs", "from_results")}
    settings["phases"] = sorted(args.phases)
    results: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python -m bench.replay", *(argv or sys.argv[1:])]),
        "settings": settings,
        "run_id": uuid.uuid4().hex[:8],
        "commit": git_commit(),
        "storage_calls": storage_calls(
            REPO / "profiles" if args.guards[0] == "on" else unguarded_profiles()
        ),
    }
    try:
        results["backends"] = [bench_backend(name, args) for name in names]
    finally:
        clean_up()
    results["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"replay-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    if args.write_docs:
        print(f"wrote {replay_report.write_markdown(results, REPO / 'docs' / 'performance.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
