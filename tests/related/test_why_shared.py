"""``:why`` of a document the tenant shares (issue 27 item 4; docs/profiles.md "Shared
documents"): like its history, it tells every user who changed the value and when, and
only admins what it was learned from (the evidence and origin name a user's conversation)."""

from __future__ import annotations

from tests.clients import ApiClient
from tests.related.conftest import ADMIN_KEY
from tests.related.test_shared import SHARED, url


def test_a_shared_documents_why_hides_whose_conversation_taught_it(soorma: ApiClient):
    op = {"op": "add", "path": "/content/knowledge/-", "value": {"content": "fact"}}
    body = {"ops": [op], "evidence": {"conversation_id": "u1-private-chat"}, "confidence": 0.9}
    made = soorma.request(
        "PATCH", url("u1", SHARED), body, {"If-None-Match": "*", "Idempotency-Key": "e1"}
    )
    assert made.status == 201, made.data
    seen = soorma.request("GET", url("u2", SHARED) + ":why?path=/knowledge/0")
    assert seen.status == 200, seen.data
    (change,) = seen.data["changes"]
    assert change["actor"] == "soorma-agent" and change["role"] == "origin"
    assert change["confidence"] == 0.9 and change["ops"][0]["value"] == {"content": "fact"}
    assert not {"evidence", "origin", "request_id"} & set(change)
    admin = soorma.as_key(ADMIN_KEY)
    query = ":why?path=/knowledge/0&profile_id=soorma-coala-v1"
    (full,) = admin.request("GET", url("u2", SHARED) + query).data["changes"]
    assert full["evidence"] == {"conversation_id": "u1-private-chat"}
    assert full["change_id"] == change["change_id"]


def test_context_provenance_of_a_shared_document_hides_evidence_too(soorma: ApiClient):
    op = {"op": "add", "path": "/content/knowledge/-", "value": {"content": "fact"}}
    body = {"ops": [op], "evidence": {"conversation_id": "u1-private-chat"}}
    headers = {"If-None-Match": "*", "Idempotency-Key": "e1"}
    assert soorma.request("PATCH", url("u1", SHARED), body, headers).status == 201
    assembled = soorma.request(
        "POST", "/v1/tenants/t1/users/u2/context:assemble", {"provenance": True}
    )
    assert assembled.status == 200, assembled.data
    (shared,) = [p for p in assembled.data["provenance"] if p["path"] == "base.json"]
    origin = shared["items"]["/knowledge/0"]
    assert origin["actor"] == "soorma-agent" and not {"evidence", "origin"} & set(origin)
