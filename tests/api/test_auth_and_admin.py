"""Callers (401/403), admin-only PUT, identifiers, bad input and health."""

from __future__ import annotations

import pytest

from memnet.bootstrap import Services
from tests.api.test_documents import create
from tests.clients import ApiClient
from tests.conftest import ADMIN_KEY, PRIVACY_KEY, doc_url

CONTENT = {"profile": {"display_name": "Ada"}}


def put(
    client: ApiClient,
    headers: dict[str, str],
    content: object = CONTENT,
    url: str = doc_url("user/user_static.json"),
    **body: object,
):
    return client.request(
        "PUT", url, {"content": content, **body}, {"Idempotency-Key": "put-1", **headers}
    )


def test_missing_or_bad_key_is_401(client: ApiClient):
    assert client.as_key(None).request("GET", doc_url()).status == 401
    reply = client.as_key("wrong").request("GET", doc_url())
    assert reply.status == 401 and reply.error_code == "UNAUTHENTICATED"
    assert reply.headers["www-authenticate"].startswith("Bearer")


def test_put_requires_admin_role(client: ApiClient):
    reply = put(client, {"If-None-Match": "*"})
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"


def test_admin_put_creates_then_replaces_with_if_match(admin: ApiClient):
    created = put(admin, {"If-None-Match": "*"})
    assert created.status == 201
    assert created.data["document"]["content"] == CONTENT
    assert created.data["document"]["updated_by"] == "dev-admin"
    replaced = admin.request(
        "PUT",
        doc_url("user/user_static.json"),
        {"content": {"profile": {"locale": "nb"}}},
        {"If-Match": created.data["etag"], "Idempotency-Key": "put-2"},
    )
    assert replaced.status == 200
    assert replaced.data["document"]["doc_id"] == created.data["document"]["doc_id"]
    assert replaced.data["document"]["content"] == {"profile": {"locale": "nb"}}


def test_put_validates_schema(admin: ApiClient):
    reply = put(admin, {"If-None-Match": "*"}, content={"unexpected": 1})
    assert reply.status == 422 and reply.error_code == "SCHEMA_VIOLATION"


def test_binding_without_writable_rules_refuses_patch(client: ApiClient):
    reply = create(
        client,
        doc_url("user/user_static.json"),
        [{"op": "add", "path": "/content/profile/locale", "value": "nb"}],
    )
    assert reply.status == 422 and reply.error_code == "PATH_NOT_WRITABLE"


def test_profile_outside_callers_profiles_is_403(client: ApiClient):
    reply = client.request("GET", doc_url() + "?profile_id=other-profile")
    assert reply.status == 403 and reply.error_code == "PROFILE_FORBIDDEN"


def test_unknown_profile_is_404(admin: ApiClient):
    reply = admin.request("GET", doc_url() + "?profile_id=nope-v1")
    assert reply.status == 404 and reply.error_code == "PROFILE_NOT_FOUND"


def test_binding_id_that_does_not_cover_path_is_422(client: ApiClient):
    reply = create(client, binding_id="project_doc")
    assert reply.status == 422 and reply.error_code == "BINDING_MISMATCH"


@pytest.mark.parametrize(
    "path",
    [
        "/v1/tenants/t%2F1/users/u1/documents/user/user_dynamic.json",
        "/v1/tenants/t1/users/.u1/documents/user/user_dynamic.json",
        "/v1/tenants/t1/users/u1/documents/user/..%2Fx.json",
        "/v1/tenants/t1/users/u1/documents/user/a%00b.json",
        "/v1/tenants/t1/users/u1/documents/user/user_dynamic.txt",
        "/v1/tenants/t1/users/u1/documents/user/a%5Cb.json",
        "/v1/tenants/t1/users/u1/documents/user/a//b.json",
        "/v1/tenants/" + "t" * 129 + "/users/u1/documents/user/user_dynamic.json",
    ],
)
def test_bad_identifiers_are_400(client: ApiClient, path: str):
    reply = client.request("GET", path)
    assert reply.status == 400, reply.data
    assert reply.error_code in {"INVALID_IDENTIFIER", "INVALID_PATH"}


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{not json", "MALFORMED_JSON"),
        (b"[1]", "MALFORMED_JSON"),
        (b'{"ops": [], "surprise": 1}', "UNKNOWN_FIELD"),
        (b'{"ops": {"op": "add"}}', "INVALID_PATCH"),
        (b'{"ops": [{"op": "spam", "path": "/content"}]}', "INVALID_PATCH"),
        (b'{"ops": [{"op": "add", "path": "content/x", "value": 1}]}', "INVALID_PATCH"),
        (b'{"ops": [{"op": "add", "path": "/content/x"}]}', "INVALID_PATCH"),
        (b'{"ops": [], "confidence": 2}', "INVALID_FIELD"),
        (b'{"ops": [], "confidence": true}', "INVALID_FIELD"),
        (b'{"ops": [], "reason": "because"}', "INVALID_FIELD"),
        (b'{"ops": [], "evidence": "m1"}', "INVALID_FIELD"),
        (b"{}", "MISSING_FIELD"),
    ],
)
def test_malformed_patch_bodies_are_400_and_change_nothing(
    client: ApiClient, raw: bytes, code: str
):
    reply = client.request(
        "PATCH", doc_url(), raw=raw, headers={"If-None-Match": "*", "Idempotency-Key": "k"}
    )
    assert reply.status == 400 and reply.error_code == code, reply.data
    assert client.request("GET", doc_url()).status == 404


