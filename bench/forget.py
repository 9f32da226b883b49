"""Forget benchmark (issue 11, item 8): a user with N events (100k by default) on the
embedded backend, then the forget job, invoked as the queue trigger would be until done.

The events are written straight through the adapters (blob + index entry, fsync off), as
the event service stores them, plus another user's events that must survive. Reported:
the forget's wall and CPU time (the CPU time of this process, steadier than the wall
time on a shared machine), deletions per second (blobs and index entries), invocations,
and the process's peak RSS before and after the forget (the job holds one listing page
of names at a time, never the user's whole listing). During the forget a thread samples
``/proc/self/status`` every 20 ms and reports the highest anonymous RSS (heap: Python
objects, SQLite's page cache) apart from the highest file-backed RSS (mapped files: the
SQLite index under ``mmap_size``, shared libraries), both with their values when the
forget started; ``--tracemalloc`` adds the peak of Python's own allocations during it.

    python -m bench.forget [--events 100000] [--page 1000] [--tracemalloc] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import threading
import time
import tracemalloc
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.callers import Caller
from memnet.domain.layout import user_prefix
from memnet.ports import Condition
from memnet.services.events.records import EventRecord, event_name
from memnet.services.forget.ledger import FORGET_QUEUE
from memnet.settings import Settings

REPO = Path(__file__).resolve().parent.parent
PRIVACY = Caller("bench-privacy", frozenset({"*"}), frozenset({"*"}), frozenset({"forget"}))
BATCH = 500


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def status_mib() -> dict[str, float]:
    """RssAnon and RssFile from ``/proc/self/status`` in MiB (empty off Linux)."""
    try:
        lines = Path("/proc/self/status").read_text().splitlines()
    except OSError:
        return {}
    fields = (line.split() for line in lines if line.startswith(("RssAnon:", "RssFile:")))
    return {parts[0].rstrip(":"): int(parts[1]) / 1024 for parts in fields}


class RssSampler:
    """Highest RssAnon and RssFile seen while running (sampled every ``interval``)."""

    def __init__(self, interval: float = 0.02) -> None:
        self.start = status_mib()
        self.peak = dict(self.start)
        self._interval, self._stop = interval, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._update()

    def _sample(self) -> None:
        while not self._stop.wait(self._interval):
            self._update()

    def _update(self) -> None:
        for key, value in status_mib().items():
            self.peak[key] = max(self.peak.get(key, 0.0), value)

    def report(self) -> dict[str, float]:
        out = {f"{k.lower()}_mib_at_start": round(v, 1) for k, v in self.start.items()}
        out.update({f"{k.lower()}_mib_peak": round(v, 1) for k, v in self.peak.items()})
        return out


def record(tenant: str, user: str, n: int) -> dict[str, Any]:
    return {
        "event_id": f"evt_{n:012d}",
        "tenant_id": tenant,
        "user_id": user,
        "service_id": "bench",
        "timestamp": "2026-11-24T10:00:00Z",
        "source_type": "chat",
        "digest": f"Bench event {n} about topic {n % 97}.",
        "keywords": ["bench", f"topic{n % 97}"],
        "project_ids": [],
        "evidence": {"message_ids": [f"m{n}"]},
    }


def write_events(services: Services, tenant: str, user: str, count: int) -> None:
    for start in range(0, count, BATCH):
        records = [record(tenant, user, n) for n in range(start, min(count, start + BATCH))]
        for item in records:
            name = event_name(tenant, user, item["event_id"])
            data = json.dumps(item, separators=(",", ":")).encode()
            services.blobs.write(name, data, Condition.create_only())
        services.index.upsert([EventRecord.from_json(item).indexed() for item in records])


def forget(services: Services, tenant: str, user: str) -> dict[str, Any]:
    services.forget.request(PRIVACY, tenant, user)
    invocations, started, cpu = 0, time.perf_counter(), time.process_time()
    while messages := services.queue.receive(FORGET_QUEUE, max_messages=1):
        for message in messages:
            services.forget.run(json.loads(message.body))
            services.queue.delete(FORGET_QUEUE, message)
            invocations += 1
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    status = services.forget.status(PRIVACY, tenant, user)
    assert status["status"] == "done", status
    return {"seconds": elapsed, "cpu_seconds": cpu, "invocations": invocations, "status": status}


def run(events: int, page: int, job_seconds: int, trace: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memnet-bench-forget-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            profiles_dir=REPO / "profiles",
            callers_file=REPO / "callers.dev.json",
            local_fsync=False,
        )
        settings = replace(
            settings, forget_grace_seconds=0, sweep_page_size=page, job_max_seconds=job_seconds
        )
        services = bootstrap.build(settings)
        seeded = time.perf_counter()
        write_events(services, "t1", "u1", events)
        write_events(services, "t1", "u2", 1000)
        seed_seconds = time.perf_counter() - seeded
        rss_before = peak_rss_mib()
        if trace:
            tracemalloc.start()
        with RssSampler() as sampler:
            outcome = forget(services, "t1", "u1")
        heap_peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
        tracemalloc.stop()
        left = sum(1 for _ in services.blobs.list_names(user_prefix("t1", "u1")))
        survivors = sum(1 for _ in services.blobs.list_names(user_prefix("t1", "u2")))
    deleted = sum(outcome["status"]["deleted"].values())
    return {
        "benchmark": "forget",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "events": events,
        "page_size": page,
        "job_max_seconds": job_seconds,
        "seed_seconds": round(seed_seconds, 1),
        "forget_seconds": round(outcome["seconds"], 1),
        "forget_cpu_seconds": round(outcome["cpu_seconds"], 1),
        "invocations": outcome["invocations"],
        "deleted": outcome["status"]["deleted"],
        "deletions_per_second": round(deleted / outcome["seconds"]),
        "left_under_prefix": left,
        "other_user_events": survivors,
        "peak_rss_mib_before_forget": round(rss_before, 1),
        "peak_rss_mib_after_forget": round(peak_rss_mib(), 1),
        "during_forget": sampler.report(),
        "python_heap_peak_mib": None if heap_peak is None else round(heap_peak, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=1000)
    parser.add_argument("--job-seconds", type=int, default=240)
    parser.add_argument(
        "--tracemalloc", action="store_true", help="also the Python heap's peak (slower)"
    )
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    result = run(args.events, args.page, args.job_seconds, args.tracemalloc)
    print(json.dumps(result, indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"forget-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
