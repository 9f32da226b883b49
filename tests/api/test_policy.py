"""Write policy through the API: writable paths, denylist, limits, schema, confidence."""

from __future__ import annotations

import pytest

from tests.api.test_documents import PREF, create, patch
from tests.clients import ApiClient
from tests.conftest import doc_url

FACT = {
    "fact": "Works in Oslo.",
    "confidence": 0.9,
    "evidence": {"message_ids": ["m1"]},
    "last_verified_at": "2026-02-14T20:00:00Z",
}


def etag(client: ApiClient) -> str:
    return create(client).data["etag"]


def violations(reply) -> list[dict]:  # type: ignore[no-untyped-def]
    return reply.data["error"]["details"]["violations"]


def test_write_outside_allowlist_is_422_and_changes_nothing(client: ApiClient):
    tag = etag(client)
    reply = patch(
        client,
        tag,
        [{"op": "add", "path": "/content/projects_index/-", "value": {"project_id": "p"}}],
        "k",
    )
    assert reply.status == 422 and reply.error_code == "PATH_NOT_WRITABLE"
    assert violations(reply)[0] == {
        "code": "PATH_NOT_WRITABLE",
        "op_index": 0,
        "path": "/content/projects_index/-",
        "message": violations(reply)[0]["message"],
    }
    assert client.request("GET", doc_url()).data["etag"] == tag


def test_allowlist_compares_whole_segments(client: ApiClient):
    reply = patch(
        client, etag(client), [{"op": "add", "path": "/content/preferences_x", "value": 1}], "k"
    )
    assert reply.error_code == "PATH_NOT_WRITABLE"


def test_move_checks_from_as_well(client: ApiClient):
    reply = patch(
        client,
        etag(client),
        [{"op": "move", "from": "/content/projects_index", "path": "/content/preferences/0"}],
        "k",
    )
    assert reply.status == 422
    assert [v["path"] for v in violations(reply)] == ["/content/projects_index"]


def test_envelope_fields_are_never_writable(client: ApiClient):
    reply = patch(
        client, etag(client), [{"op": "replace", "path": "/updated_by", "value": "me"}], "k"
    )
    assert reply.error_code == "ENVELOPE_READ_ONLY"


def test_denylisted_field_inside_value_is_refused(client: ApiClient):
    fact = {**FACT, "credentials": "hunter2"}
    reply = patch(
        client,
        etag(client),
        [{"op": "add", "path": "/content/durable_facts/-", "value": fact}],
        "k",
        confidence=0.95,
        evidence={"message_ids": ["m1"]},
    )
    assert "DENIED_PATH" in [v["code"] for v in violations(reply)]


def test_all_violations_are_reported_together(client: ApiClient):
    ops = [
        {"op": "add", "path": "/content/a", "value": 1},
        {"op": "add", "path": "/doc_id", "value": 1},
    ]
    reply = patch(client, etag(client), ops, "k")
    assert [(v["code"], v["op_index"]) for v in violations(reply)] == [
        ("PATH_NOT_WRITABLE", 0),
        ("ENVELOPE_READ_ONLY", 1),
    ]


def test_too_many_ops_is_422(client: ApiClient):
    ops = [{"op": "add", "path": PREF, "value": str(i)} for i in range(26)]
    assert patch(client, etag(client), ops, "k").error_code == "TOO_MANY_OPS"


def test_schema_violation_names_the_json_path(client: ApiClient):
    reply = patch(client, etag(client), [{"op": "add", "path": PREF, "value": 42}], "k")
    assert reply.status == 422 and reply.error_code == "SCHEMA_VIOLATION"
    assert violations(reply)[0]["path"] == "/content/preferences/1"


def test_max_chars_is_enforced_after_applying(client: ApiClient):
    facts = [{**FACT, "fact": f"{i}" + " y" * 495} for i in range(18)]  # not key-like
    ops = [{"op": "add", "path": "/content/durable_facts/-", "value": f} for f in facts]
    proof = {"confidence": 0.9, "evidence": {"message_ids": ["m1"]}}
    first = patch(client, etag(client), ops[:15], "k1", **proof)
    assert first.status == 200
    more = patch(client, first.data["etag"], ops[15:], "k2", **proof)
    assert more.status == 422 and more.error_code == "MAX_CHARS_EXCEEDED"


def test_array_limit_is_enforced(client: ApiClient):
    tag = etag(client)
    for round_ in range(2):
        ops = [{"op": "add", "path": PREF, "value": {"text": f"p{round_}-{i}"}} for i in range(12)]
        reply = patch(client, tag, ops, f"k{round_}")
        tag = reply.data.get("etag", tag)
    assert reply.status == 422 and reply.error_code == "ARRAY_LIMIT_EXCEEDED"


def test_durable_fact_with_confidence_and_evidence_is_applied(client: ApiClient):
    reply = patch(
        client,
        etag(client),
        [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}],
        "k",
        confidence=0.85,
        evidence={"message_ids": ["m1"]},
    )
    assert reply.status == 200
    assert reply.data["document"]["content"]["durable_facts"] == [FACT]
    assert "redirected_ops" not in reply.data


