"""``GET {document}:why?path=`` (issue 27 item 4; docs/decisions.md "Why a value is
there"): the changes that produced the value now at a path, with who, when, why and on
what evidence, traced across index shifts, through both transports on each backend."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.audit_records import change_time
from memnet.services.documents import why
from tests.api.test_documents import create, patch
from tests.api.test_forget_conversation import forget_conversation
from tests.api.test_replay import (
    REF,
    ScriptedExtractor,
    drain,
    note,
    transcript,
    upload,
)
from tests.clients import ApiClient, DirectClient, HttpClient, Reply
from tests.conftest import (
    AGENT_KEY,
    SERVICE_BACKENDS,
    backend_settings,
    doc_url,
    starter_profiles,
    trusting_guard,
)

PREFS = "/content/preferences"


def ask(client: ApiClient, path: str | None, url: str = doc_url()) -> Reply:
    """``:why`` of ``path``; ``url`` the document's, or a ``:why?...&path=`` to finish."""
    if url.endswith("path="):
        return client.request("GET", url + quote(path or ""))
    query = "" if path is None else f"?path={quote(path)}"
    return client.request("GET", f"{url}:why{query}")


def written(client: ApiClient) -> list[str]:
    """A create and three changes, the third writing inside the item the first added
    after the second pushed it from /preferences/1 to /preferences/2; their change ids."""
    made = create(client).data  # preferences: [Be brief.]
    ids, tag = [made["document"]["change_id"]], made["etag"]
    for key, op in (
        ("w1", {"op": "add", "path": PREFS + "/-", "value": {"text": "Metric units"}}),
        ("w2", {"op": "add", "path": PREFS + "/0", "value": {"text": "Dark mode"}}),
        ("w3", {"op": "add", "path": PREFS + "/2/topic", "value": "units"}),
    ):
        body = {"evidence": {"conversation_id": "c1", "message_ids": [key]}, "confidence": 0.9}
        reply = patch(client, tag, [op], key, **body)
        assert reply.status == 200, reply.data
        ids.append(reply.data["document"]["change_id"])
        tag = reply.data["etag"]
    return ids


def test_a_patched_value_names_its_change_with_actor_reason_and_evidence(client: ApiClient):
    ids = written(client)
    reply = ask(client, "/preferences/0")
    assert reply.status == 200, reply.data
    found = reply.data
    assert found["value"] == {"text": "Dark mode"} and found["path"] == "/preferences/0"
    assert (found["change_id"], found["truncated"], found["truncated_by"]) == (ids[3], False, None)
    (change,) = found["changes"]
    assert change["change_id"] == ids[2] and change["role"] == "origin"
    assert change["actor"] == "dev-agent" and change["reason"] == "live_update"
    assert change["confidence"] == 0.9
    assert change["evidence"] == {"conversation_id": "c1", "message_ids": ["w2"]}
    assert change["origin"] is None
    assert change["ops"] == [
        {"index": 0, "op": "add", "path": PREFS + "/0", "value": {"text": "Dark mode"}}
    ]


def test_an_item_whose_index_shifted_is_traced_to_the_change_that_added_it(client: ApiClient):
    ids = written(client)
    found = ask(client, "/preferences/2").data
    assert found["value"] == {"text": "Metric units", "topic": "units"}
    roles = [(c["change_id"], c["role"], c["path"]) for c in found["changes"]]
    assert roles == [
        (ids[3], "modified", "/preferences/2"),
        (ids[1], "origin", "/preferences/1"),  # before the insertion at 0 moved it
    ]
    assert found["changes"][1]["ops"][0]["path"] == PREFS + "/-"
    inside = ask(client, "/preferences/2/topic").data["changes"]
    assert [(c["change_id"], c["role"]) for c in inside] == [(ids[3], "origin")]
    first = ask(client, "/preferences/1").data["changes"]  # the create's own append
    assert [(c["change_id"], c["role"]) for c in first] == [(ids[0], "origin")]


