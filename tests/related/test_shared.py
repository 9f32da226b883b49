"""Documents a tenant shares (issue 15, capability 1; docs/profiles.md "Shared
documents"): soorma-coala-v1's knowledge base (scope tenant) beside each user's private
semantic knowledge, on both backends and transports. No route crosses tenants or reaches
another user's private entries; forgetting a user leaves the shared document."""

from __future__ import annotations

from typing import Any

import pytest

from memnet.domain.callers import Caller
from memnet.domain.document_model import WriteCommand
from memnet.domain.errors import Forbidden
from memnet.domain.layout import SHARED_OWNER, DocumentRef, SnapshotRef, user_prefix
from memnet.services.replay.writes import replay_caller
from tests.api.forgetting import drain_forget
from tests.clients import ApiClient, Reply
from tests.related.conftest import ADMIN_KEY, PRIVACY_KEY, World, command


def url(user: str, where: str, tenant: str = "t1") -> str:
    return f"/v1/tenants/{tenant}/users/{user}/documents/{where}"


def add(client: ApiClient, user: str, where: str, text: str, key: str, tenant: str = "t1") -> Reply:
    current = client.request("GET", url(user, where, tenant))
    precondition = (
        {"If-Match": current.headers["etag"]} if current.status == 200 else {"If-None-Match": "*"}
    )
    section = "knowledge"
    op = {"op": "add", "path": f"/content/{section}/-", "value": {"content": text}}
    return client.request(
        "PATCH", url(user, where, tenant), {"ops": [op]}, {**precondition, "Idempotency-Key": key}
    )


SHARED, PRIVATE = "knowledge/base.json", "semantic/knowledge.json"


def texts(reply: Reply) -> list[str]:
    assert reply.status == 200, reply.data
    return [k["content"] for k in reply.data["document"]["content"]["knowledge"]]


def test_every_user_of_the_tenant_reads_one_shared_document(soorma: ApiClient, related: World):
    assert add(soorma, "u1", SHARED, "Refunds take 5 days.", "k1").status == 201
    assert add(soorma, "u2", SHARED, "Billing runs on the 1st.", "k2").status == 200
    one, two = soorma.request("GET", url("u1", SHARED)), soorma.request("GET", url("u2", SHARED))
    assert texts(one) == texts(two) == ["Refunds take 5 days.", "Billing runs on the 1st."]
    assert one.headers["etag"] == two.headers["etag"]
    names = list(related.services.blobs.list_names("tenants/t1/"))
    assert f"{user_prefix('t1', SHARED_OWNER)}documents/knowledge/base.json" in names
    assert not [n for n in names if n.startswith(user_prefix("t1", "u1") + "documents/")]
    history = soorma.request("GET", url("u2", SHARED) + ":history").data["changes"]
    assert [c["actor"] for c in history] == ["soorma-agent", "soorma-agent"]


def test_private_entries_stay_with_their_user(soorma: ApiClient):
    assert add(soorma, "u1", PRIVATE, "u1's own note", "p1").status == 201
    assert soorma.request("GET", url("u2", PRIVATE)).status == 404
    assert soorma.request("GET", url("u1", PRIVATE) + ":history").status == 200
    assert soorma.request("GET", url("u2", PRIVATE) + ":history").status == 404
    listing = soorma.request("GET", "/v1/tenants/t1/users/u2/documents/semantic/")
    assert listing.data["documents"] == []


def test_no_route_crosses_tenants(soorma: ApiClient):
    assert add(soorma, "u1", SHARED, "t1 only", "k1").status == 201
    assert soorma.request("GET", url("u1", SHARED, tenant="t2")).status == 404
    listed = soorma.request("GET", "/v1/tenants/t2/users/u1/documents/knowledge/")
    assert listed.data["documents"] == []
    both = soorma.request("GET", "/v1/tenants/t1/users/u9/documents/knowledge/")
    assert [d["path"] for d in both.data["documents"]] == ["base.json"]
    context = soorma.request("POST", "/v1/tenants/t2/users/u1/context:assemble", {})
    assert "knowledge" not in [d["binding_id"] for d in context.data["documents"]]


