"""Sensitivity (issue 15, capability 5; docs/profiles.md "Sensitivity") on a2p-v1: health
and financial memories are restricted, relationships sensitive (by category); the
agent (clearance standard) sees, changes and is shown only what is within it; the
user's app (clearance sensitive) sees everything. Both backends and transports."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memnet import auth_wiring, bootstrap
from memnet.bootstrap import Services
from memnet.domain.callers import Caller
from memnet.domain.errors import ConfigError, Forbidden
from memnet.domain.layout import DocumentRef, SnapshotRef
from memnet.domain.replay_contract import ExtractionRequest
from memnet.domain.sensitivity import parse_rules
from memnet.services.profiles.registry import load_registry
from tests.api.test_replay import ScriptedExtractor, drain
from tests.clients import ApiClient, DirectClient, Reply
from tests.conftest import make_settings
from tests.related.conftest import (
    A2P_AGENT_KEY,
    A2P_USER_KEY,
    ADMIN_KEY,
    RELATED,
    World,
    command,
)

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
    op = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(5, "a2p:health")}
    proposed = patch_as(a2p, etag, [op], "p5")
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
    op = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(6, "a2p:health")}
    patch_as(a2p, etag, [op], "p6")
    assert reviewer.request("GET", f"{USER}/proposals").data["proposals"] == []
    (entry,) = user.request("GET", f"{USER}/proposals").data["proposals"]
    hidden = entry["proposal_id"]
    absent = hidden[:-32] + "0" * 32  # the same document, no such proposal
    for decision, body in (
        ("approve", None),
        ("edit", {"candidate": memory(7, "x")}),
        ("reject", None),
    ):
        assert _refusal(reviewer, hidden, decision, body) == _refusal(
            reviewer, absent, decision, body
        )
    assert user.request("POST", f"{USER}/proposals/{hidden}/approve").status == 200
    assert semantic(user.request("GET", MEMORIES))[-1] == "mem_6"
    assert semantic(a2p.request("GET", MEMORIES)) == ["mem_2", "mem_4"]
    # The decision is not replayed to the reviewer, nor does a different one conflict.
    for decision in ("approve", "reject"):
        assert _refusal(reviewer, hidden, decision, None) == _refusal(
            reviewer, absent, decision, None
        )
    again = user.request("POST", f"{USER}/proposals/{hidden}/approve")
    assert again.status == 200 and again.data["replayed"] is True
    assert "sensitivity" not in again.data  # the class the decision recorded is not told


def _refusal(client: ApiClient, proposal_id: str, decision: str, body: Any) -> tuple[Any, ...]:
    """A refused review as the caller sees it, without its request id."""
    reply = client.request("POST", f"{USER}/proposals/{proposal_id}/{decision}", body)
    error = reply.data["error"]
    return reply.status, error["code"], error["message"], error["details"]


def test_the_queue_shows_each_proposal_as_the_reviewer_may_see_it(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    etag = seed(user).data["etag"]
    nested = {"related": [{"category": "a2p:health", "text": "NESTED-SECRET"}]}
    value = {**memory(9, "a2p:interests"), "metadata": nested}
    assert patch_as(a2p, etag, [{"op": "add", "path": f"{SEMANTIC}/-", "value": value}], "n9")
    (entry,) = reviewer.request("GET", f"{USER}/proposals").data["proposals"]
    assert entry["item"]["candidate"]["metadata"] == {"related": []}
    assert "NESTED-SECRET" in json.dumps(user.request("GET", f"{USER}/proposals").data)


def test_an_admin_that_names_no_clearance_reviews_every_class(a2p: ApiClient):
    admin = a2p.as_key(ADMIN_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    for n in (6, 7):
        op = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(n, "a2p:health")}
        etag = patch_as(a2p, etag, [op], f"p{n}").data["etag"]
    queue = admin.request("GET", f"{USER}/proposals?profile_id=a2p-v1").data
    first, second = queue["proposals"]
    to = f"{USER}/proposals/{first['proposal_id']}/approve?profile_id=a2p-v1"
    approved = admin.request("POST", to)
    assert approved.status == 200, approved.data
    to = f"{USER}/proposals/{second['proposal_id']}/reject?profile_id=a2p-v1"
    rejected = admin.request("POST", to)
    assert rejected.status == 200, rejected.data


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


def test_a_stored_answer_is_never_replayed_to_a_caller_who_could_not_see_it(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    etag = seed(user).data["etag"]
    op = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(8, "a2p:interests")}
    first = patch_as(user, etag, [op], "same-key")  # the user's answer holds mem_1, mem_3
    assert first.status == 200 and "memory 1" in json.dumps(first.data)
    same = patch_as(reviewer, etag, [op], "same-key")  # same key, same request, another caller
    assert same.status == 412, same.data  # its own request, run: the ETag moved on
    assert "idempotent-replayed" not in {k.lower() for k in same.headers}
    assert "memory 1" not in json.dumps(same.data) and "memory 3" not in json.dumps(same.data)
    again = patch_as(user, etag, [op], "same-key")  # the user's own repeat is replayed
    assert again.status == 200 and again.data["document"] == first.data["document"]


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
    assert one.status == 200, one.data  # no match on the hidden mem_1; the view's index
    assert one.data["upserts"] == [{"op_index": 0, "result": "added", "path": f"{SEMANTIC}/2"}]
    again = {"op": "add", "path": f"{SEMANTIC}/-", "value": {**memory(4, "a2p:professional")}}
    two = patch_as(reviewer, one.data["etag"], [again], "h2")  # mem_4: stored 3, seen at 1
    assert two.data["upserts"] == [{"op_index": 0, "result": "unchanged", "path": f"{SEMANTIC}/1"}]
    etag = user.request("GET", MEMORIES).headers["etag"]
    for index in ("4", "01"):  # past the view's end (the stored array is longer); not a number
        op = {"op": "add", "path": f"{SEMANTIC}/{index}", "value": memory(10, "a2p:interests")}
        reply = patch_as(reviewer, etag, [op], f"i{index}")
        assert (reply.status, reply.error_code) == (422, "PATCH_NOT_APPLICABLE"), reply.data


def _stored_index_named(reply: Reply) -> bool:
    """Whether the answer names mem_4 by its stored index (3) instead of the view's (1)."""
    return f"{SEMANTIC}/3" in json.dumps(reply.data)


