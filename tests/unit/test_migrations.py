"""Schema migration metadata and transforms (memnet.domain.migrations) and their checks
at load (memnet.services.profiles.migration_checks): docs/profiles.md, "Schema
migrations"."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from memnet.domain import migrations
from memnet.domain.audit_records import AuditRecord, ops_sha256
from memnet.domain.errors import ConfigError, Unprocessable
from memnet.domain.layout import DocumentRef
from memnet.domain.migrations import (
    MigrationFailed,
    Step,
    TransformRefused,
    migrate,
    path,
    rename_member,
    steps_problem,
    wrap_strings,
)
from memnet.services.profiles.registry import load_registry
from tests.api.migrating import LATEST, SCHEMA, STEP_OPS, STEP_TRANSFORM, bumped_profiles

RENAME = {"array": "/items", "from": "topic", "to": "category"}


# -- transforms ----------------------------------------------------------------------


def test_rename_member_moves_the_member_of_each_item_that_has_it():
    content = {"items": [{"topic": "a", "x": 1}, {"x": 2}, "plain", {"topic": "b"}]}
    ops = rename_member(content, RENAME)
    assert ops == [
        {"op": "move", "from": "/items/0/topic", "path": "/items/0/category"},
        {"op": "move", "from": "/items/3/topic", "path": "/items/3/category"},
    ]


def test_rename_member_refuses_an_item_that_has_both_members():
    with pytest.raises(TransformRefused, match="item 1 of /items"):
        rename_member({"items": [{}, {"topic": "a", "category": "b"}]}, RENAME)


@pytest.mark.parametrize("content", [{}, {"items": {"topic": "a"}}, {"items": "x"}])
def test_a_transform_refuses_a_document_without_its_array(content: Any):
    with pytest.raises(TransformRefused, match="/items is not an array"):
        rename_member(content, RENAME)
    with pytest.raises(TransformRefused):
        wrap_strings(content, {"array": "/items", "member": "text"})


def test_wrap_strings_replaces_each_string_item_by_an_object():
    content = {"items": ["a", {"text": "b"}, "c~/"]}
    assert wrap_strings(content, {"array": "/items", "member": "text"}) == [
        {"op": "replace", "path": "/items/0", "value": {"text": "a"}},
        {"op": "replace", "path": "/items/2", "value": {"text": "c~/"}},
    ]


# -- migrate -------------------------------------------------------------------------


def steps() -> dict[str, Step]:
    parsed = migrations.parse_steps({"migrations": [STEP_OPS, STEP_TRANSFORM]})
    return {step.from_version: step for step in parsed}


def document(content: Any, version: str = "1.0.0") -> dict[str, Any]:
    return {"doc_id": "d", "schema_id": SCHEMA, "schema_version": version, "content": content}


def test_migrate_runs_the_steps_in_order_and_records_envelope_ops():
    content = copy.deepcopy(STEP_OPS["examples"][0])
    content["preferences"] = [{"text": "t", "topic": "x"}]
    before = document(content)
    kept = copy.deepcopy(before)
    found = migrate(SCHEMA, before, path(steps(), "1.0.0", LATEST) or [])
    assert before == kept  # not changed in place
    assert found.document["schema_version"] == LATEST
    assert found.document["content"]["projects"] == [{"project_id": "p1"}]
    assert found.document["content"]["preferences"] == [{"text": "t", "category": "x"}]
    assert found.ops == [
        {"op": "replace", "path": "/schema_version", "value": LATEST},
        {"op": "move", "from": "/content/projects_index", "path": "/content/projects"},
        {
            "op": "move",
            "from": "/content/preferences/0/topic",
            "path": "/content/preferences/0/category",
        },
    ]
    assert found.as_json() == {"from": "1.0.0", "to": LATEST}


def test_the_ops_of_a_migration_fold_from_the_stored_document():
    """What the audit record stores reproduces the migrated document (history folds)."""
    content = {**STEP_OPS["examples"][0], "preferences": [{"text": "t", "topic": "x"}]}
    stored = {**document(content), "created_at": "t0", "updated_at": "t0", "updated_by": "a"}
    found = migrate(SCHEMA, stored, path(steps(), "1.0.0", LATEST) or [])
    record = AuditRecord(
        change_id="chg_2",
        prev_change_id="chg_1",
        operation="patch",
        ref=DocumentRef("t", "u", "user", "user_dynamic.json"),
        binding_id="user_dynamic",
        profile_id="p",
        actor="job",
        timestamp="t1",
        reason="admin_migration",
        pre_etag="e",
        ops=found.ops,
        ops_sha256=ops_sha256(found.ops),
        migration=found.as_json(),
    )
    folded = record.apply(stored)
    assert folded["content"] == found.document["content"]
    assert folded["schema_version"] == LATEST
    assert AuditRecord.from_json(record.as_json()).migration == {"from": "1.0.0", "to": LATEST}


def test_a_step_that_does_not_apply_names_the_step_and_the_op():
    content = {"preferences": [], "durable_facts": [], "pending_confirmations": []}
    with pytest.raises(MigrationFailed) as raised:
        migrate(SCHEMA, document(content), path(steps(), "1.0.0", LATEST) or [])
    assert raised.value.code == "MIGRATION_FAILED"
    assert raised.value.details == {
        "schema_id": SCHEMA,
        "from": "1.0.0",
        "to": "1.1.0",
        "op_index": 0,
        "path": "/projects",
    }
    assert isinstance(raised.value, Unprocessable)


def test_a_transform_that_refuses_names_the_transform():
    content = {"preferences": [{"text": "t", "topic": "a", "category": "b"}]}
    with pytest.raises(MigrationFailed, match="transform rename_member"):
        migrate(SCHEMA, document(content, "1.1.0"), [steps()["1.1.0"]])


def test_path_follows_the_steps_or_answers_none():
    found = steps()
    assert [s.to_version for s in path(found, "1.0.0", LATEST) or []] == ["1.1.0", LATEST]
    assert path(found, LATEST, LATEST) == []
    assert path(found, LATEST, "1.0.0") is None  # never backwards
    assert path(found, "0.9.0", LATEST) is None


# -- the metadata --------------------------------------------------------------------

VERSIONS = {"1.0.0", "1.1.0", "1.2.0"}


def step(**changes: Any) -> Step:
    return Step(**{"from_version": "1.0.0", "to_version": "1.1.0", "ops": [], **changes})


@pytest.mark.parametrize(
    ("steps_", "where"),
    [
        ([step(from_version="0.1.0")], "/migrations/0/from"),
        ([step(to_version="9.0.0")], "/migrations/0/to"),
        ([step(from_version="1.1.0", to_version="1.0.0")], "/migrations/0/to"),
        ([step(), step(to_version="1.2.0")], "/migrations/1/from"),
        ([step(ops=[{"op": "nope", "path": "/a"}])], "/migrations/0/ops"),
        ([step(ops=None, transform="no_such")], "/migrations/0/transform"),
        ([step(ops=None, transform="rename_member", args={"array": "/a"})], "/migrations/0/args"),
        (
            [step(ops=None, transform="wrap_strings", args={"array": "a", "member": "t"})],
            "/migrations/0/args/array",
        ),
        (
            [step(ops=None, transform="wrap_strings", args={"array": "/a", "member": ""})],
            "/migrations/0/args/member",
        ),
    ],
)
def test_unusable_steps_are_named(steps_: list[Step], where: str):
    problem = steps_problem(steps_, VERSIONS)
    assert problem is not None and problem[0] == where


def test_usable_steps_have_no_problem():
    assert steps_problem(list(steps().values()), VERSIONS) is None


# -- at load -------------------------------------------------------------------------


def refused(tmp_path: Path, found: Any) -> ConfigError:
    profiles = bumped_profiles(tmp_path / "p")
    (profiles / "schemas" / SCHEMA / "migrations.json").write_text(json.dumps(found))
    with pytest.raises(ConfigError) as raised:
        load_registry(profiles)
    assert raised.value.source.endswith(f"{SCHEMA}/migrations.json")
    return raised.value


def test_the_bumped_profile_loads_and_its_migrations_json_is_not_a_version(tmp_path: Path):
    registry = load_registry(bumped_profiles(tmp_path / "p"))
    versions = sorted(v for (s, v) in registry.schemas() if s == SCHEMA)
    assert versions == ["1.0.0", "1.1.0", "1.2.0"]
    assert set(registry.migration_steps(SCHEMA)) == {"1.0.0", "1.1.0"}


def test_a_step_without_examples_stops_startup(tmp_path: Path):
    bare = {k: v for k, v in STEP_OPS.items() if k != "examples"}
    error = refused(tmp_path, {"migrations": [bare]})
    assert error.field == "/migrations/0" and "examples" in error.problem


def test_a_step_with_both_ops_and_a_transform_stops_startup(tmp_path: Path):
    both = {**STEP_OPS, "transform": "rename_member"}
    assert refused(tmp_path, {"migrations": [both]}).field == "/migrations/0"


def test_an_example_invalid_at_its_version_stops_startup(tmp_path: Path):
    wrong = {**STEP_OPS, "examples": [{"preferences": "not a list"}]}
    error = refused(tmp_path, {"migrations": [wrong]})
    assert error.field == "/migrations/0/examples/0" and "not a valid" in error.problem


def test_a_step_whose_result_the_next_version_refuses_stops_startup(tmp_path: Path):
    copying = {**STEP_OPS, "ops": [{"op": "copy", "from": "/projects_index", "path": "/projects"}]}
    error = refused(tmp_path, {"migrations": [copying, STEP_TRANSFORM]})
    assert error.field == "/migrations/0/examples/0"
    assert "migrated to 1.1.0, does not satisfy that version" in error.problem


def test_an_example_is_carried_through_the_later_steps(tmp_path: Path):
    """The first step's example, migrated, must pass the second step too."""
    example = {**STEP_OPS["examples"][0], "preferences": [{"text": "t", "topic": "a"}]}
    clash = {**STEP_TRANSFORM, "args": {**STEP_TRANSFORM["args"], "to": "text"}}
    error = refused(tmp_path, {"migrations": [{**STEP_OPS, "examples": [example]}, clash]})
    assert error.field == "/migrations/0/examples/0" and "rename_member" in error.problem


