"""The document API through the real functions, directly and over HTTP (spec 10.1-10.3)."""

from __future__ import annotations

from typing import Any

from tests.clients import ApiClient, Reply
from tests.conftest import doc_url

PREF = "/content/preferences/-"


def create(
    client: ApiClient,
    url: str = doc_url(),
    ops: list[Any] | None = None,
    key: str = "create-1",
    **body: Any,
) -> Reply:
    ops = ops if ops is not None else [{"op": "add", "path": PREF, "value": {"text": "Be brief."}}]
    return client.request(
        "PATCH", url, {"ops": ops, **body}, {"If-None-Match": "*", "Idempotency-Key": key}
    )


def patch(
    client: ApiClient, etag: str, ops: list[Any], key: str, url: str = doc_url(), **body: Any
) -> Reply:
    return client.request(
        "PATCH", url, {"ops": ops, **body}, {"If-Match": etag, "Idempotency-Key": key}
    )


def test_create_with_if_none_match_applies_ops_to_the_initial_document(client: ApiClient):
    reply = create(client)
    assert reply.status == 201
    document = reply.data["document"]
    assert document["content"]["preferences"] == [{"text": "Be brief."}]
    assert document["content"]["durable_facts"] == []
    assert document["updated_by"] == "dev-agent"
    assert reply.headers["etag"] == reply.data["etag"]


def test_get_returns_document_and_etag_header(client: ApiClient):
    created = create(client)
    reply = client.request("GET", doc_url())
    assert reply.status == 200
    assert reply.data == {"etag": created.data["etag"], "document": created.data["document"]}
    assert reply.headers["etag"] == created.data["etag"]


def test_patch_changes_etag_and_sets_updated_fields(client: ApiClient):
    first = create(client).data
    reply = patch(
        client,
        first["etag"],
        [
            {
                "op": "replace",
                "path": "/content/preferences/0",
                "value": {"text": "Use concise, direct answers."},
            }
        ],
        "p-1",
    )
    assert reply.status == 200
    assert reply.data["etag"] != first["etag"]
    assert reply.data["document"]["content"]["preferences"] == [
        {"text": "Use concise, direct answers."}
    ]
    assert reply.data["document"]["created_at"] == first["document"]["created_at"]
    assert reply.data["document"]["doc_id"] == first["document"]["doc_id"]


def test_stale_if_match_returns_412_with_latest_etag(client: ApiClient):
    first = create(client).data
    second = patch(
        client, first["etag"], [{"op": "add", "path": PREF, "value": {"text": "x"}}], "p-1"
    )
    stale = patch(
        client, first["etag"], [{"op": "add", "path": PREF, "value": {"text": "y"}}], "p-2"
    )
    assert stale.status == 412
    assert stale.error_code == "ETAG_MISMATCH"
    assert stale.data["error"]["details"]["latest_etag"] == second.data["etag"]
    assert client.request("GET", doc_url()).data["etag"] == second.data["etag"]


def test_create_when_document_exists_returns_412(client: ApiClient):
    create(client)
    again = create(client, key="create-2")
    assert again.status == 412 and again.error_code == "ETAG_MISMATCH"


def test_missing_precondition_returns_428(client: ApiClient):
    reply = client.request("PATCH", doc_url(), {"ops": []}, {"Idempotency-Key": "k"})
    assert reply.status == 428 and reply.error_code == "PRECONDITION_REQUIRED"


def test_missing_idempotency_key_returns_400(client: ApiClient):
    reply = client.request("PATCH", doc_url(), {"ops": []}, {"If-None-Match": "*"})
    assert reply.status == 400 and reply.error_code == "IDEMPOTENCY_KEY_REQUIRED"


def test_same_key_same_request_returns_stored_response_even_after_changes(client: ApiClient):
    first = create(client).data
    ops = [{"op": "add", "path": PREF, "value": {"text": "x"}}]
    original = patch(client, first["etag"], ops, "p-1")
    patch(
        client, original.data["etag"], [{"op": "add", "path": PREF, "value": {"text": "y"}}], "p-2"
    )
    again = patch(client, first["etag"], ops, "p-1")
    assert again.status == 200
    assert again.data == original.data
    assert again.headers["idempotent-replayed"] == "true"
    prefs = client.request("GET", doc_url()).data["document"]["content"]["preferences"]
    assert [p["text"] for p in prefs] == ["Be brief.", "x", "y"]


def test_same_key_different_payload_returns_409(client: ApiClient):
    first = create(client).data
    patch(client, first["etag"], [{"op": "add", "path": PREF, "value": {"text": "x"}}], "p-1")
    reused = patch(
        client, first["etag"], [{"op": "add", "path": PREF, "value": {"text": "z"}}], "p-1"
    )
    assert reused.status == 409 and reused.error_code == "IDEMPOTENCY_KEY_REUSED"


def test_failed_request_releases_its_key_for_a_corrected_retry(client: ApiClient):
    first = create(client).data
    bad = patch(client, first["etag"], [{"op": "add", "path": "/content/nope", "value": 1}], "k")
    assert bad.status == 422
    fixed = patch(
        client, first["etag"], [{"op": "add", "path": PREF, "value": {"text": "ok"}}], "k"
    )
    assert fixed.status == 200


def test_unknown_document_returns_404_document_not_found(client: ApiClient):
    reply = client.request("GET", doc_url())
    assert reply.status == 404 and reply.error_code == "DOCUMENT_NOT_FOUND"


def test_path_no_binding_covers_returns_404_binding_not_found(client: ApiClient):
    reply = client.request("GET", doc_url("user/other.json"))
    assert reply.status == 404 and reply.error_code == "BINDING_NOT_FOUND"


def test_path_template_binding_serves_project_documents(client: ApiClient):
    url = doc_url("projects/project-alpha.json")
    ops = [{"op": "replace", "path": "/content/summary", "value": "Retrieval latency work."}]
    reply = create(client, url, ops)
    assert reply.status == 201
    assert reply.data["document"]["schema_id"] == "memory.project"


def test_url_encoded_path_is_decoded_once(client: ApiClient):
    create(
        client,
        doc_url("projects/alpha.json"),
        [{"op": "replace", "path": "/content/summary", "value": "s"}],
    )
    assert client.request("GET", doc_url("projects/alpha%2Ejson")).status == 200
    assert client.request("GET", doc_url("projects/alpha%252Ejson")).status == 400


def test_error_payload_has_spec_shape_and_request_id_header(client: ApiClient):
    reply = client.request("GET", doc_url())
    error = reply.data["error"]
    assert set(error) == {"code", "message", "request_id", "details"}
    assert error["request_id"] == reply.headers["x-request-id"]
    assert error["request_id"].startswith("req_")
