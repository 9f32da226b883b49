"""Sensitivity (issue 15, capability 5; docs/profiles.md "Sensitivity") on a2p-v1: health
and financial memories are restricted, relationships sensitive (by category); the
agent (clearance standard) sees, changes and is shown only what is within it; the
user's app (clearance sensitive) sees everything. Both backends and transports."""

from __future__ import annotations

import json
from typing import Any

from tests.clients import ApiClient, Reply
from tests.related.conftest import A2P_USER_KEY

REVIEWER_KEY = "a2p-reviewer-key"  # review role, clearance standard

USER = "/v1/tenants/t1/users/u1"
MEMORIES = f"{USER}/documents/a2p/memories.json"
SEMANTIC = "/content/memories/a2p:semantic"
EVIDENCE = {"conversation_id": "c1"}


def memory(n: int, category: str) -> dict[str, Any]:
    return {"id": f"mem_{n}", "content": f"memory {n}", "category": category}


STORED = [
    memory(1, "a2p:health.sleep"),
    memory(2, "a2p:interests.music"),
    memory(3, "a2p:relationships"),
    memory(4, "a2p:professional"),
]


def seed(user: ApiClient) -> Reply:
    ops = [{"op": "add", "path": f"{SEMANTIC}/-", "value": m} for m in STORED]
    reply = user.request(
        "PATCH",
        MEMORIES,
        {"ops": ops, "confidence": 1.0, "evidence": EVIDENCE},
        {"If-None-Match": "*", "Idempotency-Key": "seed"},
    )
    assert reply.status == 201, reply.data
    return reply


def semantic(reply: Reply) -> list[str]:
    assert reply.status == 200, reply.data
    return [m["id"] for m in reply.data["document"]["content"]["memories"]["a2p:semantic"]]


