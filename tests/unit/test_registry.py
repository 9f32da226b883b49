"""Profiles are data, validated at load; a broken one stops startup naming file and field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from memnet.domain.errors import ConfigError
from memnet.services.profiles.registry import load_registry

PROFILES = Path(__file__).resolve().parents[2] / "profiles"


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    target = tmp_path / "profiles"
    shutil.copytree(PROFILES, target)
    return target


def edit(directory: Path, change) -> None:  # type: ignore[no-untyped-def]
    path = directory / "project-copilot-v1.json"
    raw = json.loads(path.read_text())
    change(raw)
    path.write_text(json.dumps(raw))


def refused_field(profiles: Path, change) -> str:  # type: ignore[no-untyped-def]
    """The field the loader names when a fresh copy of ``profiles`` gets ``change``."""
    fresh = profiles.parent / f"case-{len(list(profiles.parent.iterdir()))}"
    shutil.copytree(profiles, fresh)
    edit(fresh, change)
    with pytest.raises(ConfigError) as caught:
        load_registry(fresh)
    return caught.value.field


def test_shipped_profiles_load():
    registry = load_registry(PROFILES)
    assert registry.profile_ids() == ["project-copilot-v1"]


def test_meta_schema_error_names_file_and_field(profiles: Path):
    edit(profiles, lambda raw: raw["document_bindings"][1].update(max_chars="big"))
    with pytest.raises(ConfigError) as caught:
        load_registry(profiles)
    assert caught.value.source.endswith("project-copilot-v1.json")
    assert caught.value.field == "/document_bindings/1/max_chars"


def test_dangling_schema_reference_stops_startup(profiles: Path):
    edit(profiles, lambda raw: raw["document_bindings"][0].update(schema_version="9.9.9"))
    with pytest.raises(ConfigError, match="not registered") as caught:
        load_registry(profiles)
    assert caught.value.field == "/document_bindings/0/schema_id"


def test_rules_for_unknown_binding_stop_startup(profiles: Path):
    edit(profiles, lambda raw: raw["writable_path_rules"].update(ghost=["/x"]))
    with pytest.raises(ConfigError) as caught:
        load_registry(profiles)
    assert caught.value.field == "/writable_path_rules/ghost"


def test_binding_with_both_path_and_template_is_refused(profiles: Path):
    edit(profiles, lambda raw: raw["document_bindings"][2].update(path="p.json"))
    with pytest.raises(ConfigError) as caught:
        load_registry(profiles)
    assert caught.value.field == "/document_bindings/2"


def test_initial_content_must_satisfy_its_schema(profiles: Path):
    edit(profiles, lambda raw: raw["document_bindings"][1].update(initial_content={}))
    with pytest.raises(ConfigError, match="does not satisfy") as caught:
        load_registry(profiles)
    assert caught.value.field == "/document_bindings/1/initial_content"


def test_invalid_json_schema_is_refused(profiles: Path):
    (profiles / "schemas" / "memory.project" / "1.0.0.json").write_text('{"type": 5}')
    with pytest.raises(ConfigError, match="invalid JSON Schema"):
        load_registry(profiles)


def test_unreadable_profile_file_is_refused(profiles: Path):
    (profiles / "project-copilot-v1.json").write_text("{oops")
    with pytest.raises(ConfigError, match="not readable JSON"):
        load_registry(profiles)


def test_profile_id_must_match_file_name(profiles: Path):
    edit(profiles, lambda raw: raw.update(profile_id="other"))
    with pytest.raises(ConfigError) as caught:
        load_registry(profiles)
    assert caught.value.field == "/profile_id"


def test_the_related_system_profiles_load():
    registry = load_registry(PROFILES.parent / "related" / "profiles")
    assert "soorma-coala-v1" in registry.profile_ids() and "a2p-v1" in registry.profile_ids()


def test_an_identity_section_must_be_writable_as_a_whole(profiles: Path):
    def append_only(raw):  # type: ignore[no-untyped-def]
        raw["writable_path_rules"]["project_doc"] = ["/summary", "/recent_notes/-"]
        raw["document_bindings"][2]["item_identity"] = {"/recent_notes": {"key": "id"}}

    edit(profiles, append_only)
    with pytest.raises(ConfigError, match="not writable as a whole") as caught:
        load_registry(profiles)
    assert caught.value.field == "/document_bindings/2/item_identity"


def test_the_routing_index_cannot_be_short_lived(profiles: Path):
    edit(profiles, lambda raw: raw["document_bindings"][1].update(ttl_seconds=3600))
    with pytest.raises(ConfigError, match="no ttl_seconds") as caught:
        load_registry(profiles)
    assert caught.value.field == "/context_rules/routing/index_binding"


def test_bad_short_lived_and_lookup_members_are_refused(profiles: Path):
    for change, field in (
        (lambda raw: raw["document_bindings"][2].update(ttl_seconds=59), "ttl_seconds"),
        (
            lambda raw: raw["document_bindings"][2].update(lookup_fields={"Bad": "/x"}),
            "lookup_fields",
        ),
        (lambda raw: raw["document_bindings"][2].update(item_identity={"/x": {}}), "item_identity"),
    ):
        assert refused_field(profiles, change).startswith("/document_bindings/2"), field


def test_shared_bindings_are_checked_at_load(profiles: Path):
    for change, field in (
        (
            lambda raw: raw["document_bindings"][0].update(scope="tenant", namespace="projects"),
            "/document_bindings/2/scope",
        ),
        (
            lambda raw: raw["document_bindings"][1].update(scope="tenant", namespace="kb"),
            "/confidence_rules/pending_sections/user_dynamic",
        ),
    ):
        assert refused_field(profiles, change) == field


def test_who_may_patch_a_binding():
    registry = load_registry(PROFILES.parent / "related" / "profiles")
    soorma = registry.get("soorma-coala-v1")
    assert soorma is not None
    knowledge, working = soorma.binding("knowledge"), soorma.binding("working")
    assert knowledge is not None and knowledge.shared and knowledge.patch_roles == {"write"}
    assert working is not None and not working.shared and working.patch_roles == {"write"}
    import dataclasses

    assert dataclasses.replace(knowledge, write_roles=None).patch_roles == {"admin"}


def test_revert_roles_default_to_admin_and_a_profile_may_name_others(profiles: Path):
    def edit_bindings(raw: dict[str, Any]) -> None:
        raw["document_bindings"][0]["revert_roles"] = ["write", "review"]

    edit(profiles, edit_bindings)
    profile = load_registry(profiles).get("project-copilot-v1")
    assert profile is not None
    assert profile.bindings[0].revert_roles == {"write", "review"}
    assert profile.bindings[1].revert_roles == {"admin"}


@pytest.mark.parametrize("roles", [[], ["forget"], ["admin", "admin"], "admin"])
def test_bad_revert_roles_stop_the_load_naming_the_field(profiles: Path, roles: Any):
    def edit_bindings(raw: dict[str, Any]) -> None:
        raw["document_bindings"][0]["revert_roles"] = roles

    edit(profiles, edit_bindings)
    with pytest.raises(ConfigError) as caught:
        load_registry(profiles)
    assert "revert_roles" in caught.value.field


def test_a_ranking_without_weight_is_refused(profiles: Path):
    ranking = {"relevance": 0, "importance": 0}
    edit(profiles, lambda raw: raw.update(search_rules={"ranking": ranking}))
    with pytest.raises(ConfigError) as caught:
        load_registry(profiles)
    assert caught.value.field == "/search_rules/ranking"


def test_a_dense_weight_is_read_and_kept_within_zero_to_one(profiles: Path):
    edit(profiles, lambda raw: raw.update(search_rules={"dense_weight": 0.25}))
    assert load_registry(profiles).get("project-copilot-v1").dense_weight == 0.25  # type: ignore[union-attr]
    change = lambda raw: raw.update(search_rules={"dense_weight": 1.5})  # noqa: E731
    assert refused_field(profiles, change) == "/search_rules/dense_weight"


def test_promotion_rules_are_checked_at_load(profiles: Path):
    rules = {"binding": "project_doc", "pointer": "/recent_notes/-", "value": "{text}"}
    for change, field in (
        (lambda raw: raw.update(promotion_rules=rules), "/promotion_rules/binding"),
        (
            lambda raw: raw.update(
                promotion_rules={**rules, "binding": "user_dynamic", "value": "{nope}"}
            ),
            "/promotion_rules/value",
        ),
        (
            lambda raw: raw.update(
                promotion_rules={**rules, "binding": "user_dynamic", "pointer": "/preferences/-"}
            ),
            "/promotion_rules/pointer",  # no item_identity on /preferences
        ),
    ):
        assert refused_field(profiles, change) == field


def test_sensitivity_rules_name_known_classes_and_bindings(profiles: Path):
    base = {"classes": ["standard", "restricted"]}
    bad_class = {**base, "by_field": {"field": "category", "prefixes": {"health": "secret"}}}
    bad_binding = {**base, "sections": {"ghost": {"/x": "restricted"}}}
    assert refused_field(profiles, lambda raw: raw.update(sensitivity_rules=bad_class)) == (
        "/sensitivity_rules/by_field/prefixes/health"
    )
    assert refused_field(profiles, lambda raw: raw.update(sensitivity_rules=bad_binding)) == (
        "/sensitivity_rules/sections/ghost"
    )


def test_a_replay_rule_writing_another_item_shape_stops_startup(profiles: Path):
    """Every writer the profile configures writes its section's one shape: a rule whose
    value is a bare string, where the schema wants ``{"text": ...}``, never loads."""

    def change(raw: dict) -> None:  # type: ignore[type-arg]
        [rule] = [r for r in raw["replay_rules"]["statements"] if r["id"] == "preference"]
        rule["value"] = "Prefers {text}"

    assert refused_field(profiles, change).startswith("/replay_rules/statements/2")


def test_rendering_and_reshaping_rules_are_checked_at_load(profiles: Path):
    for change, field in (
        (
            lambda raw: raw["context_rules"].update(rendering={"text_fields": "text"}),
            "/context_rules/rendering/text_fields",
        ),
        (
            lambda raw: raw["context_rules"].update(rendering={"omit": ["evidence"]}),
            "/context_rules/rendering",
        ),
        (
            lambda raw: raw["compaction_rules"]["user_dynamic"]["sections"]["/preferences"].update(
                string_items_as=""
            ),
            "/compaction_rules/user_dynamic/sections//preferences/string_items_as",
        ),
    ):
        assert refused_field(profiles, change) == field


def test_a_pending_item_schema_must_admit_the_services_proposal_id(profiles: Path):
    schema = profiles / "schemas" / "memory.user.dynamic" / "1.0.0.json"
    raw = json.loads(schema.read_text())
    del raw["properties"]["pending_confirmations"]["items"]["properties"]["proposal_id"]
    schema.write_text(json.dumps(raw))  # additionalProperties false: every proposal refused
    with pytest.raises(ConfigError, match="proposal_id") as caught:
        load_registry(profiles)
    assert caught.value.field == "/confidence_rules/pending_sections/user_dynamic"
