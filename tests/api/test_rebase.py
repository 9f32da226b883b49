"""Rebase for live writers (spec 14): a stale If-Match whose ops commute with the changes
since is applied to the latest version when the caller asks (``"rebase": true``), and the
audit says from which version; otherwise 412 as before."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from memnet.domain.audit_records import AuditRecord, fold
from tests.api.test_documents import create, patch
from tests.clients import ApiClient
from tests.conftest import doc_url

URL = doc_url("projects/rebased.json")


def note(text: str) -> list[dict[str, str]]:
    return [{"op": "add", "path": "/content/recent_notes/-", "value": {"note": text}}]


def summary(text: str) -> list[dict[str, str]]:
    return [{"op": "replace", "path": "/content/summary", "value": text}]


def test_a_stale_append_is_rebased_onto_the_latest_version(client: ApiClient):
    stale = create(client, URL, note("first")).data["etag"]
    latest = patch(client, stale, note("second"), "k2", url=URL).data["etag"]
    reply = patch(client, stale, note("third"), "k3", url=URL, rebase=True)
    assert reply.status == 200, reply.data
    assert reply.data["document"]["content"]["recent_notes"] == [
        {"note": "first"},
        {"note": "second"},
        {"note": "third"},
    ]
    head = client.request("GET", URL + ":history?limit=1").data["changes"][0]
    assert head["rebased_from"] == stale
    assert head["pre_etag"] == latest


def test_without_the_flag_a_stale_write_is_412(client: ApiClient):
    stale = create(client, URL, note("first")).data["etag"]
    latest = patch(client, stale, note("second"), "k2", url=URL).data["etag"]
    reply = patch(client, stale, note("third"), "k3", url=URL)
    assert reply.status == 412
    assert reply.data["error"]["details"]["latest_etag"] == latest
    assert "rebase" not in reply.data["error"]["details"]


def test_ops_that_depend_on_the_changes_since_are_412_naming_the_conflict(client: ApiClient):
    stale = create(client, URL, summary("one")).data["etag"]
    patch(client, stale, summary("two"), "k2", url=URL)
    reply = patch(client, stale, summary("three"), "k3", url=URL, rebase=True)
    assert reply.status == 412
    assert reply.data["error"]["details"]["rebase"]["path"] == "/content/summary"
    document = client.request("GET", URL).data["document"]
    assert document["content"]["summary"] == "two"


def test_a_test_op_is_checked_again_on_the_latest_version(client: ApiClient):
    stale = create(client, URL, summary("one")).data["etag"]
    patch(client, stale, note("meanwhile"), "k2", url=URL)
    failing = [{"op": "test", "path": "/content/summary", "value": "other"}, *note("x")]
    assert patch(client, stale, failing, "k3", url=URL, rebase=True).status == 422
    passing = [{"op": "test", "path": "/content/summary", "value": "one"}, *note("x")]
    reply = patch(client, stale, passing, "k4", url=URL, rebase=True)
    assert reply.status == 200
    assert reply.data["document"]["content"]["recent_notes"] == [
        {"note": "meanwhile"},
        {"note": "x"},
    ]


def test_an_unknown_base_version_is_412(client: ApiClient):
    create(client, URL, note("first"))
    reply = patch(client, '"0xUNKNOWN"', note("x"), "k2", url=URL, rebase=True)
    assert reply.status == 412
    assert reply.data["error"]["details"]["rebase"] == {"reason": "base version not found"}


def test_a_create_that_lost_to_another_create_is_rebased(client: ApiClient):
    create(client, URL, note("theirs"), key="c1")
    reply = create(client, URL, note("ours"), key="c2", rebase=True)
    assert reply.status == 200, reply.data
    assert reply.data["document"]["content"]["recent_notes"] == [
        {"note": "theirs"},
        {"note": "ours"},
    ]


def test_rebase_must_be_a_boolean(client: ApiClient):
    stale = create(client, URL, note("first")).data["etag"]
    reply = patch(client, stale, note("x"), "k2", url=URL, rebase="yes")
    assert reply.status == 400 and reply.error_code == "INVALID_FIELD"


def test_racing_rebased_appends_each_land_once(client: ApiClient):
    base = create(client, URL, summary("hot")).data["etag"]
    notes = [f"n{i}" for i in range(24)]

    def write(text: str) -> None:
        key = f"w-{uuid.uuid4().hex}"
        while True:  # the same stale base every time: the server rebases
            reply = patch(client, base, note(text), key, url=URL, rebase=True)
            if reply.status == 200:
                return
            assert reply.status == 412, reply.data

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(write, notes))
    document = client.request("GET", URL).data["document"]
    assert sorted(n["note"] for n in document["content"]["recent_notes"]) == sorted(notes)
    changes = client.request("GET", URL + ":history?limit=1000").data["changes"]
    assert len({c["pre_etag"] for c in changes}) == len(changes) == 25
    assert fold(map(AuditRecord.from_json, reversed(changes))) == document


def test_a_dash_member_of_an_object_is_not_an_append(client: ApiClient):
    stale = create(client, URL, summary("s")).data["etag"]
    mine = [{"op": "add", "path": "/content/facets/-", "value": "mine"}]
    assert patch(client, stale, mine, "k2", url=URL).status == 200
    theirs = [{"op": "add", "path": "/content/facets/-", "value": "theirs"}]
    reply = patch(client, stale, theirs, "k3", url=URL, rebase=True)
    assert reply.status == 412
    assert client.request("GET", URL).data["document"]["content"]["facets"] == {"-": "mine"}


def test_an_index_that_exists_only_because_of_a_later_append_is_412(client: ApiClient):
    stale = create(client, URL, note("a")).data["etag"]
    patch(client, stale, note("b"), "k2", url=URL)
    remove = [{"op": "remove", "path": "/content/recent_notes/1"}]
    reply = patch(client, stale, remove, "k3", url=URL, rebase=True)
    assert reply.status == 412
    assert reply.data["error"]["details"]["rebase"]["reason"].startswith("the index")
    assert client.request("GET", URL).data["document"]["content"]["recent_notes"] == [
        {"note": "a"},
        {"note": "b"},
    ]


def test_a_non_ascii_digit_in_a_rebased_path_is_422_not_500(client: ApiClient):
    stale = create(client, URL, note("first")).data["etag"]
    patch(client, stale, note("second"), "k2", url=URL)
    for n, digit in enumerate(("²", "٣", "\uff11")):  # str.isdigit() takes them; int() may not
        probe = [{"op": "test", "path": f"/content/recent_notes/{digit}", "value": "x"}]
        reply = patch(client, stale, probe, f"k-digit-{n}", url=URL, rebase=True)
        assert reply.status == 422, (digit, reply.data)
