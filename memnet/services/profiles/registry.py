"""The profile and schema registries, loaded once from ``MEMNET_PROFILES_DIR`` (spec 8.1, 8.2).

Layout: ``<dir>/*.json`` are profiles (file name = ``profile_id``), and
``<dir>/schemas/<schema_id>/<version>.json`` are JSON Schemas (draft 2020-12) for a
document's ``content``. A broken file stops startup with a
:class:`~memnet.domain.errors.ConfigError` that names the file and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from memnet.domain import migrations, pointers
from memnet.domain.bindings import Binding, new_envelope
from memnet.domain.callers import Caller
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import CONTENT, Json, envelope_schema
from memnet.domain.errors import BadRequest, ConfigError, NotFound, Unprocessable
from memnet.domain.migrations import Migrated, Step
from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.policy import WriteIntent, plan_ops
from memnet.domain.profiles import Profile, StatementRule, build_profile, freshness_problem
from memnet.domain.proposals import ID_MEMBER, proposal_id
from memnet.domain.value_templates import fill_value, statement_fields, template_problem
from memnet.services.profiles.checks import (
    check_identities,
    check_promotion,
    check_ranking,
    check_routing,
    check_scopes,
    check_section_promotion,
    check_sensitivity,
)
from memnet.services.profiles.migration_checks import (
    StepsBySchema,
    check_migrations,
    load_migrations,
)

SchemaKey = tuple[str, str]


def schema_uri(schema_id: str, version: str) -> str:
    return f"urn:memnet:schema:{schema_id}:{version}"


@cache
def _profile_meta_validator() -> Draft202012Validator:
    text = resources.files("memnet.domain").joinpath("profile.schema.json").read_text()
    return Draft202012Validator(json.loads(text))


class ProfileRegistry:
    """Profiles by id plus one compiled whole-document validator per (schema_id, version)."""

    def __init__(
        self,
        profiles: Mapping[str, Profile],
        schemas: Mapping[SchemaKey, Any],
        steps: StepsBySchema | None = None,
    ):
        self._profiles, self._schemas = dict(profiles), dict(schemas)
        self._steps = dict(steps or {})
        registry: Registry[Any] = Registry().with_resources(
            (schema_uri(*key), Resource.from_contents(body, DRAFT202012))
            for key, body in schemas.items()
        )
        self._validators = {
            key: Draft202012Validator(
                envelope_schema(key[0], key[1], schema_uri(*key)),
                registry=registry,
                format_checker=Draft202012Validator.FORMAT_CHECKER,
            )
            for key in schemas
        }

    def get(self, profile_id: str) -> Profile | None:
        return self._profiles.get(profile_id)

    def schemas(self) -> Mapping[SchemaKey, Any]:
        """The content JSON Schemas by (schema_id, version), as loaded (read-only use)."""
        return self._schemas

    def profile_ids(self) -> list[str]:
        return sorted(self._profiles)

    def for_caller(self, caller: Caller, profile_id: str | None) -> Profile:
        """The profile this caller asked for (or its only one), if it may use it."""
        profile_id = profile_id or caller.default_profile(self.profile_ids())
        if profile_id is None:
            raise BadRequest(
                "Name the profile_id: the caller may use several.", code="PROFILE_REQUIRED"
            )
        caller.require_profile(profile_id)
        profile = self.get(profile_id)
        if profile is None:
            raise NotFound(f"Unknown profile {profile_id!r}.", code="PROFILE_NOT_FOUND")
        return profile

    def validator(self, binding: Binding) -> Draft202012Validator:
        return self._validators[(binding.schema_id, binding.schema_version)]

    def migration_steps(self, schema_id: str) -> Mapping[str, Step]:
        """A schema's declared migration steps, by the version each leaves."""
        return self._steps.get(schema_id, {})

    def migrated(self, binding: Binding, document: Json) -> Migrated | None:
        """``document`` migrated in memory to ``binding``'s schema version, or None when
        it is at that version already. A version no declared steps lead from (an older
        one without a migration, or a later one: a newer deployment wrote it) is a 422
        ``SCHEMA_VERSION_UNSUPPORTED``; steps that do not apply, ``MIGRATION_FAILED``."""
        stored = document.get("schema_version")
        if stored == binding.schema_version or document.get("schema_id") != binding.schema_id:
            return None  # current; or another schema's, which validation refuses
        steps = self.migration_steps(binding.schema_id)
        found = (
            None
            if not isinstance(stored, str)
            else migrations.path(steps, stored, binding.schema_version)
        )
        if found is None:
            raise Unprocessable(
                f"The document is stored at {binding.schema_id} {stored}, and no declared "
                f"migration leads from it to {binding.schema_version}, the version this "
                "profile writes.",
                code="SCHEMA_VERSION_UNSUPPORTED",
                schema_id=binding.schema_id,
                stored_version=stored,
                profile_version=binding.schema_version,
            )
        return migrations.migrate(binding.schema_id, document, found)

    def as_read(self, binding: Binding, stored: StoredDocument) -> StoredDocument:
        """A stored document as its binding's ``read_as`` serves it (docs/profiles.md,
        "Schema migrations"): migrated in memory (``latest``) or as stored."""
        return self.as_written(binding, stored) if binding.read_as == "latest" else stored

    def as_written(self, binding: Binding, stored: StoredDocument) -> StoredDocument:
        """The version a write of ``binding`` starts from (what a job plans its ops
        against): ``stored`` migrated in memory to the binding's schema version, its
        ETag the stored version's. One whose migration does not apply is answered as
        stored: the write names the problem."""
        if stored.document.get("schema_version") == binding.schema_version:
            return stored
        try:
            migrated = self.migrated(binding, stored.document)
        except Unprocessable:
            return stored
        return stored if migrated is None else StoredDocument(stored.etag, migrated.document)

    def content_problem(self, schema_id: str, version: str, content: Json) -> str | None:
        """Why ``content`` fails the schema's ``version`` (the first error), or None."""
        sample = {**_sample_envelope(schema_id, version), CONTENT: content}
        error = next(iter(self._validators[(schema_id, version)].iter_errors(sample)), None)
        if error is None:
            return None
        where = "/".join(str(p) for p in error.absolute_path)
        return f"{error.message} (at /{where})"


