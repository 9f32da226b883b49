"""A PATCH reports its own violation on a document that was valid, and a document
changed behind the service's back is validated whole, even when its ETag did not
change (every write validates the whole document)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from tests.api.test_documents import create, patch
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, doc_url, make_settings

PREFS = [{"op": "add", "path": "/content/preferences/-", "value": {"text": v}} for v in ("a", "b")]
STORED = "memnet/tenants/t1/users/u1/documents/user/user_dynamic.json"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[DirectClient]:
    bootstrap.install(bootstrap.build(make_settings(tmp_path / "data")))
    yield DirectClient(AGENT_KEY)
    bootstrap.install(None)


def test_patch_of_a_validated_document_still_reports_its_own_violation(client: DirectClient):
    etag = create(client, ops=PREFS).data["etag"]
    ops = [{"op": "replace", "path": "/content/preferences/1", "value": {"text": ""}}]
    reply = patch(client, etag, ops, "k2")
    assert reply.status == 422 and reply.error_code == "SCHEMA_VIOLATION"
    assert [v["path"] for v in reply.data["error"]["details"]["violations"]] == [
        "/content/preferences/1/text"
    ]


def test_document_edited_in_place_is_validated_whole(client: DirectClient, tmp_path: Path):
    etag = create(client, ops=PREFS).data["etag"]
    stored = tmp_path / "data" / STORED
    document = json.loads(stored.read_bytes())
    document["content"]["preferences"][0] = ""  # violates minLength, keeps the ETag
    with stored.open("r+b") as file:  # the same inode, so the same ETag attribute
        file.write(json.dumps(document, separators=(",", ":")).encode())
        file.truncate()
    assert client.request("GET", doc_url()).data["etag"] == etag
    ops = [{"op": "replace", "path": "/content/preferences/1", "value": {"text": "c"}}]
    reply = patch(client, etag, ops, "k2")
    assert reply.status == 422 and reply.error_code == "SCHEMA_VIOLATION"
    assert [v["path"] for v in reply.data["error"]["details"]["violations"]] == [
        "/content/preferences/0"
    ]