def test_errors_name_the_callers_paths_not_the_stored_ones(a2p: ApiClient):
    reviewer = a2p.as_key(REVIEWER_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    wrong = {"op": "test", "path": f"{SEMANTIC}/1/content", "value": "not memory 4"}
    failed = patch_as(reviewer, etag, [wrong], "e1")
    assert (failed.status, failed.error_code) == (422, "PATCH_TEST_FAILED"), failed.data
    assert failed.data["error"]["details"]["path"] == f"{SEMANTIC}/1/content"
    assert not _stored_index_named(failed) and "memory 1" not in json.dumps(failed.data)
    invalid = {"op": "replace", "path": f"{SEMANTIC}/1/content", "value": ""}
    refused = patch_as(reviewer, etag, [invalid], "e2")
    assert (refused.status, refused.error_code) == (422, "SCHEMA_VIOLATION"), refused.data
    violation = refused.data["error"]["details"]["violations"][0]
    assert violation["path"] == f"{SEMANTIC}/1/content", violation
    assert not _stored_index_named(refused)


def test_a_schema_message_about_a_value_holding_hidden_content_is_not_shown(a2p: ApiClient):
    reviewer = a2p.as_key(REVIEWER_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    many = [
        {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(100 + n, "a2p:interests")}
        for n in range(50)
    ]
    for batch in range(10):  # past the section's maxItems of 500: a message on the array
        reply = patch_as(reviewer, etag, many, f"b{batch}")
        if reply.status != 200:
            break
        etag = reply.data["etag"]
        many = [
            {**op, "value": {**op["value"], "id": f"b{batch}_{i}"}} for i, op in enumerate(many)
        ]
    assert (reply.status, reply.error_code) == (422, "SCHEMA_VIOLATION"), reply.data
    assert "memory 1" not in json.dumps(reply.data) and "memory 3" not in json.dumps(reply.data)
    violation = reply.data["error"]["details"]["violations"][0]
    assert violation["path"] == SEMANTIC


def test_compaction_never_merges_items_of_different_classes(related: World, a2p: ApiClient):
    reviewer, user = a2p.as_key(REVIEWER_KEY), a2p.as_key(A2P_USER_KEY)
    etag = seed(user).data["etag"]
    guess = {"id": "mine", "content": "memory 1", "category": "a2p:interests", "confidence": 1.0}
    assert patch_as(reviewer, etag, [{"op": "add", "path": f"{SEMANTIC}/-", "value": guess}], "g")
    related.services.compaction.compact("t1", "u1", "a2p", "memories.json")
    assert semantic(user.request("GET", MEMORIES)) == ["mem_1", "mem_2", "mem_3", "mem_4", "mine"]
    mine = reviewer.request("GET", MEMORIES).data["document"]["content"]["memories"]
    assert "consolidatedFrom" not in mine["a2p:semantic"][-1]


# -- the replay of an upload has the uploader's clearance -----------------------------------


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[tuple[Services, ScriptedExtractor]]:
    settings = replace(
        make_settings(tmp_path / "data"),
        profiles_dir=RELATED / "profiles",
        callers_file=RELATED / "callers.dev.json",
    )
    extractor = ScriptedExtractor()
    services = bootstrap.build(settings, extractor=extractor)
    bootstrap.install(services)
    yield services, extractor
    bootstrap.install(None)


SNAP = f"{USER}/snapshots/conv-1/snap-1"
_TRANSCRIPT = {
    "messages": [{"id": "m1", "role": "user", "text": "hi", "timestamp": "2026-11-24T10:00:00Z"}],
    "profile_id": "a2p-v1",
}


def _upload_and_replay(
    services: Services, extractor: ScriptedExtractor, client: ApiClient
) -> tuple[list[Any], dict[str, Any]]:
    seen: list[Any] = []

    def output(request: ExtractionRequest) -> dict[str, Any]:
        seen.extend(t.content for t in request.targets if t.binding_id == "memories")
        probe = {"op": "test", "path": SEMANTIC, "value": []}  # an array holding hidden items
        patch = {
            "target_binding_id": "memories",
            "target_path": "memories.json",
            "ops": [probe],
            "confidence": 1.0,
            "evidence": {"message_ids": ["m1"]},
        }
        return {"digests": [], "patches": [patch]}

    extractor.output = output
    assert client.request("PUT", SNAP, _TRANSCRIPT).status == 202
    drain(services)
    return seen, client.request("GET", SNAP + "/replay").data


def test_a_replay_sees_and_tells_only_what_its_uploader_may(scripted):
    services, extractor = scripted
    seed(DirectClient(A2P_USER_KEY))
    agent = DirectClient(A2P_AGENT_KEY)
    seen, status = _upload_and_replay(services, extractor, agent)
    assert [m["id"] for m in seen[0]["memories"]["a2p:semantic"]] == ["mem_2", "mem_4"]
    assert status["rejected"][0]["code"] == "CLEARANCE_EXCEEDED", status
    assert "memory 1" not in json.dumps(status) and "memory 3" not in json.dumps(status)


def test_a_replays_status_needs_its_uploaders_clearance(scripted):
    services, extractor = scripted
    user = DirectClient(A2P_USER_KEY)
    seed(user)
    _upload_and_replay(services, extractor, user)  # clearance sensitive: it saw mem_1, mem_3
    refused = DirectClient(A2P_AGENT_KEY).request("GET", SNAP + "/replay")
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_REQUIRED"), refused.data
    same = {**_TRANSCRIPT, "service_id": "a2p-user"}  # the agent may name any service
    again = DirectClient(A2P_AGENT_KEY).request("PUT", SNAP, same)
    assert (again.status, again.error_code) == (403, "CLEARANCE_REQUIRED"), again.data
    assert user.request("GET", SNAP + "/replay").status == 200


def test_an_admins_upload_replays_with_every_class(scripted):
    services, extractor = scripted
    seed(DirectClient(A2P_USER_KEY))
    seen, _ = _upload_and_replay(services, extractor, DirectClient(ADMIN_KEY))
    assert [m["id"] for m in seen[0]["memories"]["a2p:semantic"]] == [
        "mem_1",
        "mem_2",
        "mem_3",
        "mem_4",
    ]


# -- clearances in the callers file ---------------------------------------------------------


@pytest.mark.parametrize(
    ("clearance", "profiles"),
    [("secret", ["a2p-v1"]), ("*", ["a2p-v1"]), ("restricted", ["mosaic-v1"]), (3, ["*"])],
)
def test_a_clearance_must_be_a_class_of_the_callers_profiles(tmp_path, clearance, profiles):
    entry = {
        "caller_id": "x",
        "key_sha256": "0" * 64,
        "tenants": ["*"],
        "profiles": profiles,
        "roles": ["read"],
        "clearance": clearance,
    }
    callers_file = tmp_path / "callers.json"
    callers_file.write_text(json.dumps({"callers": [entry]}))
    settings = replace(
        make_settings(tmp_path / "data"),
        profiles_dir=RELATED / "profiles",
        callers_file=callers_file,
    )
    with pytest.raises(ConfigError) as caught:
        auth_wiring.authenticator(settings, load_registry(settings.profiles_dir))
    assert "/callers/0/clearance" in str(caught.value)
    entry["clearance"], entry["profiles"] = "restricted", ["*"]  # a class of a2p-v1
    callers_file.write_text(json.dumps({"callers": [entry]}))
    auth_wiring.authenticator(settings, load_registry(settings.profiles_dir))


def test_only_an_admin_that_names_no_clearance_sees_every_class():
    rules = parse_rules({"classes": ["standard", "restricted", "sensitive"]}, "memories")
    assert rules.clearance(None, admin=True) == rules.highest
    assert rules.clearance("elsewhere", admin=True) == 0  # another profile's class
    assert rules.clearance("restricted", admin=True) == 1
    assert rules.clearance(None, admin=False) == 0


def test_no_unresolvable_path_echoes_what_it_met(a2p: ApiClient):
    reviewer = a2p.as_key(REVIEWER_KEY)
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    paths = [
        f"{SEMANTIC}/-",
        f"{SEMANTIC}/2",  # one past the view's end: the stored end
        "/content/memories/a2p:episodic/0",
        "/content/memories/nope",
        "/content/nope",
        "/content/memories/a2p:semantic~1x",
        "/content/memories/nope/x",
    ]
    for n, path in enumerate(paths):
        for op in ({"op": "test", "path": path, "value": 1}, {"op": "remove", "path": path}):
            reply = patch_as(reviewer, etag, [op], f"u{n}{op['op']}")
            assert reply.status in (403, 422), (path, reply.data)
            text = json.dumps(reply.data)
            assert "memory 1" not in text and "mem_3" not in text, (path, reply.data)


def test_profiles_that_bind_one_namespace_must_classify_it_alike(tmp_path):
    shutil.copytree(RELATED / "profiles", tmp_path / "profiles")
    twin = json.loads((tmp_path / "profiles" / "a2p-v1.json").read_text())
    del twin["sensitivity_rules"]  # the same memories, read through a profile without classes
    twin["profile_id"] = "a2p-open"
    (tmp_path / "profiles" / "a2p-open.json").write_text(json.dumps(twin))
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path / "profiles")
    assert "/sensitivity_rules" in str(caught.value) and "'a2p'" in str(caught.value)


def test_a_caller_that_sees_less_rebases_appends_only(a2p: ApiClient):
    user, reviewer = a2p.as_key(A2P_USER_KEY), a2p.as_key(REVIEWER_KEY)
    stale = seed(user).data["etag"]
    meanwhile = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(5, "a2p:health")}
    patch_as(user, stale, [meanwhile], "m5")

    def rebased(ops: list[dict[str, Any]], key: str) -> Reply:
        body = {"ops": ops, "confidence": 1.0, "evidence": EVIDENCE, "rebase": True}
        return reviewer.request(
            "PATCH", MEMORIES, body, {"If-Match": stale, "Idempotency-Key": key}
        )

    append = {"op": "add", "path": f"{SEMANTIC}/-", "value": memory(6, "a2p:interests")}
    assert rebased([append], "r1").status == 200
    replaced = rebased([{"op": "remove", "path": f"{SEMANTIC}/0"}], "r2")
    assert replaced.status == 412 and "rebase" not in replaced.data["error"]["details"]