def load_registry(directory: Path) -> ProfileRegistry:
    """Load and cross-check every profile and schema under ``directory``."""
    if not directory.is_dir():
        raise ConfigError(str(directory), "MEMNET_PROFILES_DIR", "not a directory")
    schemas = dict(_load_schemas(directory / "schemas"))
    versions: dict[str, set[str]] = {}
    for schema_id, version in schemas:
        versions.setdefault(schema_id, set()).add(version)
    steps = load_migrations(directory / "schemas", versions, _read_json)
    profiles = {p.profile_id: p for p in _load_profiles(directory, schemas)}
    if not profiles:
        raise ConfigError(str(directory), "profiles", "no profile (*.json) found")
    registry = ProfileRegistry(profiles, schemas, steps)
    check_migrations(directory / "schemas", steps, profiles.values(), registry.content_problem)
    for profile in profiles.values():
        _check_initial_content(registry, profile, directory)
        _check_proposal_ids(registry, profile, directory)
        _check_statement_samples(registry, profile, directory)
    _check_same_sensitivity(profiles.values(), directory)
    return registry


def _check_same_sensitivity(profiles: Iterable[Profile], directory: Path) -> None:
    """Profiles that bind one namespace classify it alike: a caller allowed two of them
    names the profile of each request, and one without the other's
    ``sensitivity_rules`` would show it everything (docs/profiles.md "Sensitivity")."""
    seen: dict[str, Profile] = {}
    for profile in profiles:
        for namespace in sorted({b.namespace for b in profile.bindings}):
            other = seen.setdefault(namespace, profile)
            mine, theirs = (p.raw.get("sensitivity_rules") for p in (profile, other))
            if mine != theirs:
                raise ConfigError(
                    str(directory / f"{profile.profile_id}.json"),
                    "/sensitivity_rules",
                    f"differs from {other.profile_id!r}'s, which binds namespace {namespace!r} too",
                )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), "(file)", f"not readable JSON: {exc}") from exc


def _load_schemas(root: Path) -> Iterator[tuple[SchemaKey, Any]]:
    for path in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        if path.name == migrations.FILE_NAME:
            continue  # not a version: the schema's migrations (migration_checks)
        body = _read_json(path)
        problem = _schema_problem(json.dumps(body, sort_keys=True))
        if problem is not None:
            where, message = problem
            raise ConfigError(str(path), where, f"invalid JSON Schema: {message}")
        yield (path.parent.name, path.stem), body


@lru_cache(maxsize=256)
def _schema_problem(text: str) -> tuple[str, str] | None:
    """Where and why a schema (its canonical JSON text) fails the JSON Schema
    meta-schema, or None. Cached: the check costs ~10 ms a schema, and a service built
    again from the same files (a test run builds one per test) checks each once."""
    try:
        Draft202012Validator.check_schema(json.loads(text))
    except SchemaError as exc:
        return "/" + "/".join(str(p) for p in exc.path), exc.message
    return None


def _load_profiles(directory: Path, schemas: Mapping[SchemaKey, Any]) -> Iterator[Profile]:
    for path in sorted(directory.glob("*.json")):
        raw = _read_json(path)
        error = next(iter(_profile_meta_validator().iter_errors(raw)), None)
        if error is not None:
            where = "/" + "/".join(str(p) for p in error.absolute_path)
            raise ConfigError(str(path), where, error.message)
        if raw["profile_id"] != path.stem:
            raise ConfigError(str(path), "/profile_id", "must equal the file name")
        _check_references(raw, schemas, str(path))
        yield build_profile(raw)