def test_each_caller_reads_its_view_with_the_same_etag(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    mine, theirs = user.request("GET", MEMORIES), a2p.request("GET", MEMORIES)
    assert semantic(mine) == ["mem_1", "mem_2", "mem_3", "mem_4"]
    assert semantic(theirs) == ["mem_2", "mem_4"]
    assert mine.headers["etag"] == theirs.headers["etag"]


def test_an_index_in_a_callers_view_is_the_item_it_saw(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    etag = seed(user).data["etag"]
    reply = reviewer.request(
        "PATCH",
        MEMORIES,
        {
            "ops": [{"op": "remove", "path": f"{SEMANTIC}/1"}],
            "confidence": 1.0,
            "evidence": EVIDENCE,
        },  # mem_4, as the reviewer saw it
        {"If-Match": etag, "Idempotency-Key": "rm"},
    )
    assert reply.status == 200, reply.data
    assert semantic(reply) == ["mem_2"]  # the answer is the reviewer's view too
    assert semantic(user.request("GET", MEMORIES)) == ["mem_1", "mem_2", "mem_3"]


def test_the_agent_cannot_add_above_its_clearance_nor_read_the_history(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    etag = a2p.request("GET", MEMORIES).headers["etag"]
    # A review-required profile turns the agent's write into a proposal; the proposal
    # itself carries no category, and the user's queue shows it, the agent's does not.
    proposed = a2p.request(
        "PATCH",
        MEMORIES,
        {"ops": [{"op": "add", "path": f"{SEMANTIC}/-", "value": memory(5, "a2p:health")}],
         "confidence": 0.9, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "p5"},
    )  # fmt: skip
    assert proposed.status == 200 and proposed.data["redirected_ops"], proposed.data
    assert a2p.request("GET", f"{USER}/proposals").data["proposals"] == []
    assert len(user.request("GET", f"{USER}/proposals").data["proposals"]) == 1
    refused = a2p.request("GET", MEMORIES + ":history")
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_REQUIRED")
    assert user.request("GET", MEMORIES + ":history").status == 200


def test_context_assembly_gives_the_agent_its_view(a2p: ApiClient):
    seed(a2p.as_key(A2P_USER_KEY))
    reply = a2p.request("POST", f"{USER}/context:assemble", {})
    assert reply.status == 200, reply.data
    (doc,) = [d for d in reply.data["documents"] if d["binding_id"] == "memories"]
    ids = [m["id"] for m in doc["document"]["content"]["memories"]["a2p:semantic"]]
    assert ids == ["mem_2", "mem_4"]


def test_a_reviewer_below_a_candidates_class_neither_sees_nor_approves_it(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    seed(user)
    etag = a2p.request("GET", MEMORIES).headers["etag"]
    a2p.request(
        "PATCH",
        MEMORIES,
        {"ops": [{"op": "add", "path": f"{SEMANTIC}/-", "value": memory(6, "a2p:health")}],
         "confidence": 0.9, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "p6"},
    )  # fmt: skip
    assert reviewer.request("GET", f"{USER}/proposals").data["proposals"] == []
    (entry,) = user.request("GET", f"{USER}/proposals").data["proposals"]
    url = f"{USER}/proposals/{entry['proposal_id']}/approve"
    refused = reviewer.request("POST", url)
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_EXCEEDED"), refused.data
    assert user.request("POST", url).status == 200
    assert semantic(user.request("GET", MEMORIES))[-1] == "mem_6"
    assert semantic(a2p.request("GET", MEMORIES)) == ["mem_2", "mem_4"]


def test_a_write_that_changes_hidden_content_is_refused(a2p: ApiClient):
    reviewer = a2p.as_key(REVIEWER_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    copy = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(7, "a2p:relationships")}
    reply = reviewer.request(
        "PATCH",
        MEMORIES,
        {"ops": [copy], "confidence": 1.0, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "r7"},
    )
    assert (reply.status, reply.error_code) == (403, "CLEARANCE_EXCEEDED"), reply.data


def patch_as(client: ApiClient, etag: str, ops: list[dict[str, Any]], key: str) -> Reply:
    body = {"ops": ops, "confidence": 1.0, "evidence": EVIDENCE}
    return client.request("PATCH", MEMORIES, body, {"If-Match": etag, "Idempotency-Key": key})


def test_no_op_reaches_above_or_around_hidden_content(a2p: ApiClient):
    reviewer = a2p.as_key(REVIEWER_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    for path in (SEMANTIC, "/content/memories", "/content", ""):
        reply = patch_as(reviewer, etag, [{"op": "test", "path": path, "value": []}], f"t{path}")
        assert (reply.status, reply.error_code) == (403, "CLEARANCE_EXCEEDED"), (path, reply.data)
        assert "memory 1" not in json.dumps(reply.data) and "memory 3" not in json.dumps(reply.data)


def test_each_op_addresses_the_view_left_by_the_ops_before_it(a2p: ApiClient):
    reviewer, user = a2p.as_key(REVIEWER_KEY), a2p.as_key(A2P_USER_KEY)
    etag = seed(user).data["etag"]
    probe = [
        {"op": "remove", "path": f"{SEMANTIC}/0"},
        {"op": "test", "path": f"{SEMANTIC}/0/content", "value": "x"},
    ]
    reply = patch_as(reviewer, etag, probe, "probe")
    assert reply.status == 422 and "memory 3" not in json.dumps(reply.data), reply.data
    both = patch_as(reviewer, etag, [{"op": "remove", "path": f"{SEMANTIC}/0"}] * 2, "both")
    assert both.status == 200, both.data
    assert semantic(user.request("GET", MEMORIES)) == ["mem_1", "mem_3"]


def test_a_proposal_has_its_candidates_class(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    seed(user)
    etag = a2p.request("GET", MEMORIES).headers["etag"]
    secret = memory(8, "a2p:health")
    proposed = a2p.request(
        "PATCH",
        MEMORIES,
        {"ops": [{"op": "add", "path": f"{SEMANTIC}/-", "value": secret}],
         "confidence": 0.9, "evidence": EVIDENCE},
        {"If-Match": etag, "Idempotency-Key": "p8"},
    )  # fmt: skip
    assert proposed.status == 200, proposed.data
    assert proposed.data["document"]["content"]["proposals"] == []  # the agent's own view
    assert reviewer.request("GET", MEMORIES).data["document"]["content"]["proposals"] == []
    assert len(user.request("GET", MEMORIES).data["document"]["content"]["proposals"]) == 1


def test_answers_do_not_tell_hidden_ids_or_the_stored_length(a2p: ApiClient):
    reviewer, user = a2p.as_key(REVIEWER_KEY), a2p.as_key(A2P_USER_KEY)
    etag = seed(user).data["etag"]
    hidden_id = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(1, "a2p:interests")}
    one = patch_as(reviewer, etag, [hidden_id], "h1")
    assert one.status == 200 and "upserts" not in one.data, one.data  # no match on hidden
    etag = user.request("GET", MEMORIES).headers["etag"]
    for index in ("4", "01"):  # past the view's end (the stored array is longer); not a number
        op = {"op": "add", "path": f"{SEMANTIC}/{index}", "value": memory(10, "a2p:interests")}
        reply = patch_as(reviewer, etag, [op], f"i{index}")
        assert (reply.status, reply.error_code) == (422, "PATCH_NOT_APPLICABLE"), reply.data
