"""Forget a user (spec 17) on both backends: the job removes every kind, verification
finds nothing, the receipt tells what and how much (never content), writes are refused
while it runs and for the quiet period after, a write racing the start is caught, and
only the forget role may ask."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.api.workers import handle_forget_poison
from memnet.bootstrap import Services
from memnet.domain.errors import Conflict
from memnet.domain.layout import SnapshotRef, forget_job_name, governance_prefix, user_prefix
from memnet.domain.timestamps import parse_timestamp
from memnet.ports import Condition
from memnet.services.forget.job import ZERO_CHAIN, chained
from memnet.services.forget.ledger import FORGET_QUEUE
from memnet.services.replay.writes import REPLAY_QUEUE
from tests.api.forgetting import (
    build,
    clock_of,
    drain_forget,
    index_ids,
    names,
    seed,
    snapshot_url,
)
from tests.api.test_documents import create
from tests.api.test_events import event, post
from tests.canaries import canary, where
from tests.clients import ApiClient, DirectClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, STORAGE_BACKENDS, doc_url

USER = "/v1/tenants/t1/users/u1"


@pytest.fixture(params=STORAGE_BACKENDS)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield build(request, tmp_path / "data")
    bootstrap.install(None)


@pytest.fixture
def agent(services: Services) -> ApiClient:
    return DirectClient(AGENT_KEY)


def forget(client: ApiClient, services: Services, url: str = USER) -> dict:
    reply = client.as_key(PRIVACY_KEY).request("DELETE", url)
    assert reply.status == 202, reply.data
    drain_forget(services)
    return reply.data


def test_a_receipt_says_until_when_the_blob_service_keeps_the_deleted_blobs(
    services: Services,
):
    """With the storage account's soft delete (MEMNET_BLOB_SOFT_DELETE_DAYS), a forgotten
    user's blobs stay recoverable by its administrators: the receipt says until when."""
    bootstrap.install(bootstrap.build(replace(services.settings, blob_soft_delete_days=7)))
    client = DirectClient(AGENT_KEY)
    seed(client, bootstrap.services())
    status = forget(client, bootstrap.services())
    receipt = client.as_key(PRIVACY_KEY).request("GET", f"{USER}/forget").data
    assert receipt["forget_id"] == status["forget_id"] and receipt["status"] == "done"
    verification = (
        client.as_key(PRIVACY_KEY).request("GET", receipt["receipt_url"]).data["verification"]
    )
    kept_until = parse_timestamp(verification["recoverable_until"])
    assert kept_until - parse_timestamp(verification["verified_at"]) == timedelta(days=7)


def test_forget_removes_every_kind_and_leaves_a_receipt(client: ApiClient, services: Services):
    agent = client.as_key(AGENT_KEY)
    seed(agent, services)
    seed(agent, services, user="u2")
    seed(agent, services, tenant="t2")
    before = names(services)
    accepted = forget(client, services)
    assert accepted["status"] == "running" and accepted["status_url"] == USER + "/forget"
    assert names(services) == [] and index_ids(services) == []
    assert len(names(services, user="u2")) == len(before)
    assert len(names(services, tenant="t2")) == len(before)
    assert len(index_ids(services, user="u2")) == 4

    status = client.as_key(PRIVACY_KEY).request("GET", USER + "/forget").data
    assert status["status"] == "done" and status["forget_id"] == accepted["forget_id"]
    receipt = client.as_key(PRIVACY_KEY).request("GET", status["receipt_url"]).data
    assert receipt["verification"]["blobs_remaining"] == 0
    assert receipt["verification"]["index_entries_remaining"] == 0
    assert receipt["verification"]["recoverable_until"] is None  # a deleted file is gone
    assert receipt["requested_by"] == "dev-privacy" and receipt["user_id"] == "u1"
    counts = {kind: v["count"] for kind, v in receipt["deleted"].items()}
    assert counts["index"] == 4 and counts["events"] == 4 and counts["snapshots"] == 1
    assert counts["replays"] == 1 and counts["documents"] == 1 and counts["audit"] == 1
    assert counts["audit_horizon"] == 1 and counts["other"] == 1 and counts["idempotency"] >= 5
    assert receipt["total_deleted"] == len(before) + 4
    assert receipt["started_at"] <= receipt["completed_at"]
    assert receipt["kept"] == {} and receipt["late_deleted"] == 0


