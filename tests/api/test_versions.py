"""Point-in-time reads (issue 27 item 1; docs/decisions.md "Versions of a document"):
``GET {document}?as_of=`` answers the document as it was after a change, or at an
instant, folded through the version cache; what retention or a retraction removed stays
gone."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from memnet.domain.audit_records import change_time
from memnet.domain.timestamps import format_millis
from memnet.services.documents import versions as versions_module
from memnet.services.documents.versions import CHECKPOINT_EVERY
from tests.api.test_documents import create, patch
from tests.clients import ApiClient
from tests.conftest import doc_url


def as_of(client: ApiClient, at: str, url: str = doc_url()):
    return client.request("GET", f"{url}?as_of={quote(at)}")


def written(client: ApiClient, n: int) -> list[tuple[str, dict]]:
    """``n`` changes after the create; each change id with the document it produced."""
    reply = create(client).data
    versions = [(reply["document"]["change_id"], reply["document"])]
    tag = reply["etag"]
    for i in range(n):
        op = {"op": "replace", "path": "/content/preferences/0", "value": {"text": f"p{i}"}}
        reply = patch(client, tag, [op], f"v{i}")
        assert reply.status == 200, reply.data
        tag = reply.data["etag"]
        versions.append((reply.data["document"]["change_id"], reply.data["document"]))
    return versions


def test_every_version_reads_as_it_was_written_across_checkpoints(client: ApiClient):
    versions = written(client, 2 * CHECKPOINT_EVERY + 3)
    latest = client.request("GET", doc_url()).data["etag"]
    for change_id, document in versions[::-1] + versions[::7]:  # cache built, then used
        reply = as_of(client, change_id)
        assert reply.status == 200, reply.data
        assert reply.data == {"change_id": change_id, "latest_etag": latest, "document": document}


def test_an_instant_reads_the_newest_version_committed_by_then(client: ApiClient):
    versions = written(client, 3)
    change_id, document = versions[2]
    at = format_millis(change_time(change_id))
    assert as_of(client, at).data["document"] == document
    before = format_millis(change_time(versions[0][0]).replace(year=2000))
    missing = as_of(client, before)
    assert (missing.status, missing.data["error"]["code"]) == (404, "DOCUMENT_NOT_FOUND")


def test_a_change_that_is_not_this_documents_is_not_found(client: ApiClient):
    written(client, 1)
    other = create(client, doc_url("projects/other.json"), [], "other").data["document"][
        "change_id"
    ]
    for at in (other, "chg_" + "0" * 28):
        reply = as_of(client, at)
        assert (reply.status, reply.data["error"]["code"]) == (404, "CHANGE_NOT_FOUND")


def test_a_malformed_as_of_is_a_bad_request(client: ApiClient):
    written(client, 1)
    for at in ("chg_zz", "yesterday", "2026-01-01", "x" * 5000):
        reply = as_of(client, at)
        assert (reply.status, reply.data["error"]["code"]) == (400, "INVALID_QUERY"), at


def test_a_change_id_past_the_year_9999_is_not_found_not_a_failure(client: ApiClient):
    versions = written(client, 1)
    far = "chg_ffffffffffff0000000000000000"
    for url in (f"{doc_url()}?as_of={far}", f"{doc_url()}:diff?from={far}"):
        reply = client.request("GET", url)
        assert reply.status in (400, 404), (url, reply.status)
    reply = client.request("GET", f"{doc_url()}:diff?from={versions[0][0]}&to={far}")
    assert reply.status in (400, 404), reply.data
    reply = client.request("GET", f"{doc_url()}:why?path=/preferences/0&as_of={far}")
    assert reply.status in (400, 404), reply.data


def test_one_read_walks_back_at_most_max_walk_changes(
    client: ApiClient, monkeypatch: pytest.MonkeyPatch
):
    """The bound on one request's work: an index built now reaches back MAX_WALK changes;
    the newest versions read, older ones are past what it kept (410)."""
    monkeypatch.setattr(versions_module, "MAX_WALK", 3)
    versions = written(client, 5)
    for change_id, document in versions[-1:]:
        assert as_of(client, change_id).data["document"] == document
    reply = as_of(client, versions[0][0])
    assert reply.status in (404, 410), reply.data