def test_context_assembly_gives_shared_and_private_together(soorma: ApiClient):
    add(soorma, "u1", SHARED, "Shared fact", "k1")
    add(soorma, "u2", PRIVATE, "u2's fact", "p2")
    reply = soorma.request("POST", "/v1/tenants/t1/users/u2/context:assemble", {})
    assert reply.status == 200, reply.data
    found = {d["binding_id"]: d for d in reply.data["documents"]}
    assert set(found) >= {"knowledge", "semantic"}
    other = soorma.request("POST", "/v1/tenants/t1/users/u3/context:assemble", {})
    assert [d["binding_id"] for d in other.data["documents"]] == ["knowledge"]


def test_forgetting_a_user_leaves_the_shared_document(soorma: ApiClient, related: World):
    add(soorma, "u1", SHARED, "Shared fact", "k1")
    add(soorma, "u1", PRIVATE, "Private fact", "p1")
    privacy = soorma.as_key(PRIVACY_KEY)
    assert privacy.request("DELETE", "/v1/tenants/t1/users/u1").status == 202
    drain_forget(related.services)
    assert texts(soorma.request("GET", url("u2", SHARED))) == ["Shared fact"]
    assert not list(related.services.blobs.list_names(user_prefix("t1", "u1") + "documents/"))


def _command(ref: DocumentRef) -> WriteCommand:
    op: dict[str, Any] = {"op": "add", "path": "/content/knowledge/-", "value": {"content": "x"}}
    return command(ref, "soorma-coala-v1", [op])


def test_a_users_own_token_reads_but_never_changes_shared_documents(related: World):
    user_token = Caller(
        "u1-app",
        frozenset({"t1"}),
        frozenset({"soorma-coala-v1"}),
        frozenset({"read", "write"}),
        user_id="u1",
    )
    ref = DocumentRef("t1", "u1", "knowledge", "base.json")
    with pytest.raises(Forbidden) as refused:
        related.services.documents.patch(user_token, _command(ref))
    assert refused.value.code == "USER_FORBIDDEN"
    own = related.services.documents.patch(
        user_token, _command(DocumentRef("t1", "u1", "semantic", "knowledge.json"))
    )
    assert own.created is True


def test_one_idempotency_key_through_two_users_paths_is_two_requests(soorma: ApiClient):
    op = {"op": "add", "path": "/content/knowledge/-", "value": {"content": "same"}}
    first = soorma.request(
        "PATCH", url("u1", SHARED), {"ops": [op]}, {"If-None-Match": "*", "Idempotency-Key": "m1"}
    )
    assert first.status == 201, first.data
    again = soorma.request(
        "PATCH", url("u1", SHARED), {"ops": [op]}, {"If-None-Match": "*", "Idempotency-Key": "m1"}
    )
    assert again.status == 201 and again.headers.get("idempotent-replayed") == "true"
    other = soorma.request(
        "PATCH",
        url("u2", SHARED),
        {"ops": [op]},
        {"If-Match": first.data["etag"], "Idempotency-Key": "m1"},
    )
    assert other.status == 200, other.data  # not 409 IDEMPOTENCY_KEY_REUSED


def test_a_shared_documents_history_hides_whose_conversations_taught_it(soorma: ApiClient):
    op = {"op": "add", "path": "/content/knowledge/-", "value": {"content": "fact"}}
    body = {"ops": [op], "evidence": {"conversation_id": "u1-private-chat"}}
    made = soorma.request(
        "PATCH", url("u1", SHARED), body, {"If-None-Match": "*", "Idempotency-Key": "e1"}
    )
    assert made.status == 201, made.data
    (change,) = soorma.request("GET", url("u2", SHARED) + ":history").data["changes"]
    assert change["actor"] == "soorma-agent"
    assert not {"evidence", "origin", "request_id"} & set(change)
    admin = soorma.as_key(ADMIN_KEY)
    seen = admin.request("GET", url("u2", SHARED) + ":history?profile_id=soorma-coala-v1")
    assert seen.data["changes"][0]["evidence"] == {"conversation_id": "u1-private-chat"}


def test_a_users_replay_never_writes_a_shared_document(related: World):
    replay = replay_caller(SnapshotRef("t1", "u1", "c1", "s1"), "soorma-coala-v1", None)
    with pytest.raises(Forbidden) as refused:
        related.services.documents.patch(
            replay, _command(DocumentRef("t1", "u1", "knowledge", "base.json"))
        )
    assert refused.value.code == "USER_FORBIDDEN"