def test_the_receipt_holds_hashes_of_names_and_never_content(services: Services, agent):
    seed(agent, services)
    before = names(services)
    forget(agent, services)
    job = json.loads(services.blobs.read(forget_job_name("t1", "u1")).data)
    receipt = DirectClient(PRIVACY_KEY).request(
        "GET", f"/v1/tenants/t1/receipts/{job['receipt_id']}"
    )
    text = receipt.body.decode()
    assert "Event 0" not in text and "Be brief" not in text and "Hello there" not in text
    assert not any(name in text for name in before)
    # Every deleted name's hash is in a manifest; the chains follow from them.
    manifests = list(services.blobs.list_names(receipt.data["manifests"]["prefix"]))
    assert len(manifests) == receipt.data["manifests"]["count"]
    hashes: dict[str, list[str]] = {}
    for name in manifests:
        manifest = json.loads(services.blobs.read(name).data)
        hashes.setdefault(manifest["kind"], []).extend(manifest["name_sha256"])
    every = {h for kind in hashes.values() for h in kind}
    assert {hashlib.sha256(name.encode()).hexdigest() for name in before} <= every
    events = sorted(n for n in before if "/events/" in n)
    assert receipt.data["deleted"]["events"]["names_chain_sha256"] == chained(ZERO_CHAIN, events)


def test_writes_while_the_job_runs_are_refused_and_nothing_is_recreated(services, agent):
    seed(agent, services)
    assert DirectClient(PRIVACY_KEY).request("DELETE", USER).status == 202
    refused = [
        create(agent, doc_url(), key="late-doc"),
        post(agent, event(), "late-event", USER),
        agent.request("PUT", snapshot_url("t1", "u1", "conv-2", "s"), {"messages": []}),
    ]
    for reply in refused:
        assert reply.status == 409 and reply.error_code == "FORGET_IN_PROGRESS", reply.data
        assert int(reply.headers["retry-after"]) >= 1
    drain_forget(services)
    assert names(services) == []
    quiet = create(agent, doc_url(), key="quiet-doc")
    assert quiet.status == 409 and quiet.error_code == "USER_RECENTLY_FORGOTTEN"
    assert 3500 <= int(quiet.headers["retry-after"]) <= 3600
    clock_of(services).advance(3601)
    assert create(agent, doc_url(), key="after-quiet").status == 201


def test_a_queued_replay_of_the_user_writes_nothing_while_the_job_runs(services, agent):
    seed(agent, services)  # the snapshot's replay message is still queued
    assert DirectClient(PRIVACY_KEY).request("DELETE", USER).status == 202
    snapshot = SnapshotRef("t1", "u1", "conv-1", "snap-1")
    with pytest.raises(Conflict) as refused:  # the snapshot is still there: refused
        services.replay.run(snapshot)
    assert refused.value.code == "FORGET_IN_PROGRESS"
    drain_forget(services)
    messages = services.queue.receive(REPLAY_QUEUE, max_messages=16)
    assert messages
    for message in messages:  # the snapshot is gone: dropped, no record is recreated
        assert services.replay.handle_message(message.body) is None
    assert names(services) == []


def test_a_second_request_answers_the_same_job_and_a_later_one_a_new_job(services, agent):
    privacy = DirectClient(PRIVACY_KEY)
    first = privacy.request("DELETE", USER).data
    assert privacy.request("DELETE", USER).data["forget_id"] == first["forget_id"]
    drain_forget(services)
    again = privacy.request("DELETE", USER).data
    assert again["forget_id"] != first["forget_id"] and again["status"] == "running"
    drain_forget(services)
    assert privacy.request("GET", USER + "/forget").data["status"] == "done"


