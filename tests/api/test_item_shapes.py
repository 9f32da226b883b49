"""One item shape per section, declared by the binding's schema (docs/profiles.md "Item
shapes"): every writer of the starter profile writes it, a write of another shape is a
422 that changes nothing, and a document stored before (in the old mixed shape) is read
as it is and rewritten once by the compaction job, after which it takes writes again."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import DocumentRef
from memnet.services.compaction.digest import COMPACTION_CALLER
from tests.api.test_documents import create, patch
from tests.clients import ApiClient, DirectClient
from tests.conftest import AGENT_KEY, REPO, doc_url, make_settings

PROJECT = doc_url("projects/apollo.json")
DYNAMIC = DocumentRef("t1", "u1", "user", "user_dynamic.json")
APOLLO = DocumentRef("t1", "u1", "projects", "apollo.json")
SHAPES = {  # section -> (a write of the old shape, the one shape)
    "/content/preferences/-": ("Be brief.", {"text": "Be brief."}),
    "/content/recent_notes/-": ("Chose Postgres.", {"note": "Chose Postgres."}),
}


def url_of(section: str) -> str:
    return doc_url() if "preferences" in section else PROJECT


@pytest.mark.parametrize("section", sorted(SHAPES))
def test_a_write_of_the_old_string_shape_is_a_422_that_changes_nothing(
    client: ApiClient, section: str
):
    old, new = SHAPES[section]
    url = url_of(section)
    refused = create(client, url, [{"op": "add", "path": section, "value": old}])
    assert refused.status == 422 and refused.error_code == "SCHEMA_VIOLATION"
    [violation] = refused.data["error"]["details"]["violations"]
    assert violation["path"] == section.replace("-", "0")
    assert "is not of type 'object'" in violation["message"]
    assert client.request("GET", url).status == 404
    created = create(client, url, [{"op": "add", "path": section, "value": new}], key="ok")
    assert created.status == 201, created.data
    again = patch(
        client, created.data["etag"], [{"op": "add", "path": section, "value": old}], "x", url
    )
    assert again.status == 422 and client.request("GET", url).data == {
        "etag": created.data["etag"],
        "document": created.data["document"],
    }


# -- documents written before: read as they are, reshaped once by compaction ------------


def previous_profiles(tmp_path: Path) -> Path:
    """The starter profile as it shipped before: string items allowed beside objects."""
    root = tmp_path / "previous-profiles"
    shutil.copytree(REPO / "profiles", root)
    for schema, section in (
        ("memory.user.dynamic", "preferences"),
        ("memory.project", "recent_notes"),
    ):
        path = root / "schemas" / schema / "1.0.0.json"
        body = json.loads(path.read_text(encoding="utf-8"))
        items = body["properties"][section]["items"]
        body["properties"][section]["items"] = {
            "anyOf": [{"type": "string", "minLength": 1}, items]
        }
        path.write_text(json.dumps(body), encoding="utf-8")
    return root


@pytest.fixture
def upgraded(tmp_path: Path) -> Iterator[tuple[Services, DirectClient]]:
    """Documents written by the previous release (mixed shapes), then this release's
    service on the same data."""
    data = tmp_path / "data"
    bootstrap.install(
        bootstrap.build(make_settings(data, profiles_dir=previous_profiles(tmp_path)))
    )
    agent = DirectClient(AGENT_KEY)
    mixed = [
        {"op": "add", "path": "/content/preferences/-", "value": v}
        for v in ("Be brief.", {"text": "No emojis."})
    ]
    stale = {"fact": "Lives in Porto.", "confidence": 0.9, "evidence": {"message_ids": ["m1"]},
             "last_verified_at": "2020-01-01T00:00:00Z"}  # fmt: skip
    facts = [{"op": "add", "path": "/content/durable_facts/-", "value": stale}]
    assert (
        create(agent, ops=mixed + facts, confidence=0.9, evidence={"message_ids": ["m1"]}).status
        == 201
    )
    notes = [{"op": "add", "path": "/content/recent_notes/-", "value": "Chose Postgres."}]
    assert create(agent, PROJECT, notes, "notes").status == 201
    services = bootstrap.build(make_settings(data))
    bootstrap.install(services)
    yield services, agent
    bootstrap.install(None)


def content(agent: ApiClient, url: str = doc_url()) -> dict[str, Any]:
    return dict(agent.request("GET", url).data["document"]["content"])


def test_an_old_document_is_read_and_rendered_as_it_is(upgraded: tuple[Services, DirectClient]):
    _, agent = upgraded
    assert content(agent)["preferences"] == ["Be brief.", {"text": "No emojis."}]
    body = {"conversation_hint": {"project_id": "apollo"}, "render": "text"}
    rendered = agent.request("POST", "/v1/tenants/t1/users/u1/context:assemble", body).data[
        "rendered"
    ]
    assert "preferences:\n- Be brief.\n- No emojis.\n" in rendered
    assert "recent_notes:\n- Chose Postgres." in rendered


def test_an_old_document_refuses_writes_until_compaction_reshapes_it_once(
    upgraded: tuple[Services, DirectClient],
):
    services, agent = upgraded
    before = agent.request("GET", doc_url()).data
    add = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "Metric units."}}]
    refused = patch(agent, before["etag"], add, "k1")
    assert refused.status == 422 and refused.error_code == "SCHEMA_VIOLATION"
    assert [v["path"] for v in refused.data["error"]["details"]["violations"]] == [
        "/content/preferences/0"
    ]

    jobs = services.compaction
    dry = jobs.compact("t1", "u1", "user", "user_dynamic.json", dry_run=True).as_json()
    assert dry["reshaped"]["paths"] == ["/content/preferences"] and not dry["reshaped"]["changed"]
    assert agent.request("GET", doc_url()).data == before

    status = jobs.compact("t1", "u1", "user", "user_dynamic.json").as_json()
    assert status["reshaped"] == {"changed": True, "paths": ["/content/preferences"]}
    assert status["freshness"]["changed"]  # the stale fact's downgrade, refused before the reshape
    after = content(agent)
    assert after["preferences"] == [{"text": "Be brief."}, {"text": "No emojis."}]
    history = agent.request("GET", doc_url() + ":history").data["changes"]
    reshape = next(c for c in history if c.get("reason_codes") == ["reshape_items"])
    assert (reshape["actor"], reshape["reason"]) == (COMPACTION_CALLER, "compaction")
    assert reshape["ops"] == [
        {"op": "replace", "path": "/content/preferences", "value": after["preferences"]}
    ]

    latest = agent.request("GET", doc_url()).data["etag"]
    assert patch(agent, latest, add, "k2").status == 200
    again = jobs.compact("t1", "u1", "user", "user_dynamic.json").as_json()
    assert again["reshaped"] == {"changed": False, "paths": []}

    project = jobs.compact("t1", "u1", "projects", "apollo.json").as_json()
    assert project["reshaped"]["changed"]
    assert content(agent, PROJECT)["recent_notes"] == [{"note": "Chose Postgres."}]
