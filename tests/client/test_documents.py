"""Documents through the client against the real server: create, read, patch, replace,
history, and each error status mapped to its exception with the server's payload."""

from __future__ import annotations

import pytest
from memnet_client import (
    BadRequest,
    Forbidden,
    Gone,
    MemnetClient,
    NotFound,
    PreconditionFailed,
    Unauthorized,
    Unprocessable,
)
from memnet_client.errors import ApiError, ServerError, ServiceUnavailable, error_from_response

from tests.client.conftest import connect

DYNAMIC = ("user", "user_dynamic.json")
ADD = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "Use concise answers."}}]


def test_patch_without_etag_creates_and_get_returns_content_and_etag(memnet: MemnetClient):
    created = memnet.patch_document(*DYNAMIC, ADD, etag=None)
    assert created.created and created.document is not None
    read = memnet.get_document(*DYNAMIC)
    assert read.etag == created.etag
    assert read.content["preferences"] == [{"text": "Use concise answers."}]
    assert read.change_id and read.change_id.startswith("chg_")
    assert read.schema_id == "memory.user.dynamic" and read.raw["etag"] == read.etag


def test_patch_with_etag_updates_and_history_lists_both_changes(memnet: MemnetClient):
    first = memnet.patch_document(*DYNAMIC, ADD, etag=None)
    more = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "No emojis."}}]
    second = memnet.patch_document(*DYNAMIC, more, etag=first.etag, confidence=0.9)
    assert not second.created and second.etag != first.etag
    history = memnet.get_history(*DYNAMIC, limit=1)
    assert [c.operation for c in history.changes] == ["patch"]
    assert history.next_before is not None
    rest = memnet.get_history(*DYNAMIC, before=history.next_before)
    assert [c.operation for c in rest.changes] == ["create"] and rest.next_before is None


def test_patch_that_changes_nothing_says_unchanged(memnet: MemnetClient):
    first = memnet.patch_document(*DYNAMIC, ADD, etag=None)
    test_op = [
        {"op": "test", "path": "/content/preferences/0", "value": {"text": "Use concise answers."}}
    ]
    again = memnet.patch_document(*DYNAMIC, test_op, etag=first.etag)
    assert again.unchanged and again.etag == first.etag


def test_admin_puts_whole_content(admin: MemnetClient):
    content = {"preferences": [{"text": "a"}], "durable_facts": [], "pending_confirmations": []}
    created = admin.put_document(*DYNAMIC, {**content, "projects_index": []}, etag=None)
    replaced = admin.put_document(
        *DYNAMIC,
        {**content, "projects_index": [], "preferences": [{"text": "b"}]},
        etag=created.etag,
    )
    assert admin.get_document(*DYNAMIC).content["preferences"] == [{"text": "b"}]
    assert replaced.etag != created.etag


def test_missing_document_is_not_found_with_code_and_request_id(memnet: MemnetClient):
    with pytest.raises(NotFound) as caught:
        memnet.get_document(*DYNAMIC)
    error = caught.value
    assert (error.status, error.code) == (404, "DOCUMENT_NOT_FOUND")
    assert error.request_id and error.message


def test_stale_etag_is_precondition_failed_with_latest_etag(memnet: MemnetClient):
    first = memnet.patch_document(*DYNAMIC, ADD, etag=None)
    second = memnet.patch_document(*DYNAMIC, ADD, etag=first.etag)
    with pytest.raises(PreconditionFailed) as caught:
        memnet.patch_document(*DYNAMIC, ADD, etag=first.etag)
    assert caught.value.code == "ETAG_MISMATCH"
    assert caught.value.latest_etag == second.etag


def test_stale_etag_with_rebase_lands_on_the_latest_version(memnet: MemnetClient):
    first = memnet.patch_document(*DYNAMIC, ADD, etag=None)
    memnet.patch_document(*DYNAMIC, ADD, etag=first.etag)
    rebased = memnet.patch_document(*DYNAMIC, ADD, etag=first.etag, rebase=True)
    assert rebased.rebased_from == first.etag
    assert len(memnet.get_document(*DYNAMIC).content["preferences"]) == 3


def test_policy_violation_is_unprocessable_with_violations(memnet: MemnetClient):
    ops = [{"op": "add", "path": "/content/projects_index/-", "value": "alpha"}]
    with pytest.raises(Unprocessable) as caught:
        memnet.patch_document(*DYNAMIC, ops, etag=None)
    assert caught.value.status == 422 and caught.value.code == "PATH_NOT_WRITABLE"
    assert caught.value.violations[0]["op_index"] == 0


def test_unknown_key_is_unauthorized(http_server: str, memnet: MemnetClient):
    with connect(http_server, "not-a-key") as stranger, pytest.raises(Unauthorized) as caught:
        stranger.get_document(*DYNAMIC)
    assert (caught.value.status, caught.value.code) == (401, "UNAUTHENTICATED")


def test_missing_role_is_forbidden(privacy: MemnetClient):
    with pytest.raises(Forbidden) as caught:
        privacy.get_document(*DYNAMIC)
    assert caught.value.status == 403 and caught.value.code == "ROLE_FORBIDDEN"


def test_invalid_identifier_is_bad_request_and_cannot_escape_its_segment(memnet: MemnetClient):
    with pytest.raises(BadRequest) as caught:
        memnet.for_user("t1", "../u2").get_document(*DYNAMIC)
    assert caught.value.code == "INVALID_IDENTIFIER"


def test_a_client_without_user_says_so_before_any_request(http_server: str):
    with MemnetClient(http_server, api_key="k") as bare, pytest.raises(ValueError, match="user"):
        bare.get_document(*DYNAMIC)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (400, BadRequest),
        (410, Gone),
        (412, PreconditionFailed),
        (418, ApiError),
        (500, ServerError),
        (503, ServiceUnavailable),
    ],
)
def test_every_status_maps_to_its_class_even_without_a_json_body(status: int, expected: type):
    import httpx

    response = httpx.Response(status, text="<html>proxy</html>", headers={"x-request-id": "r1"})
    error = error_from_response(response)
    assert type(error) is expected and error.request_id == "r1"
    assert error.code == f"HTTP_{status}"
