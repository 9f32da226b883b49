"""Fault injection for compaction and freshness: the process dies before each storage
write the job makes (idempotency claims, the event digest, audit records, the
documents, the completions), then the service restarts and the job runs again. Every
run must end as a run without a crash does: the same content, one compaction change and
one freshness change in the history, and exactly one event digest pointing back at the
compaction's base."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import user_prefix
from tests.api.compacting import DYNAMIC, PROJECT, PROOF, content, history, notes, project, put
from tests.faults.test_crash_points import SimulatedCrash, start

OLD = notes(33)
STALE = {**PROOF, "fact": "Lives in Bergen.", "last_verified_at": "2024-01-01T00:00:00Z"}


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    bootstrap.install(None)


def seed(data: Path) -> None:
    services = start(data)
    put(services, PROJECT, project(OLD))
    dynamic = {"preferences": [], "durable_facts": [STALE], "pending_confirmations": []}
    put(services, DYNAMIC, dynamic)


def run(services: Services) -> None:
    for ref in (PROJECT, DYNAMIC):
        services.compaction.compact(ref.tenant_id, ref.user_id, ref.namespace, ref.path)


def outcome(services: Services) -> dict[str, object]:
    events = [
        json.loads(services.blobs.read(name).data)
        for name in services.blobs.list_names(user_prefix("t1", "u1") + "events/")
    ]
    reasons = [r["reason"] for ref in (PROJECT, DYNAMIC) for r in history(services, ref)]
    compaction = next(r for r in history(services, PROJECT) if r["reason"] == "compaction")
    return {
        "notes": content(services, PROJECT)["recent_notes"],
        "facts": content(services, DYNAMIC),
        "reasons": sorted(reasons),
        "event_bases": [e["evidence"]["base_change_id"] for e in events],
        "base": compaction["evidence"]["base_change_id"],
    }


def mutations(data: Path) -> int:
    seed(data)
    services = start(data, crash_before=10**6)
    run(services)
    return services.blobs.mutations  # type: ignore[attr-defined, no-any-return]


def test_without_a_crash(tmp_path: Path) -> None:
    seed(tmp_path)
    run(start(tmp_path))
    found = outcome(start(tmp_path))
    assert found["notes"] == OLD[3:] and found["event_bases"] == [found["base"]]


@pytest.mark.slow
def test_a_crash_before_any_write_then_a_rerun_ends_as_without_one(tmp_path: Path) -> None:
    total = mutations(tmp_path / "count")
    assert total >= 10
    for point in range(1, total + 1):
        data = tmp_path / f"crash-{point}"
        seed(data)
        with pytest.raises(SimulatedCrash):
            run(start(data, crash_before=point))
        run(start(data))
        found = outcome(start(data))
        assert found["notes"] == OLD[3:], point
        assert found["facts"]["durable_facts"] == [], point  # type: ignore[index]
        assert found["reasons"].count("compaction") == 1, point  # type: ignore[attr-defined]
        assert found["reasons"].count("freshness_downgrade") == 1, point  # type: ignore[attr-defined]
        assert found["event_bases"] == [found["base"]], point