def test_the_initial_content_of_a_binding_at_the_old_version_is_checked(tmp_path: Path):
    """A profile still binding 1.0.0 (the shipped one, copied beside the bump) has an
    initial content the steps must migrate: here a step that needs a member it lacks."""
    profiles = bumped_profiles(tmp_path / "p")
    shipped = json.loads(
        (Path(__file__).parents[2] / "profiles/project-copilot-v1.json").read_text()
    )
    shipped["profile_id"] = "shipped-v1"
    for binding in shipped["document_bindings"]:  # another namespace: no clash with the bump
        binding["namespace"] = "legacy"
    shipped.pop("sensitivity_rules", None)
    (profiles / "shipped-v1.json").write_text(json.dumps(shipped))
    first = {"op": "test", "path": "/projects_index/0/project_id", "value": "p1"}
    needs = {**STEP_OPS, "ops": [first, *STEP_OPS["ops"]]}
    (profiles / "schemas" / SCHEMA / "migrations.json").write_text(
        json.dumps({"migrations": [needs, STEP_TRANSFORM]})
    )
    with pytest.raises(ConfigError) as raised:
        load_registry(profiles)
    assert "initial_content of shipped-v1/user_dynamic" in raised.value.field


def test_the_registry_migrates_only_its_schema_forward(tmp_path: Path):
    registry = load_registry(bumped_profiles(tmp_path / "p"))
    profile = registry.get("project-copilot-v1")
    binding = profile.binding("user_dynamic") if profile else None
    assert binding is not None and binding.schema_version == LATEST
    content = {**STEP_OPS["examples"][0]}
    assert registry.migrated(binding, {**document(content), "schema_id": "other"}) is None
    assert registry.migrated(binding, document(content, LATEST)) is None
    found = registry.migrated(binding, document(content))
    assert found is not None and found.document["schema_version"] == LATEST
    with pytest.raises(Unprocessable) as raised:
        registry.migrated(binding, document(content, "9.0.0"))
    assert raised.value.code == "SCHEMA_VERSION_UNSUPPORTED"
    assert raised.value.details["stored_version"] == "9.0.0"
