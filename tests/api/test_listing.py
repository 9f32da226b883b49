"""Listing a namespace's documents, ``GET …/documents/{namespace}/`` (issue 15,
capability 2), on both backends and both transports: paged in path order, each item's
ETag the document's own, nothing of another user or tenant, no audit or idempotency
blob, authorised as reading a document."""

from __future__ import annotations

from typing import Any

from memnet.services.documents.listing import encode_token
from tests.api.test_documents import PREF, create, patch
from tests.clients import ApiClient, Reply
from tests.conftest import PRIVACY_KEY, doc_url

PROJECTS = ("alpha", "beta", "delta", "epsilon", "gamma")


def listing(
    client: ApiClient,
    namespace: str = "projects",
    query: str = "",
    tenant: str = "t1",
    user: str = "u1",
) -> Reply:
    return client.request("GET", f"/v1/tenants/{tenant}/users/{user}/documents/{namespace}/{query}")


def make_projects(
    client: ApiClient, names: tuple[str, ...] = PROJECTS, **where: str
) -> dict[str, Any]:
    etags = {}
    for name in names:
        url = doc_url(f"projects/{name}.json", **where)
        ops = [{"op": "replace", "path": "/content/summary", "value": name}]
        reply = create(client, url, ops, key=f"make-{name}")
        assert reply.status == 201, reply.data
        etags[f"{name}.json"] = reply.data["etag"]
    return etags


def test_an_empty_namespace_lists_nothing(client: ApiClient):
    reply = listing(client)
    assert reply.status == 200, reply.data
    assert reply.data == {"documents": [], "continuation": None}


def test_pages_follow_the_continuation_in_path_order(client: ApiClient):
    etags = make_projects(client)
    seen, token, pages = [], None, 0
    while True:
        query = "?limit=2" + (f"&continuation={token}" if token else "")
        reply = listing(client, query=query)
        assert reply.status == 200, reply.data
        assert len(reply.data["documents"]) <= 2
        seen += reply.data["documents"]
        pages += 1
        token = reply.data["continuation"]
        if token is None:
            break
    assert pages == 3
    assert [d["path"] for d in seen] == sorted(etags)
    assert {d["path"]: d["etag"] for d in seen} == etags
    assert {d["binding_id"] for d in seen} == {"project_doc"}


def test_each_etag_is_the_documents_get_etag_and_updated_at_moves_with_a_patch(client: ApiClient):
    created = create(client).data
    (first,) = listing(client, "user").data["documents"]
    got = client.request("GET", doc_url())
    assert first == {
        "path": "user_dynamic.json",
        "etag": got.headers["etag"],
        "updated_at": got.data["document"]["updated_at"],
        "binding_id": "user_dynamic",
    }
    changed = patch(
        client, created["etag"], [{"op": "add", "path": PREF, "value": {"text": "x"}}], "p2"
    )
    (second,) = listing(client, "user").data["documents"]
    assert second["etag"] == changed.data["etag"] != first["etag"]
    assert second["updated_at"] == changed.data["document"]["updated_at"]
    assert second["updated_at"] > first["updated_at"]


def test_the_trailing_slash_is_optional(client: ApiClient):
    make_projects(client, ("alpha",))
    reply = client.request("GET", "/v1/tenants/t1/users/u1/documents/projects")
    assert reply.status == 200 and [d["path"] for d in reply.data["documents"]] == ["alpha.json"]


def test_another_users_and_another_tenants_documents_are_never_listed(client: ApiClient):
    make_projects(client, ("mine",))
    make_projects(client, ("theirs",), user="u10")
    make_projects(client, ("other",), tenant="t10")
    make_projects(client, ("other2",), tenant="t2", user="u1")
    reply = listing(client)
    assert [d["path"] for d in reply.data["documents"]] == ["mine.json"]
    assert [d["path"] for d in listing(client, user="u10").data["documents"]] == ["theirs.json"]


def test_history_audit_and_idempotency_blobs_are_not_listed(client: ApiClient):
    created = create(client).data
    patch(client, created["etag"], [{"op": "add", "path": PREF, "value": {"text": "y"}}], "p3")
    assert client.request("GET", doc_url() + ":history").data["changes"]
    reply = listing(client, "user")
    assert [d["path"] for d in reply.data["documents"]] == ["user_dynamic.json"]


def test_a_caller_without_read_is_refused(client: ApiClient):
    reply = listing(client.as_key(PRIVACY_KEY))
    assert reply.status == 403 and reply.data["error"]["code"] == "ROLE_FORBIDDEN"


def test_a_namespace_without_a_binding_is_404(client: ApiClient):
    reply = listing(client, "nowhere")
    assert reply.status == 404, reply.data
    assert reply.data["error"]["code"] == "BINDING_NOT_FOUND"
    assert reply.data["error"]["details"]["namespace"] == "nowhere"


def test_a_bad_limit_or_continuation_is_400(client: ApiClient):
    for query in ("?limit=0", "?limit=101", "?limit=x", "?continuation=%21", "?continuation=abc"):
        reply = listing(client, query=query)
        assert reply.status == 400, (query, reply.data)
        assert reply.data["error"]["code"] == "INVALID_QUERY"
    assert listing(client, "bad%20ns").status == 400


def test_a_continuation_of_another_namespace_is_400(client: ApiClient):
    make_projects(client, ("a", "b"))
    token = listing(client, query="?limit=1").data["continuation"]
    assert token
    reply = listing(client, "user", query=f"?continuation={token}")
    assert reply.status == 400 and reply.data["error"]["details"]["location"] == [
        "query",
        "continuation",
    ]


def test_a_listing_takes_no_writes(client: ApiClient):
    url = "/v1/tenants/t1/users/u1/documents/projects/"
    reply = client.request(
        "PATCH", url, {"ops": []}, {"If-None-Match": "*", "Idempotency-Key": "w"}
    )
    assert reply.status == 405 and reply.headers["allow"] == "GET"


def test_a_forged_storage_marker_is_400_or_a_page_never_500(client: ApiClient):
    make_projects(client, ("a", "b"))
    for marker in ("garbage", "tenants/t2/users/u1/documents/projects/", "2!88!bm9wZQ--"):
        reply = listing(client, query=f"?continuation={encode_token('projects', marker)}")
        assert reply.status in (200, 400), (marker, reply.data)
        if reply.status == 200:
            assert {d["path"] for d in reply.data["documents"]} <= {"a.json", "b.json"}