def test_the_walk_is_bounded_and_says_so(client: ApiClient, monkeypatch: pytest.MonkeyPatch):
    ids = written(client)
    monkeypatch.setattr(why, "MAX_CHANGES", 2)
    found = ask(client, "/preferences/2").data
    assert [c["change_id"] for c in found["changes"]] == [ids[3]]
    assert (found["truncated"], found["truncated_by"]) == (True, "WALK_LIMIT")
    assert found["more"] == {"as_of": ids[1], "path": "/preferences/1"}  # before the insertion
    more = found["more"]
    rest = ask(client, more["path"], f"{doc_url()}:why?as_of={more['as_of']}&path=").data
    assert [c["change_id"] for c in rest["changes"]] == [ids[1]]
    assert (rest["change_id"], rest["truncated"], rest["more"]) == (ids[1], False, None)


def test_as_of_asks_about_a_past_version(client: ApiClient):
    ids = written(client)
    then = ask(client, "/preferences/1", f"{doc_url()}:why?as_of={ids[1]}&path=").data
    assert then["value"] == {"text": "Metric units"} and then["change_id"] == ids[1]
    assert [c["change_id"] for c in then["changes"]] == [ids[1]]
    gone = ask(client, "/preferences/2", f"{doc_url()}:why?as_of={ids[1]}&path=")
    assert (gone.status, gone.data["error"]["code"]) == (404, "PATH_NOT_FOUND")
    for at, status, code in (
        ("chg_" + "0" * 28, 404, "CHANGE_NOT_FOUND"),
        ("x", 400, "INVALID_QUERY"),
    ):
        reply = ask(client, "/preferences/0", f"{doc_url()}:why?as_of={at}&path=")
        assert (reply.status, reply.data["error"]["code"]) == (status, code)


def test_an_origin_past_the_audit_horizon_is_truncated_not_an_error(
    client: ApiClient, services: Services
):
    ids = written(client)
    services.audit.raise_horizon("t1", "u1", change_time(ids[1]))
    found = ask(client, "/preferences/2").data
    assert [c["change_id"] for c in found["changes"]] == [ids[3]]
    assert (found["truncated"], found["truncated_by"]) == (True, "HISTORY_TRUNCATED")
    assert ask(client, "/preferences/0").data["truncated"] is False  # its origin is kept


def test_the_walk_stops_at_a_conversations_retraction(client: ApiClient, services: Services):
    learned = [
        {"text": "Tea", "evidence": {"conversation_id": "conv-9"}},
        {"text": "Porto", "evidence": {"conversation_id": "conv-2"}},
    ]
    create(client, ops=[{"op": "add", "path": PREFS + "/-", "value": v} for v in learned])
    forget_conversation(client, services, "conv-9")  # Tea goes: Porto moves to 0
    tag = client.request("GET", doc_url()).data["etag"]
    topic = {"op": "add", "path": PREFS + "/0/topic", "value": "city"}
    assert patch(client, tag, [topic], "topic").status == 200
    found = ask(client, "/preferences/0").data
    assert [c["role"] for c in found["changes"]] == ["modified"]
    assert (found["truncated"], found["truncated_by"]) == (True, "HISTORY_FORGOTTEN")


def test_a_path_with_nothing_there_is_not_found(client: ApiClient):
    written(client)
    for path in ("/preferences/9", "/preferences/01x", "/nothing", "/content/preferences/0"):
        reply = ask(client, path)
        assert (reply.status, reply.data["error"]["code"]) == (404, "PATH_NOT_FOUND"), path
    assert "leave out /content" in ask(client, "/content/preferences/0").data["error"]["message"]
    assert ask(client, "/preferences/01").data["path"] == "/preferences/1"


def test_a_bad_path_is_a_bad_request_and_why_takes_no_writes(client: ApiClient):
    written(client)
    for path in (None, "", "preferences/0", "/a~2", "/" + "x" * 2000):
        reply = ask(client, path)
        assert (reply.status, reply.data["error"]["code"]) == (400, "INVALID_QUERY"), path
        assert reply.data["error"]["details"]["location"] == ["query", "path"]
    reply = client.request("PATCH", doc_url() + ":why", {"ops": []}, {"If-Match": '"x"'})
    assert reply.status == 405