@pytest.fixture(params=STORAGE_BACKENDS)
def graceful(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    """Services whose forget verifies a minute after the start (the default grace)."""
    yield build(request, tmp_path / "data", forget_grace_seconds=60)
    bootstrap.install(None)


def test_a_write_racing_the_start_is_caught_by_verification(graceful: Services):
    services, privacy = graceful, DirectClient(PRIVACY_KEY)
    seed(DirectClient(AGENT_KEY), services)
    assert privacy.request("DELETE", USER).status == 202
    drain_forget(services)  # deletes everything, then waits out the grace period
    # A write that passed the guard just before the job existed lands only now.
    late = user_prefix("t1", "u1") + "events/evt_late.json"
    services.blobs.write(late, b"{}", Condition.create_only())
    status = privacy.request("GET", USER + "/forget").data
    assert status["status"] == "running" and status["phase"] == "verifying"
    clock_of(services).advance(61)
    job = json.loads(services.blobs.read(forget_job_name("t1", "u1")).data)
    message = {k: job[k] for k in ("kind", "tenant_id", "user_id", "forget_id", "run")}
    services.forget.run(message)  # the delayed message, delivered now
    assert names(services) == []
    done = privacy.request("GET", USER + "/forget").data
    assert done["status"] == "done" and done["late"] == 1


def test_only_the_forget_role_may_forget_and_admins_may_read_status(services, agent):
    assert agent.request("DELETE", USER).error_code == "ROLE_FORBIDDEN"
    assert agent.as_key(ADMIN_KEY).request("DELETE", USER).status == 403
    assert agent.as_key(None).request("DELETE", USER).status == 401
    assert agent.request("GET", USER + "/forget").status == 403
    assert agent.as_key(ADMIN_KEY).request("GET", USER + "/forget").error_code == (
        "FORGET_NOT_FOUND"
    )
    privacy = agent.as_key(PRIVACY_KEY)
    assert privacy.request("GET", "/v1/tenants/t1/receipts/rcpt_none").status == 404
    assert agent.request("GET", "/v1/tenants/t1/receipts/rcpt_none").status == 403


@pytest.mark.parametrize(
    "url",
    ["/v1/tenants/t1/users/_bad", "/v1/tenants/t%20x/users/u1", "/v1/tenants/t1/users/.."],
)
def test_bad_ids_are_400(services, url):
    reply = DirectClient(PRIVACY_KEY).request("DELETE", url)
    assert reply.status in (400, 404) and reply.status != 500
    if reply.status == 400:
        assert reply.error_code == "INVALID_IDENTIFIER"


def test_bad_receipt_id_is_400(services):
    reply = DirectClient(PRIVACY_KEY).request("GET", "/v1/tenants/t1/receipts/_x")
    assert reply.status == 400 and reply.error_code == "INVALID_IDENTIFIER"


def test_governance_log_records_the_request_and_the_completion(services, agent):
    forget(agent, services)
    prefix = governance_prefix("t1") + "log/"
    actions = [json.loads(services.blobs.read(n).data) for n in services.blobs.list_names(prefix)]
    by_action = {a["action"]: a for a in actions}  # one clock instant: ids tie on time
    assert sorted(by_action) == ["forget_completed", "forget_requested"] and len(actions) == 2
    assert by_action["forget_requested"]["actor"] == "dev-privacy"
    assert by_action["forget_completed"]["user_id"] == "u1"


def test_a_message_that_failed_every_delivery_queues_the_job_again(services, agent):
    assert DirectClient(PRIVACY_KEY).request("DELETE", USER).status == 202
    (message,) = services.queue.receive(FORGET_QUEUE, max_messages=16)
    services.queue.delete(FORGET_QUEUE, message)
    handle_forget_poison(bootstrap.services(), message.body)  # queued again, five minutes later
    assert services.queue.count(FORGET_QUEUE) == 1
    assert services.forget.run(json.loads(message.body)) is None  # its token is stale now
    job = json.loads(services.blobs.read(forget_job_name("t1", "u1")).data)
    keys = ("kind", "tenant_id", "user_id", "forget_id", "run")
    assert services.forget.run({k: job[k] for k in keys}).status == "done"


# -- what is left on disk (docs/forgetting.md, "What is left on disk") -------------------------


@pytest.fixture(params=["local"])
def on_files(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    """The embedded backend, verifying a minute after the start."""
    yield build(request, tmp_path / "data", forget_grace_seconds=60)
    bootstrap.install(None)


def killed_write(directory: Path, value: str) -> Path:
    """The temp file a write killed before its rename leaves beside the blob: the whole
    record it was writing, never listed."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f".memnet-tmp-{secrets.token_hex(8)}"
    path.write_text(json.dumps({"response": {"document": {"content": {"note": value}}}}))
    return path


def test_forget_removes_what_killed_writes_left_and_verification_counts_every_byte(
    on_files: Services,
):
    services, privacy, data = on_files, DirectClient(PRIVACY_KEY), on_files.settings.data_dir
    seed(DirectClient(AGENT_KEY), services)
    seed(DirectClient(AGENT_KEY), services, user="u2")
    users = data / "memnet" / "tenants" / "t1" / "users"
    mine, theirs, late = canary("mine"), canary("theirs"), canary("late")
    killed_write(users / "u1" / "idempotency", mine)
    killed_write(users / "u1" / "audit", mine)
    other = killed_write(users / "u2" / "audit", theirs)
    assert set(where(data, [mine, theirs])) == {mine, theirs}
    assert privacy.request("DELETE", USER).status == 202
    drain_forget(services)  # deletes everything, then waits out the grace period
    assert where(data, [mine]) == {}
    killed_write(users / "u1" / "events", late)  # a write killed while the job ran
    clock_of(services).advance(61)
    job = json.loads(services.blobs.read(forget_job_name("t1", "u1")).data)
    services.forget.run({k: job[k] for k in ("kind", "tenant_id", "user_id", "forget_id", "run")})

    status = privacy.request("GET", USER + "/forget").data
    assert status["status"] == "done" and status["verification"]["residue_bytes_remaining"] == 0
    assert where(data, [mine, late]) == {} and not (users / "u1").exists()
    assert other.exists() and set(where(data, [theirs])) == {theirs}
