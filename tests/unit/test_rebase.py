"""Which patches commute with the changes made since their base (spec 14)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from memnet.domain.audit_records import AuditRecord
from memnet.domain.patching import parse_ops
from memnet.domain.rebase import conflict


def change(*ops: dict[str, Any], change_id: str = "chg_1", **extra: Any) -> AuditRecord:
    stored = {"change_id": change_id, "ops": list(ops), "operation": "patch", **extra}
    return AuditRecord.from_json({**dict.fromkeys(REQUIRED, "x"), **stored})


REQUIRED = ("tenant_id", "user_id", "namespace", "path")


def add(path: str, value: Any = "x") -> dict[str, Any]:
    return {"op": "add", "path": path, "value": value}


def replace(path: str, value: Any = "x") -> dict[str, Any]:
    return {"op": "replace", "path": path, "value": value}


def remove(path: str) -> dict[str, Any]:
    return {"op": "remove", "path": path}


LATEST = {"content": {"notes": ["a", "b", "c", "d", "e"], "facets": {"a": 1}, "summary": "s"}}


def check(ours: list[dict[str, Any]], *theirs: dict[str, Any]) -> str | None:
    found = conflict(parse_ops(ours), list(theirs), LATEST, {"notes": []})
    return None if found is None else found.reason


COMMUTING = [
    ([add("/content/notes/-")], change(add("/content/notes/-"))),
    ([add("/content/notes/-")], change(remove("/content/notes/0"))),
    ([add("/content/notes/-")], change(replace("/content/notes/2"))),
    ([add("/content/facets/b")], change(add("/content/facets/a"))),
    ([replace("/content/summary")], change(add("/content/notes/-"))),
    ([replace("/content/notes/3")], change(add("/content/notes/-"))),
    ([add("/content/notes/3")], change(add("/content/notes/-"))),
    ([replace("/content/notes/3")], change(replace("/content/notes/1"))),
    ([add("/content/facets/-")], change(add("/content/notes/-"))),
    ([{"op": "test", "path": "/content/summary", "value": "s"}], change(add("/content/notes/-"))),
    ([add("/content/notes/-")], change({"op": "test", "path": "/content/notes", "value": []})),
]

CONFLICTING = [
    ([add("/content/notes/-")], change(replace("/content/notes", []))),
    ([add("/content/notes/-")], change(remove("/content/facets"), replace("/content", {}))),
    ([replace("/content/summary")], change(replace("/content/summary"))),
    ([replace("/content/facets/a")], change(remove("/content/facets"))),
    ([replace("/content/facets")], change(add("/content/facets/a"))),
    ([replace("/content/notes/3")], change(remove("/content/notes/1"))),
    ([remove("/content/notes/0")], change(add("/content/notes/0"))),
    ([replace("/content/notes")], change(add("/content/notes/-"))),
    ([{"op": "test", "path": "/content/x", "value": "s"}], change(replace("/content/x"))),
    (
        [{"op": "copy", "from": "/content/summary", "path": "/content/notes/-"}],
        change(replace("/content/summary")),
    ),
    (
        [replace("/content/notes/0")],
        change({"op": "move", "from": "/content/notes/1", "path": "/content/facets/x"}),
    ),
    # In an object "-" is a member name: a second add replaces the first writer's value.
    ([add("/content/facets/-")], change(add("/content/facets/-"))),
    # Indices that exist only because of an append made since (base length 4 of 5 now).
    ([remove("/content/notes/4")], change(add("/content/notes/-"))),
    ([replace("/content/notes/4/x")], change(add("/content/notes/-"))),
    ([add("/content/notes/4")], change(add("/content/notes/-"))),
    ([{"op": "test", "path": "/content/notes/4", "value": "e"}], change(add("/content/notes/-"))),
]


@pytest.mark.parametrize(("ours", "theirs"), COMMUTING)
def test_commuting_ops_move_past_the_change(ours, theirs):
    assert check(ours, theirs) is None


@pytest.mark.parametrize(("ours", "theirs"), CONFLICTING)
def test_dependent_ops_conflict(ours, theirs):
    assert check(ours, theirs) is not None


def test_a_replace_of_the_whole_document_conflicts_with_everything():
    replaced = change(change_id="chg_9", operation="replace", base={"content": {"notes": []}})
    found = conflict(parse_ops([add("/content/notes/-")]), [replaced], LATEST, {"notes": []})
    assert found is not None and found.change_id == "chg_9"
    assert found.as_json()["reason"] == "the document was replaced"


def test_a_create_from_the_initial_content_counts_by_its_ops():
    created = change(add("/content/notes/-"), operation="create", base={"content": {"notes": []}})
    ours = parse_ops([add("/content/notes/-")])
    assert conflict(ours, [created], LATEST, {"notes": []}) is None
    other = dataclasses.replace(created, base={"content": {"notes": ["seeded"]}})
    assert conflict(ours, [other], LATEST, {"notes": []}) is not None


def test_the_first_conflict_names_its_change_and_path():
    first = change(add("/content/notes/-"), change_id="chg_a")
    second = change(replace("/content/summary"), change_id="chg_b")
    found = conflict(parse_ops([replace("/content/summary")]), [first, second], LATEST, {})
    assert found is not None
    assert found.as_json() == {
        "change_id": "chg_b",
        "path": "/content/summary",
        "reason": "a change since wrote this path",
    }