def test_each_tenants_and_users_document_answers_for_itself(client: ApiClient):
    ids = written(client)
    for url in (doc_url(tenant="t2"), doc_url(user="u2")):
        missing = ask(client, "/preferences/0", url)
        assert (missing.status, missing.data["error"]["code"]) == (404, "DOCUMENT_NOT_FOUND")
    theirs = create(client, doc_url(tenant="t2"), key="t2-create").data["document"]["change_id"]
    found = ask(client, "/preferences/0", doc_url(tenant="t2")).data["changes"]
    assert [c["change_id"] for c in found] == [theirs] and theirs not in ids


# -- a value a replay wrote --------------------------------------------------------------


@pytest.fixture(params=SERVICE_BACKENDS)
def replaying(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Services, ScriptedExtractor]]:
    settings = replace(
        backend_settings(request, request.param, tmp_path / "data"),
        profiles_dir=starter_profiles(tmp_path / "profiles", trusting_guard),
    )
    extractor = ScriptedExtractor()
    built = bootstrap.build(settings, extractor=extractor)
    bootstrap.install(built)
    yield built, extractor
    bootstrap.install(None)


@pytest.mark.parametrize("transport", ["direct", "http"])
def test_a_replayed_value_names_the_replay_its_extractor_and_the_snapshot(
    replaying: tuple[Services, ScriptedExtractor], transport: str, request: pytest.FixtureRequest
):
    services, extractor = replaying
    api: ApiClient = DirectClient(AGENT_KEY)
    if transport == "http":
        api = HttpClient(request.getfixturevalue("http_server"), AGENT_KEY)
    project = doc_url("projects/alpha.json")
    create(api, project, [{"op": "replace", "path": "/content/summary", "value": "s"}])
    extractor.output = lambda r: {"digests": [], "patches": [note("Chose Postgres")]}
    upload(api, transcript("We chose Postgres.", project_hint="alpha"))
    drain(services)
    found = ask(api, "/recent_notes/0", project).data
    (change,) = found["changes"]
    assert change["role"] == "origin" and change["actor"] == "memnet-replay"
    assert change["reason"] == "replay_update" and change["confidence"] == 0.9
    assert change["origin"] == {
        "replay_id": REF.replay_id,
        "extractor": {"name": "scripted", "version": "1.0.0"},
    }
    evidence: dict[str, Any] = change["evidence"]
    assert evidence["snapshot_uri"] == REF.uri and evidence["conversation_id"] == "conv-1"
    assert evidence["message_ids"] == ["m1"]


# -- provenance in context assembly ------------------------------------------------------


def test_context_with_provenance_names_each_items_origin(client: ApiClient):
    ids = written(client)
    url = "/v1/tenants/t1/users/u1/context:assemble"
    plain = client.request("POST", url, {})
    assert plain.status == 200 and "provenance" not in plain.data
    reply = client.request("POST", url, {"provenance": True})
    assert reply.status == 200, reply.data
    (entry,) = [p for p in reply.data["provenance"] if p["binding_id"] == "user_dynamic"]
    assert entry["path"] == "user_dynamic.json"
    items = entry["items"]
    assert sorted(items) == ["/preferences/0", "/preferences/1", "/preferences/2"]
    assert [items[f"/preferences/{i}"]["change_id"] for i in range(3)] == [ids[2], ids[0], ids[1]]
    assert items["/preferences/0"]["evidence"] == {"conversation_id": "c1", "message_ids": ["w2"]}
    assert set(items["/preferences/0"]) == {
        "change_id", "actor", "timestamp", "reason", "confidence", "evidence", "origin"
    }  # fmt: skip
    assert reply.data["documents"] == plain.data["documents"]  # the documents as they were
