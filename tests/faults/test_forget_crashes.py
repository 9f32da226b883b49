"""Fault injection for forget: the process dies before each storage write or delete the
forget makes (job creation, each batch's record, each delete, each manifest, each count,
the receipt, the log, the end), then the service restarts and the job runs on. Every run
must end with nothing left under the user's prefix, no index entry, and a receipt whose
counts equal those of a run without a crash (every name counted exactly once)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.bootstrap import Services
from memnet.domain.layout import forget_conversation_job_name, forget_job_name, receipt_name
from memnet.ports import BlobNotFound
from tests.api.forgetting import drain_forget, index_ids, names, seed
from tests.api.test_forget_conversation import PROJECT
from tests.api.test_forget_conversation import seed as seed_conversations
from tests.clients import DirectClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, doc_url, make_settings
from tests.faults.test_crash_points import CrashingBlobStore, SimulatedCrash

USER = "/v1/tenants/t1/users/u1"


def start(data: Path, crash_before: int = 0) -> Services:
    settings = replace(
        make_settings(data),
        forget_grace_seconds=0,
        sweep_page_size=3,
        idempotency_lease_seconds=0,  # a crashed write's key is taken over at once
        local_fsync=False,  # a simulated crash is not a power loss (test_crash_points.start)
    )
    store = FileBlobStore(data, settings.blob_container, fsync=False)
    blobs = CrashingBlobStore(store, crash_before) if crash_before else store
    services = bootstrap.build(settings, blobs=blobs)
    bootstrap.install(services)
    return services


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    bootstrap.install(None)


def forget(services: Services) -> None:
    assert DirectClient(PRIVACY_KEY).request("DELETE", USER).status == 202
    drain_forget(services)


def resume(services: Services) -> None:
    """After a restart: ask again if the job is missing or was never queued; else deliver
    its current message (the lost one would come back after its visibility timeout)."""
    try:
        state = json.loads(services.blobs.read(forget_job_name("t1", "u1")).data)
    except BlobNotFound:  # not created before the crash
        state = None
    if state is None or not state.get("sent"):
        forget(services)
        return
    if state["status"] != "done":
        keys = ("kind", "tenant_id", "user_id", "forget_id", "run")
        services.forget.run({k: state[k] for k in keys})
    drain_forget(services)


def outcome(services: Services) -> dict[str, int]:
    state = json.loads(services.blobs.read(forget_job_name("t1", "u1")).data)
    assert state["status"] == "done"
    receipt = json.loads(services.blobs.read(receipt_name("t1", state["receipt_id"])).data)
    assert names(services) == [] and index_ids(services) == []
    assert receipt["verification"]["blobs_remaining"] == 0
    manifests = services.blobs.list_names(receipt["manifests"]["prefix"])
    hashed = sum(len(json.loads(services.blobs.read(n).data)["name_sha256"]) for n in manifests)
    assert hashed == receipt["total_deleted"]  # one manifest entry per deleted name
    return {kind: v["count"] for kind, v in receipt["deleted"].items()}


def seeded(data: Path) -> None:
    seed(DirectClient(AGENT_KEY), start(data))


def test_without_a_crash(tmp_path: Path) -> None:
    seeded(tmp_path)
    services = start(tmp_path)
    forget(services)
    assert outcome(services)["events"] == 4


@pytest.mark.slow
def test_a_crash_before_any_write_of_the_forget_then_a_rerun_counts_exactly(tmp_path: Path):
    seeded(tmp_path / "baseline")
    baseline = start(tmp_path / "baseline")
    forget(baseline)
    expected = outcome(baseline)
    crashes = 0
    for point in range(1, 200):
        data = tmp_path / f"crash-{point}"
        seeded(data)
        try:
            forget(start(data, crash_before=point))
        except SimulatedCrash:
            crashes += 1
        else:
            break  # past the last write: every crash point was visited
        services = start(data)
        resume(services)
        assert outcome(services) == expected, f"crash before write {point}"
    assert crashes > 40


# -- forget one conversation ------------------------------------------------------------------

CONVERSATION = USER + "/conversations/conv-1"


def forget_conversation(services: Services) -> None:
    assert DirectClient(PRIVACY_KEY).request("DELETE", CONVERSATION).status == 202
    drain_forget(services)


def resume_conversation(services: Services) -> None:
    name = forget_conversation_job_name("t1", "u1", "conv-1")
    try:
        state = json.loads(services.blobs.read(name).data)
    except BlobNotFound:  # not created before the crash
        forget_conversation(services)
        return
    if state["status"] == "running":
        keys = ("kind", "tenant_id", "user_id", "conversation_id", "forget_id", "run")
        services.forget_conversation.run({k: state[k] for k in keys})
    drain_forget(services)


def conversation_outcome(services: Services) -> dict[str, object]:
    name = forget_conversation_job_name("t1", "u1", "conv-1")
    state = json.loads(services.blobs.read(name).data)
    assert state["status"] == "done"
    receipt = json.loads(services.blobs.read(receipt_name("t1", state["receipt_id"])).data)
    agent = DirectClient(AGENT_KEY)
    documents = {
        url: agent.request("GET", url).data["document"]["content"] for url in (doc_url(), PROJECT)
    }
    history = DirectClient(ADMIN_KEY).request("GET", PROJECT + ":history").data["changes"]
    return {
        "deleted": {kind: v["count"] for kind, v in receipt["deleted"].items()},
        "retracted": [
            (r["path"], r["removed"], r["kept_without_pointer"]) for r in receipt["retracted"]
        ],
        "documents": documents,
        "reasons": [c["reason"] for c in history],
        "left": sorted(n.rsplit("/", 3)[-3] for n in names(services) if "/conv-" in n),
    }


@pytest.mark.slow
def test_forget_conversation_survives_a_crash_at_every_write(tmp_path: Path):
    start(tmp_path / "baseline")
    seed_conversations(DirectClient(AGENT_KEY))
    baseline = start(tmp_path / "baseline")
    forget_conversation(baseline)
    expected = conversation_outcome(baseline)
    assert expected["reasons"] == ["forget_conversation", "live_update"]
    crashes = 0
    for point in range(1, 200):
        data = tmp_path / f"crash-{point}"
        start(data)
        seed_conversations(DirectClient(AGENT_KEY))
        try:
            forget_conversation(start(data, crash_before=point))
        except SimulatedCrash:
            crashes += 1
        else:
            break
        services = start(data)
        resume_conversation(services)
        assert conversation_outcome(services) == expected, f"crash before write {point}"
    assert crashes > 20