def test_replacing_a_document_needs_every_class(related: World, a2p: ApiClient):
    etag = seed(a2p.as_key(A2P_USER_KEY)).data["etag"]
    ref = DocumentRef("t1", "u1", "a2p", "memories.json")
    stored = related.services.documents.load(ref)
    assert stored is not None
    admin = Caller(
        "low-admin", frozenset({"t1"}), frozenset({"a2p-v1"}), frozenset({"admin"}),
        clearance="standard",
    )  # fmt: skip
    guess = command(ref, "a2p-v1", [], reason="admin_migration", etag=etag)
    guess = replace(guess, content=stored.document["content"])  # exactly right: no oracle
    with pytest.raises(Forbidden) as caught:
        related.services.documents.replace(admin, guess)
    assert caught.value.code == "CLEARANCE_REQUIRED"


def test_an_admin_below_the_uploaders_clearance_reads_no_replay(scripted):
    services, extractor = scripted
    user = DirectClient(A2P_USER_KEY)
    seed(user)
    _upload_and_replay(services, extractor, user)
    low = Caller(
        "low-admin", frozenset({"t1"}), frozenset({"a2p-v1"}),
        frozenset({"admin", "read", "snapshots"}), clearance="standard",
    )  # fmt: skip
    ref = SnapshotRef("t1", "u1", "conv-1", "snap-1")
    for attempt in (
        lambda: services.snapshots.read(low, ref),
        lambda: services.snapshots.status(low, ref),
        lambda: services.replay.redrive(low, ref),
        lambda: services.replay.review.resolve(low, ref, 0, "discard"),
    ):
        with pytest.raises(Forbidden) as caught:
            attempt()
        assert caught.value.code == "CLEARANCE_REQUIRED"
    assert services.replay.review.unresolved(low, "t1", "u1", 10) == []


