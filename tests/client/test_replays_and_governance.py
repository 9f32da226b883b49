"""Snapshots, replay status and its admin routes, forgetting, receipts and legal holds
through the client against the real server (queues worked off here, as triggers would)."""

from __future__ import annotations

import pytest
from memnet_client import Conflict, Forbidden, MemnetClient, NotFound

from memnet.bootstrap import Services
from tests.api.forgetting import drain_forget

MESSAGES = [
    {
        "id": "m1",
        "role": "user",
        "text": "Remember that I work from Lisbon.",
        "timestamp": "2026-11-24T10:00:00Z",
    },
]


def test_put_snapshot_queues_a_replay_and_again_is_replayed(memnet: MemnetClient):
    replay = memnet.put_snapshot("c1", "s1", MESSAGES, metadata={"channel": "web"})
    assert replay.status == "queued" and replay.replay_id.startswith("rpl_")
    again = memnet.put_snapshot("c1", "s1", MESSAGES, metadata={"channel": "web"})
    assert again.replayed and again.replay_id == replay.replay_id
    assert memnet.get_replay("c1", "s1").status == "queued"
    other = [{**MESSAGES[0], "text": "Something else."}]
    with pytest.raises(Conflict) as caught:
        memnet.put_snapshot("c1", "s1", other)
    assert caught.value.code == "SNAPSHOT_EXISTS"


def test_snapshot_reads_back_for_the_snapshots_role_only(memnet: MemnetClient, admin: MemnetClient):
    memnet.put_snapshot("c1", "s1", MESSAGES)
    assert admin.get_snapshot("c1", "s1")["messages"][0]["text"] == MESSAGES[0]["text"]
    with pytest.raises(Forbidden):
        memnet.get_snapshot("c1", "s1")


def test_replay_admin_routes(memnet: MemnetClient, admin: MemnetClient):
    memnet.put_snapshot("c1", "s1", MESSAGES)
    assert admin.list_unresolved_replays(limit=10) == []
    with pytest.raises(NotFound) as missing:
        admin.discard_replay_patch("c1", "s1", 0)
    assert missing.value.code == "UNRESOLVED_NOT_FOUND"
    with pytest.raises(NotFound):
        admin.retry_replay_patch("c1", "s1", 0)
    with pytest.raises(Conflict) as not_failed:
        admin.redrive_replay("c1", "s1")
    assert not_failed.value.code == "REPLAY_NOT_FAILED"


def test_forget_a_user_through_to_its_receipt(
    memnet: MemnetClient, privacy: MemnetClient, services: Services
):
    memnet.write_event("to be forgotten", source_type="chat")
    job = privacy.forget_user()
    assert job.status == "running" and job.forget_id
    with pytest.raises(Conflict) as refused:
        memnet.write_event("too late", source_type="chat")
    assert refused.value.code == "FORGET_IN_PROGRESS" and refused.value.retry_after
    drain_forget(services)
    done = privacy.get_forget_status()
    assert done.status == "done" and done.receipt_id
    receipt = privacy.get_receipt(done.receipt_id)
    assert receipt["receipt_id"] == done.receipt_id and "to be forgotten" not in str(receipt)


def test_forget_a_conversation(memnet: MemnetClient, privacy: MemnetClient, services: Services):
    memnet.put_snapshot("c1", "s1", MESSAGES)
    job = privacy.forget_conversation("c1")
    assert job.forget_id
    drain_forget(services)
    assert privacy.get_forget_conversation_status("c1").status == "done"
    with pytest.raises(NotFound):
        privacy.get_forget_status()


def test_legal_holds_set_list_clear(admin: MemnetClient):
    tenant_hold = admin.set_legal_hold("litigation 42")
    user_hold = admin.set_legal_hold("audit", kinds=["events"], user_id="u1")
    holds = admin.list_legal_holds()
    assert holds["tenant"]["reason"] == tenant_hold["reason"] == "litigation 42"
    assert holds["users"]["u1"]["kinds"] == user_hold["kinds"] == ["events"]
    admin.clear_legal_hold(user_id="u1")
    admin.clear_legal_hold()
    assert admin.list_legal_holds()["tenant"] is None
    with pytest.raises(NotFound) as caught:
        admin.clear_legal_hold()
    assert caught.value.code == "HOLD_NOT_FOUND"