def _check_references(raw: Mapping[str, Any], schemas: Mapping[SchemaKey, Any], src: str) -> None:
    ids = [b["binding_id"] for b in raw["document_bindings"]]
    for i, binding in enumerate(raw["document_bindings"]):
        if ids.count(binding["binding_id"]) > 1:
            raise ConfigError(src, f"/document_bindings/{i}/binding_id", "duplicate binding id")
        if (binding["schema_id"], binding["schema_version"]) not in schemas:
            raise ConfigError(
                src,
                f"/document_bindings/{i}/schema_id",
                f"schema {binding['schema_id']}@{binding['schema_version']} is not registered",
            )
    for rules in ("writable_path_rules", "denied_path_rules", "compaction_rules"):
        _check_binding_keys(raw.get(rules, {}), ids, f"/{rules}", src)
    confidence = raw.get("confidence_rules", {})
    for rules in ("durable_sections", "pending_sections"):
        _check_binding_keys(confidence.get(rules, {}), ids, f"/confidence_rules/{rules}", src)
    _check_binding_keys(
        raw.get("freshness_rules", {}).get("sections", {}), ids, "/freshness_rules/sections", src
    )
    problem = freshness_problem(raw)
    if problem is not None:
        raise ConfigError(src, *problem)
    check_routing(raw, src)
    check_identities(raw, src)
    check_scopes(raw, src)
    check_ranking(raw, src)
    check_promotion(raw, src)
    check_section_promotion(raw, src)
    check_sensitivity(raw, src)
    _check_statement_rules(raw, src)
    _check_guard(raw, ids, src)


