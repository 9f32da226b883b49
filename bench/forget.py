"""Forget benchmark (issue 11, item 8): a user with N events (100k by default) on the
embedded backend, then the forget job, invoked as the queue trigger would be until done.

The events are written straight through the adapters (blob + index entry, fsync off), as
the event service stores them, plus another user's events that must survive. Reported:
the forget's wall time, deletions per second (blobs and index entries), invocations,
and the process's peak RSS before and after the forget (bounded: the job holds one batch
of names at a time, never the user's whole listing).

    python -m bench.forget [--events 100000] [--page 1000] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.callers import Caller
from memnet.domain.layout import user_prefix
from memnet.ports import Condition
from memnet.services.event_index import event_name, indexed
from memnet.services.forget_ledger import FORGET_QUEUE
from memnet.settings import Settings

REPO = Path(__file__).resolve().parent.parent
PRIVACY = Caller("bench-privacy", frozenset({"*"}), frozenset({"*"}), frozenset({"forget"}))
BATCH = 500


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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
        services.index.upsert([indexed(item) for item in records])


def forget(services: Services, tenant: str, user: str) -> dict[str, Any]:
    services.forget.request(PRIVACY, tenant, user)
    invocations, started = 0, time.perf_counter()
    while messages := services.queue.receive(FORGET_QUEUE, max_messages=1):
        for message in messages:
            services.forget.run(json.loads(message.body))
            services.queue.delete(FORGET_QUEUE, message)
            invocations += 1
    elapsed = time.perf_counter() - started
    status = services.forget.status(PRIVACY, tenant, user)
    assert status["status"] == "done", status
    return {"seconds": elapsed, "invocations": invocations, "status": status}


def run(events: int, page: int, job_seconds: int) -> dict[str, Any]:
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
        outcome = forget(services, "t1", "u1")
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
        "invocations": outcome["invocations"],
        "deleted": outcome["status"]["deleted"],
        "deletions_per_second": round(deleted / outcome["seconds"]),
        "left_under_prefix": left,
        "other_user_events": survivors,
        "peak_rss_mib_before_forget": round(rss_before, 1),
        "peak_rss_mib_after_forget": round(peak_rss_mib(), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=1000)
    parser.add_argument("--job-seconds", type=int, default=240)
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    args = parser.parse_args()
    result = run(args.events, args.page, args.job_seconds)
    print(json.dumps(result, indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"forget-{stamp}.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
