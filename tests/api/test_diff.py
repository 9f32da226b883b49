"""``GET {document}:diff?from=&to=`` (issue 27 item 2; docs/api.md "Versions and
diffs"): the RFC 6902 operations over the content that turn one version into
another, with paths as a PATCH writes them; the same 404/410 rules as ``as_of``
(tests/api/test_versions_gone.py); read-only."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from memnet.domain.patching import apply_ops, parse_ops
from tests.api.test_documents import patch
from tests.api.test_versions import as_of, written
from tests.clients import ApiClient
from tests.conftest import doc_url


def diff(client: ApiClient, query: str, url: str = doc_url()):
    return client.request("GET", f"{url}:diff?{query}")


def test_the_ops_turn_one_version_into_the_other_both_ways(client: ApiClient):
    versions = written(client, 20)
    pairs = [(0, 20), (20, 0), (3, 17), (17, 16), (5, 5)]
    for one, other in pairs:
        (older, before), (newer, after) = versions[one], versions[other]
        reply = diff(client, f"from={older}&to={newer}")
        assert reply.status == 200, reply.data
        assert (reply.data["from"], reply.data["to"]) == (older, newer)
        got = apply_ops(before, parse_ops(reply.data["ops"]))
        assert got["content"] == after["content"]
    assert diff(client, f"from={versions[5][0]}&to={versions[5][0]}").data["ops"] == []
    one = diff(client, f"from={versions[19][0]}").data
    assert one == {
        "from": versions[19][0],
        "to": versions[20][0],  # to defaults to latest
        "ops": [{"op": "replace", "path": "/content/preferences/0/text", "value": "p19"}],
    }
    assert diff(client, f"from={versions[19][0]}&to=latest").data == one


def test_the_ops_are_a_patch_that_takes_the_document_back(client: ApiClient):
    versions = written(client, 3)
    old_id, old = versions[1]
    latest = client.request("GET", doc_url()).data
    ops = diff(client, f"from={latest['document']['change_id']}&to={old_id}").data["ops"]
    reply = patch(client, latest["etag"], ops, "back")
    assert reply.status == 200, reply.data
    assert reply.data["document"]["content"] == old["content"]
    assert (
        as_of(client, reply.data["document"]["change_id"]).data["document"]
        == reply.data["document"]
    )


@pytest.mark.parametrize(
    "query",
    [
        "",
        "to=latest",
        "from=latest",
        "from=chg_zz",
        "from=2026-01-01T00:00:00Z",
        "from={c}&to=yesterday",
        "from=" + "x" * 5000,
    ],
)
def test_a_bad_query_is_a_bad_request(client: ApiClient, query: str):
    change_id = written(client, 1)[0][0]
    reply = diff(client, query.format(c=quote(change_id)))
    assert (reply.status, reply.data["error"]["code"]) == (400, "INVALID_QUERY"), reply.data


def test_a_diff_is_read_only_and_of_an_existing_document(client: ApiClient):
    versions = written(client, 1)
    tag = client.request("GET", doc_url()).data["etag"]
    ops = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "no"}}]
    for method, body in (("PATCH", {"ops": ops}), ("PUT", {"content": {}})):
        headers = {"If-Match": tag, "Idempotency-Key": f"k-{method}"}
        reply = client.request(method, f"{doc_url()}:diff", body, headers)
        assert (reply.status, reply.headers.get("allow")) == (405, "GET"), reply.data
    assert client.request("GET", doc_url()).data["etag"] == tag
    missing = diff(client, f"from={versions[0][0]}", doc_url("projects/none.json"))
    assert (missing.status, missing.data["error"]["code"]) == (404, "DOCUMENT_NOT_FOUND")