def test_lookups_are_refused_beside_sensitivity_classes(tmp_path):
    shutil.copytree(RELATED / "profiles", tmp_path / "profiles")
    path = tmp_path / "profiles" / "a2p-v1.json"
    profile = json.loads(path.read_text())
    profile["document_bindings"][0]["lookup_fields"] = {"memory": "/memories/a2p:semantic"}
    path.write_text(json.dumps(profile))
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path / "profiles")
    assert "not available with sensitivity_rules" in str(caught.value)


def test_context_provenance_needs_clearance_for_every_class(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    body = {"provenance": True}
    shown = a2p.request("POST", f"{USER}/context:assemble", body).data["provenance"]
    (memories,) = [p for p in shown if p["path"] == "memories.json"]
    assert memories == {
        "binding_id": memories["binding_id"],
        "path": "memories.json",
        "items": None,
        "omitted": "CLEARANCE_REQUIRED",
    }
    full = user.request("POST", f"{USER}/context:assemble", body).data["provenance"]
    (memories,) = [p for p in full if p["path"] == "memories.json"]
    items = [f"/memories/a2p:semantic/{i}" for i in range(4)]
    assert sorted(memories["items"]) == items
    assert {memories["items"][i]["evidence"]["conversation_id"] for i in items} == {"c1"}


def test_why_needs_clearance_for_every_class_as_history_does(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    query = ":why?path=/memories/a2p:semantic/1"
    refused = a2p.request("GET", MEMORIES + query)
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_REQUIRED")
    (change,) = user.request("GET", MEMORIES + query).data["changes"]
    assert change["role"] == "origin" and change["evidence"] == EVIDENCE


def test_an_export_below_a_documents_classes_holds_its_view_and_no_history(
    a2p: ApiClient, related: World
):
    """Issue 27: an export honours a document's sensitivity classes for the asker: the
    agent's archive holds the view it reads, no audit record (a past version would show
    what the view hides), and says so; the user's holds the document whole."""
    from tests.api.test_export import drain_exports

    user = a2p.as_key(A2P_USER_KEY)
    seed(user)
    archives = {}
    for caller in (a2p, user):
        queued = caller.request("POST", f"{USER}:export")
        assert queued.status == 202, queued.data
        drain_exports(related.services)
        job = caller.request("GET", queued.data["status_url"]).data
        files = {n: caller.request("GET", job["files_url"] + n).body for n in job["files"]}
        archives[caller.key] = (job, files)
    job, files = archives[A2P_AGENT_KEY]
    (line,) = files["documents-000001.jsonl"].splitlines()
    memories = json.loads(line)["document"]["content"]["memories"]["a2p:semantic"]
    assert [m["id"] for m in memories] == ["mem_2", "mem_4"]
    assert "audit-000001.jsonl" not in files and job["complete"] is False
    assert any(o["kind"] == "audit" for o in job["omitted"])
    assert b"memory 1" not in files["memory.md"] and b"memory 3" not in files["memory.md"]
    job, files = archives[A2P_USER_KEY]
    (line,) = files["documents-000001.jsonl"].splitlines()
    memories = json.loads(line)["document"]["content"]["memories"]["a2p:semantic"]
    assert [m["id"] for m in memories] == ["mem_1", "mem_2", "mem_3", "mem_4"]
    assert len(files["audit-000001.jsonl"].splitlines()) == 1
