"""Fault injection for the replay worker: the process dies before each of the storage
writes a replay makes (claim, plan, event, each patch's idempotency claim, audit record
and document, each status update), then the message is delivered again. Every run must
end with each digest stored once, each patch applied exactly once, and a status that
tells the truth."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.audit_records import fold
from memnet.domain.callers import Caller
from memnet.domain.layout import DocumentRef, SnapshotRef
from memnet.domain.replay_contract import ExtractionRequest
from tests.faults import test_crash_points as crash_points
from tests.faults.test_crash_points import CrashingBlobStore, SimulatedCrash

REF = SnapshotRef("t1", "u1", "c1", "s1")
UPLOADER = Caller(
    "dev-agent", frozenset({"t1"}), frozenset({"project-copilot-v1"}), frozenset({"write"})
)
TRANSCRIPT = {
    "messages": [
        {
            "id": "m1",
            "role": "user",
            "text": "We decided on Postgres.",
            "timestamp": "2026-11-24T10:00:00Z",
        }
    ],
    "project_hint": "alpha",
}


class FixedExtractor:
    name, version = "fixed", "1"

    def extract(self, request: ExtractionRequest) -> Any:
        evidence = {"message_ids": ["m1"]}
        fact = {"fact": "Likes Postgres", "confidence": 0.5, "evidence": evidence}
        return {
            "digests": [{"digest": "Chose Postgres.", "message_ids": ["m1"]}],
            "patches": [
                {
                    "target_binding_id": "project_doc",
                    "target_path": "alpha.json",
                    "ops": [
                        {
                            "op": "add",
                            "path": "/content/recent_notes/-",
                            "value": {"note": "Postgres"},
                        }
                    ],
                    "confidence": 0.9,
                    "evidence": evidence,
                },
                {
                    "target_binding_id": "user_dynamic",
                    "target_path": "user_dynamic.json",
                    "ops": [
                        {
                            "op": "add",
                            "path": "/content/durable_facts/-",
                            "value": {**fact, "last_verified_at": request.now},
                        }
                    ],
                    "confidence": 0.5,
                    "evidence": evidence,
                },
            ],
        }


def start(data: Path, crash_before: int = 0) -> Services:
    return crash_points.start(data, crash_before, FixedExtractor())


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    bootstrap.install(None)


def message() -> str:
    return json.dumps({"kind": "replay", **REF.as_json()})


def uploaded(data: Path) -> None:
    services = start(data)
    services.snapshots.upload(UPLOADER, REF, TRANSCRIPT)


def worker_mutations(tmp_path: Path) -> int:
    data = tmp_path / "count"
    uploaded(data)
    services = start(data, crash_before=10_000)
    services.replay.handle_message(message())
    assert isinstance(services.blobs, CrashingBlobStore)
    return services.blobs.mutations


def check_outcome(services: Services) -> None:
    record = services.replay.records.load(REF)
    assert record is not None
    assert record.status == "applied", record
    assert len(record.events) == 1 and len(record.changes) == 2
    events = list(services.blobs.list_names("tenants/t1/users/u1/events/"))
    assert len(events) == 1
    for namespace, path in (("projects", "alpha.json"), ("user", "user_dynamic.json")):
        name = f"tenants/t1/users/u1/documents/{namespace}/{path}"
        document = json.loads(services.blobs.read(name).data)
        ref = DocumentRef("t1", "u1", namespace, path)
        chain = list(services.audit.chain(ref, document["change_id"]))
        assert len(chain) == 1  # applied exactly once
        assert fold(chain) == document
    notes = json.loads(
        services.blobs.read("tenants/t1/users/u1/documents/projects/alpha.json").data
    )["content"]["recent_notes"]
    assert [n["note"] for n in notes] == ["Postgres"]
    assert notes[0]["evidence"]["snapshot_uri"].startswith("blob://tenants/t1/users/u1/")


def test_a_clean_replay_counts_its_writes(tmp_path: Path):
    assert worker_mutations(tmp_path) >= 12


@pytest.mark.slow
def test_a_crash_before_any_write_then_redelivery_applies_everything_once(tmp_path: Path):
    total = worker_mutations(tmp_path)
    for crash_before in range(1, total + 1):
        data = tmp_path / f"crash-{crash_before}"
        uploaded(data)
        crashing = start(data, crash_before)
        with pytest.raises(SimulatedCrash):
            crashing.replay.handle_message(message())
        again = start(data)
        again.replay.handle_message(message())  # the queue delivers it again
        again.replay.handle_message(message())  # and once more: a no-op
        check_outcome(again)
