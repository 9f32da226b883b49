"""Revalidating only what a patch changed must never pass a document that the whole
schema rejects, must report exactly what the whole schema reports, and must actually
spare the work for the common single-op patch."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from memnet.envelope import envelope_schema
from memnet.errors import Unprocessable
from memnet.patching import apply_ops, parse_ops
from memnet.revalidation import KnownValid, still_valid
from memnet.validation import document_violations
from tests.unit.test_envelope_fast_path import REGISTRY, sample

NESTED = {
    "type": "object",
    "required": ["items", "meta"],
    "additionalProperties": False,
    "properties": {
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}},
        "meta": {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                "open": {"type": "object", "properties": {"n": {"type": "integer"}}},
            },
        },
        "free": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    },
    "$defs": {
        "item": {
            "type": "object",
            "required": ["id"],
            "additionalProperties": False,
            "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
        }
    },
}


def nested_validator() -> Draft202012Validator:
    uri = "urn:test:nested:1"
    registry: Registry[Any] = Registry().with_resource(
        uri, Resource.from_contents(NESTED, DRAFT202012)
    )
    return Draft202012Validator(
        envelope_schema("nested", "1", uri),
        registry=registry,
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def envelope(content: dict[str, Any], schema_id: str, version: str) -> dict[str, Any]:
    return {
        "doc_id": "d-1",
        "schema_id": schema_id,
        "schema_version": version,
        "created_at": "2026-11-22T10:00:00Z",
        "updated_at": "2026-11-22T10:00:00Z",
        "updated_by": "agent",
        "change_id": "chg_1",
        "content": content,
    }


NESTED_BASE = envelope(
    {
        "items": [{"id": 1}, {"id": 2, "note": "x"}],
        "meta": {"name": "n", "tags": ["a"], "open": {"n": 1, "other": True}},
        "free": [[1, 2], []],
    },
    "nested",
    "1",
)
NESTED_PATHS = [
    "/content/items/0",
    "/content/items/1/id",
    "/content/items/1/note",
    "/content/items/-",
    "/content/items",
    "/content/meta/name",
    "/content/meta/tags/0",
    "/content/meta/tags/-",
    "/content/meta/open/n",
    "/content/meta/open/extra",
    "/content/meta/extra",
    "/content/free/0/1",
    "/content/free/1/-",
    "/content/free/-",
    "/content/extra",
    "/content",
]
VALUES = [0, 7, -1, 1.5, True, None, "", "s", [], [1], ["a", "b", "c"], {}, {"id": 3}]
VALUES += [{"id": "3"}, {"id": 4, "note": "n"}, {"id": 5, "zz": 1}, {"name": "m"}, {"n": 2}]


def user_dynamic() -> tuple[Any, Draft202012Validator, dict[str, Any]]:
    binding = next(b for b in BINDINGS if b.schema_id == "memory.user.dynamic")
    document = sample(binding)
    document["content"]["preferences"] = ["a", {"text": "t", "topic": "x"}]
    document["content"]["durable_facts"] = [dict(FACT)]
    return binding, REGISTRY.validator(binding), document


BINDINGS = [b for p in REGISTRY.profile_ids() for b in REGISTRY.get(p).bindings]  # type: ignore[union-attr]
FACT = {"fact": "f", "confidence": 0.9, "evidence": {}, "last_verified_at": "2026-01-01T00:00:00Z"}
USER_PATHS = [
    "/content/preferences/0",
    "/content/preferences/1/text",
    "/content/preferences/-",
    "/content/durable_facts/0/evidence/message_ids",
    "/content/durable_facts/0/last_verified_at",
    "/content/durable_facts/-",
    "/content/pending_confirmations/-",
    "/content/projects_index",
    "/content/projects_index/-",
    "/content/preferences",
]
USER_VALUES = [*VALUES, "2026-01-01T00:00:00Z", "not a date", {"text": "t"}, {"text": ""}]
USER_VALUES += [dict(FACT), {**FACT, "confidence": 2}, {"project_id": "p1"}, {"project_id": "-"}]


def random_ops(rng: random.Random, paths: list[str], values: list[Any]) -> list[dict[str, Any]]:
    ops = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["add", "replace", "remove", "move", "copy", "test"])
        op: dict[str, Any] = {"op": kind, "path": rng.choice(paths)}
        if kind in ("add", "replace", "test"):
            op["value"] = copy.deepcopy(rng.choice(values))
        if kind in ("move", "copy"):
            op["from"] = rng.choice(paths)
        ops.append(op)
    return ops


CASES = [
    ("nested", nested_validator, lambda: NESTED_BASE, NESTED_PATHS, VALUES),
    ("user_dynamic", lambda: user_dynamic()[1], lambda: user_dynamic()[2], USER_PATHS, USER_VALUES),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_revalidation_never_passes_what_the_whole_schema_rejects(case: Any) -> None:
    _, make_validator, make_base, paths, values = case
    validator, base = make_validator(), make_base()
    assert not list(validator.iter_errors(base))
    rng, shown, valid, checked = random.Random(20261122), 0, 0, 0
    while checked < 2000:
        ops = parse_ops(random_ops(rng, paths, values))
        try:
            after = apply_ops(base, ops)
        except Unprocessable:
            continue
        checked += 1
        whole = [e.message for e in validator.iter_errors(after)]
        valid += not whole
        if still_valid(validator, after, ops):
            shown += 1
            assert whole == [], (ops, after)
    assert shown > valid / 2  # it does spare the work, for most patches that are valid


def test_violations_of_a_patched_document_are_those_of_the_whole_schema() -> None:
    binding, validator, base = user_dynamic()
    for op, path, value, reported in [
        ("replace", "/content/preferences/0", "", "/content/preferences/0"),
        ("add", "/content/durable_facts/-", {}, "/content/durable_facts/1"),
        ("remove", "/content/preferences", None, "/content"),
    ]:
        ops = parse_ops([{"op": op, "path": path, "value": value}])
        after = apply_ops(base, ops)
        expected = [e.message for e in validator.iter_errors(after)]
        found = document_violations(after, binding, validator, size=0, patched=ops)
        assert [v.message for v in found if v.code == "SCHEMA_VIOLATION"] == expected
        assert expected and found[0].path == reported


@pytest.mark.parametrize(
    "raw",
    [
        [{"op": "replace", "path": "/content/preferences/0", "value": "b"}],
        [{"op": "add", "path": "/content/preferences/-", "value": {"text": "t"}}],
        [{"op": "add", "path": "/content/durable_facts/0", "value": FACT}],
        [{"op": "remove", "path": "/content/preferences/1"}],
        [{"op": "replace", "path": "/content/durable_facts/0/confidence", "value": 0.5}],
    ],
)
def test_a_single_op_is_checked_where_it_wrote(raw: list[dict[str, Any]]) -> None:
    _, validator, base = user_dynamic()
    ops = parse_ops(raw)
    assert still_valid(validator, apply_ops(base, ops), ops)


def test_an_invalid_item_is_not_passed() -> None:
    _, validator, base = user_dynamic()
    ops = parse_ops([{"op": "add", "path": "/content/durable_facts/-", "value": {"fact": "x"}}])
    assert not still_valid(validator, apply_ops(base, ops), ops)


def test_known_valid_holds_only_for_the_same_bytes_and_validator() -> None:
    known, validator, other = KnownValid(limit=2), nested_validator(), nested_validator()
    known.add(b"one", validator)
    assert known.holds(b"one", validator)
    assert not known.holds(b"one ", validator)
    assert not known.holds(b"one", other)
    known.add(b"two", validator)
    known.add(b"three", validator)
    assert not known.holds(b"one", validator)  # the oldest is forgotten past the limit
    assert known.holds(b"three", validator)