def test_low_confidence_durable_fact_is_redirected_to_pending(client: ApiClient):
    reply = patch(
        client,
        etag(client),
        [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}],
        "k",
        confidence=0.75,
        evidence={"message_ids": ["m1"]},
    )
    assert reply.status == 200
    content = reply.data["document"]["content"]
    assert content["durable_facts"] == []
    pending = content["pending_confirmations"][0]
    assert pending["candidate"] == FACT and pending["target_path"] == "/durable_facts/-"
    assert pending["confidence"] == 0.75 and pending["proposed_by"] == "dev-agent"
    assert reply.data["redirected_ops"] == [
        {
            "op_index": 0,
            "from_path": "/content/durable_facts/-",
            "to_path": "/content/pending_confirmations/-",
            "reason": "confidence_below_threshold",
        }
    ]


@pytest.mark.parametrize(
    ("target", "value"),
    [
        ("/durable_facts", FACT),  # the list itself: approval would replace it with one fact
        ("/durable_facts/3", FACT),  # past the end of the list
        ("/durable_facts/0/fact", "x"),  # inside an item that is not there
        ("/pending_confirmations/-", FACT),  # a proposal to propose
    ],
)
def test_a_proposal_approval_could_never_write_is_refused_when_made(
    client: ApiClient, target: str, value: object
):
    tag = etag(client)
    item = {
        "candidate": value,
        "target_path": target,
        "proposed_at": "2026-11-24T10:00:00Z",
        "proposed_by": "dev-agent",
    }
    made = patch(
        client,
        tag,
        [{"op": "add", "path": "/content/pending_confirmations/-", "value": item}],
        "own",
    )
    replies = [made]
    if target.startswith("/durable_facts"):  # the gate makes a low-confidence write one
        ops = [{"op": "add", "path": f"/content{target}", "value": value}]
        evidence = {"message_ids": ["m1"]}
        replies.append(patch(client, tag, ops, "gate", confidence=0.75, evidence=evidence))
    for reply in replies:
        assert (reply.status, reply.error_code) == (422, "PROPOSAL_TARGET_INVALID"), reply.data
        (violation,) = violations(reply)
        assert violation["path"] == "/content/pending_confirmations/0/target_path"
    assert client.request("GET", doc_url()).data["etag"] == tag


def test_a_proposal_replacing_a_list_with_a_list_is_one_approval_can_write(client: ApiClient):
    reply = patch(
        client,
        etag(client),
        [{"op": "add", "path": "/content/durable_facts", "value": [FACT]}],
        "k",
        confidence=0.5,
        evidence={"message_ids": ["m1"]},
    )
    assert reply.status == 200, reply.data
    (pending,) = reply.data["document"]["content"]["pending_confirmations"]
    assert pending["target_path"] == "/durable_facts" and pending["candidate"] == [FACT]


def test_durable_fact_without_evidence_is_redirected(client: ApiClient):
    reply = patch(
        client,
        etag(client),
        [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}],
        "k",
        confidence=0.99,
    )
    assert reply.data["redirected_ops"][0]["reason"] == "evidence_required"


def test_low_confidence_remove_of_durable_fact_is_refused(client: ApiClient):
    tag = patch(
        client,
        etag(client),
        [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}],
        "k1",
        confidence=0.9,
        evidence={"m": 1},
    ).data["etag"]
    reply = patch(client, tag, [{"op": "remove", "path": "/content/durable_facts/0"}], "k2")
    assert reply.status == 422 and reply.error_code == "CONFIDENCE_BELOW_THRESHOLD"


def test_non_durable_write_below_auto_apply_is_refused(client: ApiClient):
    reply = patch(
        client,
        etag(client),
        [{"op": "add", "path": PREF, "value": {"text": "x"}}],
        "k",
        confidence=0.5,
    )
    assert reply.status == 422 and reply.error_code == "CONFIDENCE_BELOW_THRESHOLD"


def test_failed_test_op_is_422_patch_test_failed(client: ApiClient):
    ops = [
        {"op": "test", "path": "/content/preferences/0", "value": {"text": "nope"}},
        {"op": "add", "path": PREF, "value": {"text": "x"}},
    ]
    reply = patch(client, etag(client), ops, "k")
    assert reply.status == 422 and reply.error_code == "PATCH_TEST_FAILED"
    assert reply.data["error"]["details"]["op_index"] == 0


def test_copy_cannot_carry_a_denylisted_field_into_place(client: ApiClient):
    url = doc_url("projects/alpha.json")
    tag = create(client, url, [{"op": "replace", "path": "/content/summary", "value": "s"}])
    ops = [
        {"op": "add", "path": "/content/recent_notes/-", "value": {"note": "n", "x": 1}},
        {"op": "copy", "from": "/content/recent_notes/0", "path": "/content/facets/secrets"},
    ]
    reply = patch(client, tag.data["etag"], ops, "k", url=url)
    assert reply.status == 422 and "DENIED_PATH" in [v["code"] for v in violations(reply)]
    assert client.request("GET", url).data["etag"] == tag.data["etag"]


def test_patch_of_a_binding_without_writable_rules_is_refused_even_when_empty(
    client: ApiClient,
):
    url = doc_url("user/user_static.json")
    for ops in ([], [{"op": "test", "path": "/content", "value": {}}]):
        reply = create(client, url, ops, key=f"k{len(ops)}")
        assert reply.status == 422 and reply.error_code == "PATH_NOT_WRITABLE"
    assert client.request("GET", url).status == 404


def test_only_admins_may_claim_an_admin_migration(client: ApiClient):
    reply = create(client, reason="admin_migration")
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"
