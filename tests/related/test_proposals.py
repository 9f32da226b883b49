"""Proposal review (issue 15, capability 4; docs/proposals.md) on a2p-v1: agents'
memories become proposals (review_required), the user's app reviews them (approve,
edit, reject), proposals expire after the profile's TTL, nobody approves their own, and
every decision is in the document's history; both backends, both transports."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from memnet.domain.callers import Caller
from memnet.domain.layout import DocumentRef
from tests.clients import ApiClient, Reply
from tests.related.conftest import A2P_USER_KEY, ADMIN_KEY, World
from tests.related.conftest import command as job_command

USER = "/v1/tenants/t1/users/u1"
MEMORIES = f"{USER}/documents/a2p/memories.json"
SEMANTIC = "/content/memories/a2p:semantic/-"
WEEK = 7 * 86400


def memory(n: int, content: str = "Prefers TypeScript for new projects") -> dict[str, Any]:
    return {"id": f"mem_{n}", "content": content, "category": "a2p:professional.preferences"}


def propose(agent: ApiClient, value: dict[str, Any], key: str, etag: str | None = None) -> Reply:
    precondition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    body = {
        "ops": [{"op": "add", "path": SEMANTIC, "value": value}],
        "confidence": 0.95,
        "evidence": {"conversation_id": "c1", "message_ids": ["m1"]},
    }
    return agent.request("PATCH", MEMORIES, body, {**precondition, "Idempotency-Key": key})


def queue(client: ApiClient) -> list[dict[str, Any]]:
    reply = client.request("GET", f"{USER}/proposals")
    assert reply.status == 200, reply.data
    return reply.data["proposals"]


def review(client: ApiClient, proposal_id: str, decision: str, body: Any = None) -> Reply:
    return client.request("POST", f"{USER}/proposals/{proposal_id}/{decision}", body)


def content(client: ApiClient) -> dict[str, Any]:
    return client.request("GET", MEMORIES).data["document"]["content"]


def test_an_agents_memory_waits_for_review_whatever_its_confidence(a2p: ApiClient):
    reply = propose(a2p, memory(1), "p1")
    assert reply.status == 201, reply.data
    assert reply.data["redirected_ops"][0]["reason"] == "review_required"
    assert content(a2p)["memories"]["a2p:semantic"] == []
    (entry,) = queue(a2p)
    assert entry["status"] == "pending" and entry["item"]["candidate"] == memory(1)
    assert entry["item"]["proposed_by"] == "a2p-agent"
    assert entry["expires_at"] > entry["item"]["proposed_at"]
    refused = review(a2p, entry["proposal_id"], "approve")
    assert (refused.status, refused.error_code) == (403, "ROLE_FORBIDDEN")


def test_the_user_approves_and_the_memory_lands_with_the_decision_audited(a2p: ApiClient):
    propose(a2p, memory(1), "p1")
    (entry,) = queue(a2p)
    user = a2p.as_key(A2P_USER_KEY)
    approved = review(user, entry["proposal_id"], "approve")
    assert approved.status == 200, approved.data
    assert approved.data["status"] == "approved" and approved.data["reviewed_by"] == "a2p-user"
    now = content(a2p)
    assert now["memories"]["a2p:semantic"] == [memory(1)] and now["proposals"] == []
    assert queue(a2p) == []
    history = a2p.as_key(A2P_USER_KEY).request("GET", MEMORIES + ":history")
    (change, _) = history.data["changes"]  # the user sees every class; the agent may not
    assert change["actor"] == "a2p-user" and change["reason"] == "proposal_review"
    assert change["origin"]["review"]["status"] == "approved"
    assert change["origin"]["review"]["proposed_by"] == "a2p-agent"


def test_approve_with_edits_writes_the_reviewers_version(a2p: ApiClient):
    propose(a2p, memory(1, "Likes jaz"), "p1")
    (entry,) = queue(a2p)
    edited = memory(1, "Likes jazz")
    user = a2p.as_key(A2P_USER_KEY)
    reply = review(user, entry["proposal_id"], "edit", {"candidate": edited, "note": "typo"})
    assert reply.status == 200 and reply.data["status"] == "edited", reply.data
    assert content(a2p)["memories"]["a2p:semantic"] == [edited]
    assert review(user, entry["proposal_id"], "edit").status == 400  # no candidate
    again = review(user, entry["proposal_id"], "approve")
    assert (again.status, again.data["error"]["details"]["status"]) == (409, "edited")


def test_reject_removes_the_proposal_and_writes_nothing_else(a2p: ApiClient):
    propose(a2p, memory(1), "p1")
    (entry,) = queue(a2p)
    reply = review(a2p.as_key(A2P_USER_KEY), entry["proposal_id"], "reject")
    assert reply.status == 200 and reply.data["status"] == "rejected"
    assert content(a2p) == {
        "memories": {"a2p:episodic": [], "a2p:semantic": [], "a2p:procedural": []},
        "proposals": [],
    }


def test_an_expired_proposal_can_only_be_rejected(a2p: ApiClient, related: World):
    propose(a2p, memory(1), "p1")
    related.clock.advance(WEEK)
    (entry,) = queue(a2p)
    assert entry["status"] == "expired"
    user = a2p.as_key(A2P_USER_KEY)
    late = review(user, entry["proposal_id"], "approve")
    assert (late.status, late.error_code) == (409, "PROPOSAL_EXPIRED")
    assert review(user, entry["proposal_id"], "reject").status == 200


def test_nobody_approves_their_own_proposal(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    own = {
        "candidate": memory(2),
        "target_path": "/memories/a2p:semantic/-",
        "proposed_at": "2026-11-24T12:00:00Z",
        "proposed_by": "a2p-user",
    }
    made = user.request(
        "PATCH",
        MEMORIES,
        {"ops": [{"op": "add", "path": "/content/proposals/-", "value": own}]},
        {"If-None-Match": "*", "Idempotency-Key": "own"},
    )
    assert made.status == 201, made.data
    (entry,) = queue(user)
    refused = review(user, entry["proposal_id"], "approve")
    assert (refused.status, refused.error_code) == (403, "SELF_APPROVAL_FORBIDDEN")
    assert review(user, entry["proposal_id"], "reject").status == 200  # withdrawing is fine


def test_a_repeated_review_answers_again_and_a_different_one_conflicts(a2p: ApiClient):
    propose(a2p, memory(1), "p1")
    (entry,) = queue(a2p)
    user = a2p.as_key(A2P_USER_KEY)
    first = review(user, entry["proposal_id"], "approve")
    again = review(user, entry["proposal_id"], "approve")
    assert again.status == 200 and again.data["replayed"] is True
    assert again.headers.get("idempotent-replayed", again.headers.get("Idempotent-Replayed"))
    assert again.data["reviewed_at"] == first.data["reviewed_at"]
    other = review(user, entry["proposal_id"], "reject")
    assert (other.status, other.error_code) == (409, "PROPOSAL_ALREADY_REVIEWED")
    assert content(a2p)["memories"]["a2p:semantic"] == [memory(1)]


def test_concurrent_approvals_apply_once(a2p: ApiClient):
    propose(a2p, memory(1), "p1")
    (entry,) = queue(a2p)
    user = a2p.as_key(A2P_USER_KEY)
    replies: list[Reply] = []
    threads = [
        threading.Thread(
            target=lambda: replies.append(review(user, entry["proposal_id"], "approve"))
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status for r in replies] == [200] * 4, [r.data for r in replies]
    assert sum(1 for r in replies if not r.data.get("replayed")) == 1
    assert content(a2p)["memories"]["a2p:semantic"] == [memory(1)]


def test_bad_review_requests_are_refused_and_change_nothing(a2p: ApiClient):
    propose(a2p, memory(1), "p1")
    (entry,) = queue(a2p)
    user = a2p.as_key(A2P_USER_KEY)
    pid = entry["proposal_id"]
    for path, status, code in (
        (f"{pid}/promote", 400, "INVALID_FIELD"),
        ("nonsense/approve", 400, "INVALID_FIELD"),
        (pid[:-1] + ("0" if pid[-1] != "0" else "1") + "/approve", 404, "PROPOSAL_NOT_FOUND"),
    ):
        reply = user.request("POST", f"{USER}/proposals/{path}")
        assert (reply.status, reply.error_code) == (status, code), path
    assert review(user, pid, "approve", {"candidate": memory(3)}).status == 400
    assert review(user, pid, "edit", {"candidate": {"id": "x"}}).status == 422  # schema
    other_user = user.request("POST", f"/v1/tenants/t1/users/u2/proposals/{pid}/approve")
    assert other_user.status == 404  # the id names u1's document only through u1's path
    assert [e["status"] for e in queue(a2p)] == ["pending"]
    admin = a2p.as_key(ADMIN_KEY)
    assert admin.request("GET", f"{USER}/proposals?profile_id=a2p-v1").status == 200


AN_HOUR_AGO = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def proposal(by: str, at: str = AN_HOUR_AGO, n: int = 2) -> dict[str, Any]:
    return {
        "candidate": memory(n),
        "target_path": "/memories/a2p:semantic/-",
        "proposed_at": at,
        "proposed_by": by,
    }


def add_proposals(client: ApiClient, items: list[dict[str, Any]], key: str) -> Reply:
    ops = [{"op": "add", "path": "/content/proposals/-", "value": item} for item in items]
    current = client.request("GET", MEMORIES)
    precondition = (
        {"If-Match": current.headers["etag"]} if current.status == 200 else {"If-None-Match": "*"}
    )
    return client.request("PATCH", MEMORIES, {"ops": ops}, {**precondition, "Idempotency-Key": key})


def test_nobody_proposes_in_anothers_name_or_from_the_future(a2p: ApiClient):
    forged = add_proposals(a2p, [proposal("a2p-user")], "forged")
    assert (forged.status, forged.error_code) == (422, "PROPOSED_BY_MISMATCH"), forged.data
    future = add_proposals(a2p, [proposal("a2p-agent", "9999-12-31T23:59:59Z")], "future")
    assert (future.status, future.error_code) == (422, "PROPOSED_AT_INVALID"), future.data
    assert a2p.request("GET", MEMORIES).status == 404  # nothing was written


def test_proposal_ids_are_drawn_at_random_and_name_one_item_each(a2p: ApiClient):
    twice = [proposal("a2p-agent"), proposal("a2p-agent")]
    assert add_proposals(a2p, twice, "twice").status == 201
    first, second = queue(a2p)
    assert first["proposal_id"] != second["proposal_id"]  # identical items, two proposals
    assert first["item"]["proposal_id"] == first["proposal_id"]  # stored with the item
    user = a2p.as_key(A2P_USER_KEY)
    assert review(user, first["proposal_id"], "approve").status == 200
    again = review(user, first["proposal_id"], "approve")
    assert again.status == 200 and again.data["replayed"] is True
    assert content(a2p)["memories"]["a2p:semantic"] == [memory(2)]
    assert [e["proposal_id"] for e in queue(a2p)] == [second["proposal_id"]]


def test_a_changed_copied_or_forged_proposal_gets_a_new_id(a2p: ApiClient):
    made = add_proposals(a2p, [proposal("a2p-agent")], "one")
    assert made.status == 201, made.data
    (entry,) = queue(a2p)
    old_id, etag = entry["proposal_id"], made.data["etag"]
    changed = {**entry["item"], "candidate": memory(2, "Prefers Rust")}
    copied = entry["item"]
    forged = {**proposal("a2p-agent", n=3), "proposal_id": old_id}
    ops = [
        {"op": "replace", "path": "/content/proposals/0", "value": changed},
        {"op": "add", "path": "/content/proposals/-", "value": copied},
        {"op": "add", "path": "/content/proposals/-", "value": forged},
    ]
    reply = a2p.request(
        "PATCH", MEMORIES, {"ops": ops}, {"If-Match": etag, "Idempotency-Key": "three"}
    )
    assert reply.status == 200, reply.data
    ids = [e["proposal_id"] for e in queue(a2p)]
    assert len(set(ids)) == 3 and ids.count(old_id) == 1  # the unchanged copy keeps it
    assert [e["item"]["candidate"] for e in queue(a2p) if e["proposal_id"] == old_id] == [memory(2)]
    history = a2p.as_key(A2P_USER_KEY).request("GET", MEMORIES + ":history?limit=1")
    (change,) = history.data["changes"]  # the ids are in the recorded ops: a fold rebuilds it
    assert [op["path"] for op in change["ops"][3:]] == [
        "/content/proposals/0/proposal_id",
        "/content/proposals/2/proposal_id",
    ]


def test_jobs_are_not_held_to_review_required(related: World):
    job = Caller(
        "memnet-compaction", frozenset({"t1"}), frozenset({"*"}), frozenset({"read", "write"})
    )
    value = memory(5)
    command = job_command(
        DocumentRef("t1", "u1", "a2p", "memories.json"),
        "a2p-v1",
        [{"op": "add", "path": SEMANTIC, "value": value}],
        reason="compaction",
        confidence=1.0,
        evidence={"job": "compaction"},
    )
    written = related.services.documents.patch(job, command)
    assert "redirected_ops" not in written.body
    assert written.body["document"]["content"]["memories"]["a2p:semantic"] == [value]


def test_the_compaction_job_removes_expired_proposals(a2p: ApiClient, related: World):
    propose(a2p, memory(1), "p1")
    propose(a2p, memory(2), "p2", a2p.request("GET", MEMORIES).headers["etag"])
    assert len(queue(a2p)) == 2
    early = related.services.compaction.compact("t1", "u1", "a2p", "memories.json").as_json()
    assert not early.get("changed") and len(queue(a2p)) == 2  # not expired yet
    related.clock.advance(WEEK)
    status = related.services.compaction.compact("t1", "u1", "a2p", "memories.json").as_json()
    assert status["changed"] is True and "proposal_expired" in status["reason_codes"], status
    assert queue(a2p) == [] and content(a2p)["memories"]["a2p:semantic"] == []
    (change, *_) = a2p.as_key(A2P_USER_KEY).request("GET", MEMORIES + ":history").data["changes"]
    assert change["reason"] == "compaction" and "proposal_expired" in change["reason_codes"]


def test_an_export_holds_the_pending_proposals_and_each_decision(a2p: ApiClient, related: World):
    """Issue 27: the ``proposals`` part lists the queue and, beside the audit records,
    each decided proposal with its decision."""
    import json

    from tests.api.test_export import drain_exports

    propose(a2p, memory(1), "p1")
    (first,) = queue(a2p)
    user = a2p.as_key(A2P_USER_KEY)
    assert review(user, first["proposal_id"], "approve").status == 200
    etag = a2p.request("GET", MEMORIES).data["etag"]
    propose(a2p, memory(2, "Works in Lisbon"), "p2", etag)
    (second,) = queue(a2p)
    queued = user.request("POST", f"{USER}:export")
    assert queued.status == 202, queued.data
    drain_exports(related.services)
    job = user.request("GET", queued.data["status_url"]).data
    assert job["status"] == "done", job
    part = user.request("GET", job["files_url"] + "proposals-000001.jsonl").body
    entries = [json.loads(x) for x in part.splitlines()]
    decided = [e for e in entries if "decision" in e]
    assert [e["proposal_id"] for e in decided] == [first["proposal_id"]]
    assert decided[0]["decision"]["status"] == "approved"
    pending = [e for e in entries if "decision" not in e]
    assert [e["proposal_id"] for e in pending] == [second["proposal_id"]]
    memory_md = user.request("GET", job["files_url"] + "memory.md").body.decode()
    assert "Works in Lisbon" in memory_md.split("## Waiting for review")[1]
