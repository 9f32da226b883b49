"""Cross checks of a profile's newer members (issue 15), beside
:mod:`memnet.services.profiles.registry`'s: each raises
:class:`~memnet.domain.errors.ConfigError` naming the file and field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memnet.domain import pointers
from memnet.domain.errors import ConfigError
from memnet.domain.promotion import FIELDS
from memnet.domain.value_templates import template_fields


def check_scopes(raw: Mapping[str, Any], src: str) -> None:
    """A namespace's bindings share one scope (a listing reads one owner's folder), and
    the per-user jobs (replay, proposals, compaction, freshness, routing) never write a
    tenant's shared document: a user's conversation must not rewrite what every user
    reads."""
    scopes: dict[str, str] = {}
    for i, binding in enumerate(raw["document_bindings"]):
        scope = binding.get("scope", "user")
        if scopes.setdefault(binding["namespace"], scope) != scope:
            raise ConfigError(
                src, f"/document_bindings/{i}/scope", "differs from its namespace's other bindings"
            )
    shared = {b["binding_id"] for b in raw["document_bindings"] if b.get("scope") == "tenant"}
    used = {
        "/confidence_rules/pending_sections": raw.get("confidence_rules", {}).get(
            "pending_sections", {}
        ),
        "/compaction_rules": raw.get("compaction_rules", {}),
        "/freshness_rules/sections": raw.get("freshness_rules", {}).get("sections", {}),
    }
    for where, rules in used.items():
        for binding_id in set(rules) & shared:
            raise ConfigError(src, f"{where}/{binding_id}", "names a tenant-scoped binding")
    routing = raw.get("context_rules", {}).get("routing")
    if routing is not None and routing["index_binding"] in shared:
        raise ConfigError(
            src, "/context_rules/routing/index_binding", "names a tenant-scoped binding"
        )
    for i, rule in enumerate(raw.get("replay_rules", {}).get("statements", [])):
        if rule["binding"] in shared:
            where = f"/replay_rules/statements/{i}/binding"
            raise ConfigError(src, where, "names a tenant-scoped binding")


def check_identities(raw: Mapping[str, Any], src: str) -> None:
    """An ``item_identity`` section must be writable as a whole: an upsert replaces an
    item of it, which an allowlist naming only ``/section/-`` (appends) does not allow."""
    for i, binding in enumerate(raw["document_bindings"]):
        writable = raw.get("writable_path_rules", {}).get(binding["binding_id"], [])
        rules = [pointers.parse(r) for r in writable]
        for section in binding.get("item_identity", {}):
            if not any(pointers.is_within(pointers.parse(section), r) for r in rules):
                where = f"/document_bindings/{i}/item_identity"
                raise ConfigError(src, where, f"{section} is not writable as a whole")


def check_routing(raw: Mapping[str, Any], src: str) -> None:
    routing = raw.get("context_rules", {}).get("routing")
    if routing is None:
        return
    fixed = {b["binding_id"] for b in raw["document_bindings"] if "path" in b}
    short_lived = {b["binding_id"] for b in raw["document_bindings"] if "ttl_seconds" in b}
    if routing["index_binding"] not in fixed - short_lived:
        raise ConfigError(
            src,
            "/context_rules/routing/index_binding",
            "must name a binding with a fixed path and no ttl_seconds (the index is cached)",
        )
    variable = "{" + routing["project_variable"] + "}"
    if not any(variable in b.get("path_template", "") for b in raw["document_bindings"]):
        raise ConfigError(
            src, "/context_rules/routing/project_variable", "appears in no binding's path_template"
        )


def check_ranking(raw: Mapping[str, Any], src: str) -> None:
    """A profile's search ranking needs a weight above 0 (a request's is checked too)."""
    ranking = raw.get("search_rules", {}).get("ranking")
    if ranking is None:
        return
    weights = (
        ranking.get("relevance", 1.0),
        ranking.get("importance", 0),
        ranking.get("recency", 0),
    )
    if sum(weights) <= 0:
        raise ConfigError(src, "/search_rules/ranking", "needs a weight above 0")


def check_promotion(raw: Mapping[str, Any], src: str) -> None:
    """``promotion_rules`` writes a user's own fixed-path document, with known fields."""
    rules = raw.get("promotion_rules")
    if rules is None:
        return
    binding = next(
        (b for b in raw["document_bindings"] if b["binding_id"] == rules["binding"]), None
    )
    if binding is None or "path" not in binding or binding.get("scope") == "tenant":
        raise ConfigError(
            src, "/promotion_rules/binding", "must name a user binding with a fixed path"
        )
    unknown = sorted(template_fields(rules["value"]) - FIELDS)
    if unknown:
        raise ConfigError(src, "/promotion_rules/value", f"unknown fields {unknown}")
    section = rules["pointer"].removesuffix("/-")
    writable = raw.get("writable_path_rules", {}).get(binding["binding_id"], [])
    parsed = pointers.parse(section)
    if not any(pointers.is_within(parsed, pointers.parse(r)) for r in writable):
        raise ConfigError(src, "/promotion_rules/pointer", "is not writable in the binding")
    if "write" not in binding.get("write_roles", ["write"]):
        raise ConfigError(src, "/promotion_rules/binding", "its write_roles leave out write")
    if section not in binding.get("item_identity", {}):
        # without it every run would append the same patterns again
        raise ConfigError(src, "/promotion_rules/pointer", "its section needs item_identity")


def check_section_promotion(raw: Mapping[str, Any], src: str) -> None:
    """A section's ``promote.to`` is another section of the same binding's compaction
    rules (so its items are compacted there too), neither inside nor above it."""
    for binding_id, rules in raw.get("compaction_rules", {}).items():
        sections = rules.get("sections", {})
        for pointer, body in sections.items():
            to = body.get("promote", {}).get("to")
            if to is None:
                continue
            where = f"/compaction_rules/{binding_id}/sections/{pointer}/promote/to"
            nested = to.startswith(pointer + "/") or pointer.startswith(to + "/")
            if to not in sections or to == pointer or nested:
                raise ConfigError(src, where, "must name another section of these rules")


def check_sensitivity(raw: Mapping[str, Any], src: str) -> None:
    """Every class ``sensitivity_rules`` names is one of its ``classes``, and its
    sections name bindings of the profile."""
    rules = raw.get("sensitivity_rules")
    if rules is None:
        return
    classes = set(rules["classes"])
    for prefix, name in rules.get("by_field", {}).get("prefixes", {}).items():
        if name not in classes:
            where = f"/sensitivity_rules/by_field/prefixes/{prefix}"
            raise ConfigError(src, where, f"{name!r} is not one of the classes")
    for i, binding in enumerate(raw["document_bindings"]):
        if binding.get("lookup_fields"):  # a lookup matches stored content, not a view
            where = f"/document_bindings/{i}/lookup_fields"
            raise ConfigError(src, where, "lookups are not available with sensitivity_rules")
    ids = {b["binding_id"] for b in raw["document_bindings"]}
    for binding_id, sections in rules.get("sections", {}).items():
        if binding_id not in ids:
            raise ConfigError(
                src, f"/sensitivity_rules/sections/{binding_id}", "names no binding of this profile"
            )
        for pointer, name in sections.items():
            if name not in classes:
                where = f"/sensitivity_rules/sections/{binding_id}"
                raise ConfigError(src, where, f"{pointer}: {name!r} is not one of the classes")
