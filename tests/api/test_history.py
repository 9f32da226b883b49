"""Audit history: every mutation is recorded, and folding the records reproduces the
document exactly (spec 19.2, 25.6)."""

from __future__ import annotations

from memnet.domain.audit_records import AuditRecord, fold
from tests.api.test_documents import PREF, create, patch
from tests.api.test_policy import FACT
from tests.clients import ApiClient
from tests.conftest import doc_url


def history(client: ApiClient, url: str = doc_url(), query: str = ""):
    return client.request("GET", url + ":history" + query)


def test_folding_history_from_creation_reproduces_the_document(client: ApiClient, admin: ApiClient):
    tag = create(client).data["etag"]
    steps = [
        ([{"op": "add", "path": PREF, "value": {"text": "two"}}], {}),
        (
            [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}],
            {"confidence": 0.6, "evidence": {"message_ids": ["m2"]}},
        ),
        ([{"op": "move", "from": "/content/preferences/0", "path": "/content/preferences/1"}], {}),
        ([{"op": "remove", "path": "/content/pending_confirmations/0"}], {}),
    ]
    for i, (ops, extra) in enumerate(steps):
        reply = patch(client, tag, ops, f"h{i}", **extra)
        assert reply.status == 200, reply.data
        tag = reply.data["etag"]
    current = client.request("GET", doc_url()).data
    changes = history(client).data["changes"]
    assert [c["operation"] for c in changes] == ["patch"] * 4 + ["create"]
    assert fold(map(AuditRecord.from_json, reversed(changes))) == current["document"]


def test_history_records_spec_fields_and_derived_etags(client: ApiClient):
    first = create(client, evidence={"conversation_id": "c_1"}).data
    second = patch(
        client, first["etag"], [{"op": "add", "path": PREF, "value": {"text": "x"}}], "k2"
    )
    newest, oldest = history(client).data["changes"]
    assert newest["pre_etag"] == first["etag"] and newest["post_etag"] == second.data["etag"]
    assert oldest["pre_etag"] is None and oldest["post_etag"] == first["etag"]
    assert oldest["evidence"] == {"conversation_id": "c_1"}
    for field in (
        "actor",
        "tenant_id",
        "user_id",
        "timestamp",
        "binding_id",
        "path",
        "ops_sha256",
        "reason",
        "change_id",
        "request_id",
    ):
        assert newest[field], field
    assert newest["reason"] == "live_update" and newest["actor"] == "dev-agent"


def test_admin_replace_is_folded_from_its_full_body(client: ApiClient, admin: ApiClient):
    tag = create(client).data["etag"]
    content = {"preferences": [{"text": "only"}], "durable_facts": [], "pending_confirmations": []}
    reply = admin.request(
        "PUT", doc_url(), {"content": content}, {"If-Match": tag, "Idempotency-Key": "put"}
    )
    assert reply.status == 200
    changes = history(client).data["changes"]
    assert changes[0]["operation"] == "replace" and changes[0]["reason"] == "admin_migration"
    assert fold(map(AuditRecord.from_json, reversed(changes))) == reply.data["document"]


def test_rejected_writes_leave_no_audit_record(client: ApiClient):
    tag = create(client).data["etag"]
    patch(client, tag, [{"op": "add", "path": "/content/x", "value": 1}], "bad")
    patch(client, '"0xSTALE"', [{"op": "add", "path": PREF, "value": 1}], "stale")
    assert len(history(client).data["changes"]) == 1


def test_history_limit_is_bounded(client: ApiClient):
    create(client)
    assert history(client, query="?limit=0").status == 400
    assert history(client, query="?limit=%C2%B2").status == 400
    assert history(client, query="?limit=1").data["next_before"] is None


def test_history_pages_with_next_before(client: ApiClient):
    tag = create(client).data["etag"]
    for i in range(4):
        ops = [{"op": "add", "path": PREF, "value": {"text": str(i)}}]
        tag = patch(client, tag, ops, f"k{i}").data["etag"]
    everything = history(client).data["changes"]
    pages, query = [], "?limit=2"
    while True:
        page = history(client, query=query).data
        pages.extend(page["changes"])
        if page["next_before"] is None:
            break
        query = f"?limit=2&before={page['next_before']}"
    assert pages == everything and len(pages) == 5
    assert history(client, query="?before=chg_" + "0" * 28).error_code == "INVALID_QUERY"
    assert history(client, query="?before=nope").error_code == "INVALID_QUERY"