def _check_guard(raw: Mapping[str, Any], ids: list[str], src: str) -> None:
    """``guard_rules`` names bindings of this profile, and its content patterns compile."""
    guard = raw.get("guard_rules", {})
    for rules in ("replay_ceiling", "trusted_roles"):
        _check_binding_keys(guard.get(rules, {}), ids, f"/guard_rules/{rules}", src)
    for family, patterns in guard.get("content", {}).items():
        for i, pattern in enumerate(patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                where = f"/guard_rules/content/{family}/{i}"
                raise ConfigError(src, where, f"not a regular expression: {exc}") from exc


def _check_binding_keys(rules: Mapping[str, Any], ids: list[str], where: str, src: str) -> None:
    for key in rules:
        if key not in ids:
            raise ConfigError(src, f"{where}/{key}", "names no binding of this profile")


def _check_statement_rules(raw: Mapping[str, Any], src: str) -> None:
    """Each ``replay_rules`` statement: a unique id, a pattern that compiles with a
    ``text`` group, a binding of this profile whose path the replay can fill, a pointer
    that appends (``/-``) or names a member, and a value template with known fields."""
    rules = raw.get("replay_rules", {}).get("statements", [])
    bindings = {b["binding_id"]: b for b in raw["document_bindings"]}
    routing = raw.get("context_rules", {}).get("routing", {})
    for i, rule in enumerate(rules):
        where = f"/replay_rules/statements/{i}"
        if [r["id"] for r in rules].count(rule["id"]) > 1:
            raise ConfigError(src, f"{where}/id", "duplicate statement id")
        problems = {
            "pattern": _pattern_problem(rule["pattern"]),
            "binding": _target_problem(bindings.get(rule["binding"]), routing),
            "pointer": _pointer_problem(pointers.parse(rule["pointer"])),
            "value": template_problem(rule.get("value", "{text}")),
        }
        for name, problem in problems.items():
            if problem is not None:
                raise ConfigError(src, f"{where}/{name}", problem)


def _pattern_problem(pattern: str) -> str | None:
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return None if "text" in compiled.groupindex else "needs a named group (?P<text>...)"


def _target_problem(binding: Mapping[str, Any] | None, routing: Mapping[str, Any]) -> str | None:
    """A templated path is filled from the transcript's project hint, as the routing
    project variable (the replay worker's rule), so that must be its only variable."""
    if binding is None:
        return "names no binding of this profile"
    names = set(re.findall(r"\{([a-z_]+)\}", binding.get("path_template", "")))
    if names and names != {routing.get("project_variable")}:
        return "its path_template may use only context_rules.routing.project_variable"
    return None


def _pointer_problem(segments: tuple[str, ...]) -> str | None:
    if "-" in segments[:-1] or segments[-1].isdigit():
        return "must end in /- (append) or name a member"
    return None


def _check_statement_samples(registry: ProfileRegistry, profile: Profile, directory: Path) -> None:
    """A sample of each statement's patch must pass the profile's write policy and, added
    to the binding's initial content, satisfy its schema: a rule that could never write
    stops startup instead of being refused at every replay."""
    for i, rule in enumerate(profile.replay.statements):
        binding = profile.binding(rule.binding_id)
        assert binding is not None  # checked by _check_statement_rules
        src = str(directory / f"{profile.profile_id}.json")
        _check_sample(registry, profile, binding, rule, src, f"/replay_rules/statements/{i}")


def _check_sample(
    registry: ProfileRegistry,
    profile: Profile,
    binding: Binding,
    rule: StatementRule,
    src: str,
    rule_field: str,
) -> None:
    fields = statement_fields("sample", "m1", _SAMPLE_TIME, rule.confidence, "memnet://sample")
    path = pointers.render((CONTENT, *rule.pointer))
    ops = parse_ops([{"op": "add", "path": path, "value": fill_value(rule.value, fields)}])
    intent = WriteIntent("replay", _SAMPLE_TIME, rule.confidence, fields["evidence"])
    refused = next(iter(plan_ops(profile, binding, ops, intent).violations), None)
    if refused is not None:
        field = "confidence" if "CONFIDENCE" in refused.code else "pointer"
        raise ConfigError(src, f"{rule_field}/{field}", f"its patch is refused: {refused.message}")
    sample = new_envelope(binding, _SAMPLE_ID, _SAMPLE_TIME, "registry-check", "chg_check")
    try:
        sample = apply_ops(sample, ops)
    except Unprocessable as exc:
        problem = "has no place in the binding's initial_content"
        raise ConfigError(src, f"{rule_field}/pointer", problem) from exc
    error = next(iter(registry.validator(binding).iter_errors(sample)), None)
    if error is not None:
        problem = f"does not satisfy schema {binding.schema_id}: {error.message}"
        raise ConfigError(src, f"{rule_field}/value", problem)


_SAMPLE_ID = "00000000-0000-4000-8000-000000000000"
_SAMPLE_TIME = "1970-01-01T00:00:00Z"


def _sample_envelope(schema_id: str, version: str) -> Json:
    return {
        "doc_id": _SAMPLE_ID,
        "schema_id": schema_id,
        "schema_version": version,
        "created_at": _SAMPLE_TIME,
        "updated_at": _SAMPLE_TIME,
        "updated_by": "registry-check",
        "change_id": "chg_check",
    }


def _check_proposal_ids(registry: ProfileRegistry, profile: Profile, directory: Path) -> None:
    """Each pending item carries the ``proposal_id`` the service gives it
    (docs/proposals.md): a schema that refuses that member would refuse every proposal,
    so it stops startup. Checked by difference: an item holding only an id may fail for
    what it lacks, never for the id."""
    for binding_id, pending in profile.confidence.pending_sections.items():
        binding = profile.binding(binding_id)
        assert binding is not None  # checked by _check_references
        found = [_item_errors(registry, binding, pending, item) for item in ({}, _SAMPLE_ITEM)]
        if found[1] - found[0]:
            raise ConfigError(
                str(directory / f"{profile.profile_id}.json"),
                f"/confidence_rules/pending_sections/{binding_id}",
                f"schema {binding.schema_id} refuses the proposal_id member of pending items",
            )


def _item_errors(
    registry: ProfileRegistry, binding: Binding, pending: tuple[str, ...], item: Any
) -> set[tuple[str, str]]:
    """(where, what) of each schema error of the initial content with ``[item]`` as its
    pending section (none if it has no place for one)."""
    sample = new_envelope(binding, _SAMPLE_ID, _SAMPLE_TIME, "registry-check", "chg_check")
    path = pointers.render((CONTENT, *pending))
    try:
        sample = apply_ops(sample, parse_ops([{"op": "add", "path": path, "value": [item]}]))
    except Unprocessable:
        return set()
    errors = registry.validator(binding).iter_errors(sample)
    return {(pointers.render(tuple(map(str, e.absolute_path))), str(e.validator)) for e in errors}


_SAMPLE_ITEM = {ID_MEMBER: proposal_id("registry", "check.json", "0" * 32)}


def _check_initial_content(registry: ProfileRegistry, profile: Profile, directory: Path) -> None:
    for i, binding in enumerate(profile.bindings):
        sample = new_envelope(
            binding,
            "00000000-0000-4000-8000-000000000000",
            "1970-01-01T00:00:00Z",
            "registry-check",
            "chg_check",
        )
        error = next(iter(registry.validator(binding).iter_errors(sample)), None)
        if error is not None:
            raise ConfigError(
                str(directory / f"{profile.profile_id}.json"),
                f"/document_bindings/{i}/initial_content",
                f"does not satisfy schema {binding.schema_id}: {error.message}",
            )
