"""The profile and schema registries, loaded once from ``MEMNET_PROFILES_DIR`` (spec 8.1, 8.2).

Layout: ``<dir>/*.json`` are profiles (file name = ``profile_id``), and
``<dir>/schemas/<schema_id>/<version>.json`` are JSON Schemas (draft 2020-12) for a
document's ``content``. A broken file stops startup with a
:class:`~memnet.domain.errors.ConfigError` that names the file and the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from memnet.domain.callers import Caller
from memnet.domain.envelope import envelope_schema
from memnet.domain.errors import BadRequest, ConfigError, NotFound
from memnet.domain.profiles import Binding, Profile, build_profile

SchemaKey = tuple[str, str]


def schema_uri(schema_id: str, version: str) -> str:
    return f"urn:memnet:schema:{schema_id}:{version}"


@cache
def _profile_meta_validator() -> Draft202012Validator:
    text = resources.files("memnet.domain").joinpath("profile.schema.json").read_text()
    return Draft202012Validator(json.loads(text))


class ProfileRegistry:
    """Profiles by id plus one compiled whole-document validator per (schema_id, version)."""

    def __init__(self, profiles: Mapping[str, Profile], schemas: Mapping[SchemaKey, Any]):
        self._profiles = dict(profiles)
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


def load_registry(directory: Path) -> ProfileRegistry:
    """Load and cross-check every profile and schema under ``directory``."""
    if not directory.is_dir():
        raise ConfigError(str(directory), "MEMNET_PROFILES_DIR", "not a directory")
    schemas = dict(_load_schemas(directory / "schemas"))
    profiles = {p.profile_id: p for p in _load_profiles(directory, schemas)}
    if not profiles:
        raise ConfigError(str(directory), "profiles", "no profile (*.json) found")
    registry = ProfileRegistry(profiles, schemas)
    for profile in profiles.values():
        _check_initial_content(registry, profile, directory)
    return registry


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), "(file)", f"not readable JSON: {exc}") from exc


def _load_schemas(root: Path) -> Iterator[tuple[SchemaKey, Any]]:
    for path in sorted(root.glob("*/*.json")) if root.is_dir() else []:
        body = _read_json(path)
        try:
            Draft202012Validator.check_schema(body)
        except SchemaError as exc:
            where = "/" + "/".join(str(p) for p in exc.path)
            raise ConfigError(str(path), where, f"invalid JSON Schema: {exc.message}") from exc
        yield (path.parent.name, path.stem), body


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
    _check_routing(raw, src)


def _check_routing(raw: Mapping[str, Any], src: str) -> None:
    routing = raw.get("context_rules", {}).get("routing")
    if routing is None:
        return
    fixed = {b["binding_id"] for b in raw["document_bindings"] if "path" in b}
    if routing["index_binding"] not in fixed:
        raise ConfigError(
            src, "/context_rules/routing/index_binding", "must name a binding with a fixed path"
        )
    variable = "{" + routing["project_variable"] + "}"
    if not any(variable in b.get("path_template", "") for b in raw["document_bindings"]):
        raise ConfigError(
            src, "/context_rules/routing/project_variable", "appears in no binding's path_template"
        )


def _check_binding_keys(rules: Mapping[str, Any], ids: list[str], where: str, src: str) -> None:
    for key in rules:
        if key not in ids:
            raise ConfigError(src, f"{where}/{key}", "names no binding of this profile")


def _check_initial_content(registry: ProfileRegistry, profile: Profile, directory: Path) -> None:
    from memnet.domain.envelope import new_envelope

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