def test_oversized_body_is_413(client: ApiClient):
    raw = b'{"ops": [], "evidence": {"x": "' + b"a" * 1_100_000 + b'"}}'
    reply = client.request(
        "PATCH", doc_url(), raw=raw, headers={"If-None-Match": "*", "Idempotency-Key": "k"}
    )
    assert reply.status == 413 and reply.error_code == "PAYLOAD_TOO_LARGE"


def test_health_needs_no_key_and_says_only_that_the_app_is_up(client: ApiClient):
    reply = client.as_key(None).request("GET", "/v1/health")
    assert reply.status == 200 and reply.data == {"status": "ok"}


def test_health_details_name_backends_for_an_admin(client: ApiClient, services: Services):
    reply = client.as_key(ADMIN_KEY).request("GET", "/v1/health/details")
    assert reply.status == 200
    storage, queue = {
        "azure": ("azure blob container", "azure storage queues"),
        "memory": ("memory (lost on exit)", "memory queue (lost on exit)"),
        "local": ("local files", "sqlite queue"),
    }[services.settings.storage]
    assert reply.data["storage"].startswith(storage)
    assert reply.data["queue"].startswith(queue)
    assert reply.data["search"].startswith("sqlite search index")
    assert reply.data["auth"].startswith("api keys")
    assert reply.data["profiles"] == ["project-copilot-v1"]


@pytest.mark.parametrize(("key", "status"), [(None, 401), (PRIVACY_KEY, 403)])
def test_health_details_need_an_admin_or_debug_caller(client: ApiClient, key, status):
    reply = client.as_key(key).request("GET", "/v1/health/details")
    assert reply.status == status and reply.data["error"]["request_id"]


def test_health_details_show_no_storage_paths(client: ApiClient, services: Services):
    reply = client.as_key(ADMIN_KEY).request("GET", "/v1/health/details")
    text = reply.body.decode()
    assert str(services.settings.data_dir) not in text
    assert str(services.settings.data_dir.resolve()) not in text


@pytest.mark.parametrize(
    "raw",
    [
        b'{"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": "\\ud800"}}]}',
        b'{"\\ud800": 1, "ops": []}',
        b'{"ops": [{"op": "add", "path": "/content/preferences/-", "value": NaN}]}',
        b'{"ops": [], "confidence": Infinity}',
        b'{"ops": [{"op": "add", "path": "/content/preferences/-", "value": 1e999}]}',
        b'{"ops": [{"op": "add", "path": "/content/preferences/-", "value": '
        + b"[" * 70
        + b"]" * 70
        + b"}]}",
        b'{"ops": [{"op": "add", "path": "/content/preferences/-", "value": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}]}",
    ],
    ids=["surrogate", "surrogate-key", "nan", "infinity", "overflow", "deep", "very-deep"],
)
def test_json_that_cannot_be_stored_faithfully_is_400(client: ApiClient, raw: bytes):
    reply = client.request(
        "PATCH", doc_url(), raw=raw, headers={"If-None-Match": "*", "Idempotency-Key": "k"}
    )
    assert reply.status == 400 and reply.error_code == "MALFORMED_JSON", reply.data
    assert reply.data["error"]["request_id"] == reply.headers["x-request-id"]
    assert client.request("GET", doc_url()).status == 404
