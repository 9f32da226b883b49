"""Schema migrations (spec 8.1, 20, 21; docs/profiles.md, "Schema migrations"). Pure.

A schema's versions may be joined by steps, each from one version to a later one,
declared in ``<profiles>/schemas/<schema_id>/migrations.json``: either JSON Patch
operations (RFC 6902, content-relative) or a named transform of :data:`TRANSFORMS`,
a pure function of the content that answers the JSON Patch operations for that
content. Either way a migration is JSON Patch: the audit record of the change that
migrates a document holds its operations (the envelope's ``/schema_version`` and the
``/content`` ones), so folding the history still reproduces the document.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain import pointers
from memnet.domain.envelope import CONTENT, Json
from memnet.domain.errors import BadRequest, Unprocessable
from memnet.domain.patching import apply_ops, parse_ops

FILE_NAME = "migrations.json"  # beside a schema's versions: schemas/<schema_id>/migrations.json
MAX_STEPS = 100  # a file's steps (and so the longest path)

_VERSION = {"type": "string", "pattern": "^[0-9]+\\.[0-9]+\\.[0-9]+$"}
META_SCHEMA: Json = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["migrations"],
    "additionalProperties": False,
    "properties": {
        "description": {"type": "string", "maxLength": 2000},
        "migrations": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_STEPS,
            "items": {
                "type": "object",
                "required": ["from", "to", "examples"],
                "additionalProperties": False,
                "oneOf": [{"required": ["ops"]}, {"required": ["transform"]}],
                "properties": {
                    "from": _VERSION,
                    "to": _VERSION,
                    "description": {"type": "string", "maxLength": 2000},
                    "ops": {"type": "array", "minItems": 1, "maxItems": 1000},
                    "transform": {"type": "string"},
                    "args": {"type": "object"},
                    "examples": {
                        "type": "array",
                        "minItems": 1,
                        "maxItems": 20,
                        "items": {"type": "object"},
                        "description": "contents at `from` the step must migrate to a valid `to`",
                    },
                },
            },
        },
    },
}


class TransformRefused(ValueError):
    """A transform cannot migrate this content (the reason quotes no value)."""


@dataclass(frozen=True)
class Transform:
    """A named migration: ``arguments`` (name: ``pointer`` or ``member``) and ``plan``,
    the content-relative JSON Patch operations it makes of a content."""

    arguments: Mapping[str, str]
    plan: Callable[[Any, Mapping[str, str]], list[Json]]


def _array(content: Any, pointer: str) -> list[Any]:
    try:
        found = pointers.resolve(content, pointers.parse(pointer))
    except (KeyError, ValueError):
        found = None
    if not isinstance(found, list):
        raise TransformRefused(f"{pointer} is not an array in this document")
    return found


def rename_member(content: Any, args: Mapping[str, str]) -> list[Json]:
    """Each object item of the array at ``array`` has its member ``from`` renamed to
    ``to`` (an item without it is left as it is; one that has both is refused: the
    rename would lose a value)."""
    array, old, new = args["array"], args["from"], args["to"]
    ops = []
    for i, item in enumerate(_array(content, array)):
        if not isinstance(item, dict) or old not in item:
            continue
        if new in item:
            raise TransformRefused(f"item {i} of {array} has both {old!r} and {new!r}")
        at = (*pointers.parse(array), str(i))
        source, target = pointers.render((*at, old)), pointers.render((*at, new))
        ops.append({"op": "move", "from": source, "path": target})
    return ops


def wrap_strings(content: Any, args: Mapping[str, str]) -> list[Json]:
    """Each string item of the array at ``array`` becomes ``{member: the string}``."""
    array, member = args["array"], args["member"]
    at = pointers.parse(array)
    return [
        {"op": "replace", "path": pointers.render((*at, str(i))), "value": {member: item}}
        for i, item in enumerate(_array(content, array))
        if isinstance(item, str)
    ]


TRANSFORMS: Mapping[str, Transform] = {
    "rename_member": Transform(
        {"array": "pointer", "from": "member", "to": "member"}, rename_member
    ),
    "wrap_strings": Transform({"array": "pointer", "member": "member"}, wrap_strings),
}


@dataclass(frozen=True)
class Step:
    """One declared migration of a schema, from one version to a later one."""

    from_version: str
    to_version: str
    ops: list[Json] | None = None  # content-relative
    transform: str | None = None
    args: Mapping[str, str] = field(default_factory=dict)
    examples: list[Json] = field(default_factory=list)

    def content_ops(self, content: Any) -> list[Json]:
        """The content-relative operations that migrate ``content``."""
        if self.transform is None:
            return list(self.ops or [])
        return TRANSFORMS[self.transform].plan(content, self.args)

    def as_json(self) -> Json:
        found: Json = {"from": self.from_version, "to": self.to_version}
        if self.transform is not None:
            return {**found, "transform": self.transform, "args": dict(self.args)}
        return {**found, "ops": self.ops}


def parse_steps(raw: Mapping[str, Any]) -> list[Step]:
    """The steps of a ``migrations.json`` that satisfies :data:`META_SCHEMA`."""
    return [
        Step(
            from_version=item["from"],
            to_version=item["to"],
            ops=item.get("ops"),
            transform=item.get("transform"),
            args=item.get("args", {}),
            examples=item["examples"],
        )
        for item in raw["migrations"]
    ]


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def steps_problem(steps: list[Step], versions: set[str]) -> tuple[str, str] | None:
    """Where (a pointer into the file) and why a schema's steps are unusable, or None:
    each joins two registered versions, forward; at most one leaves a version (so the
    way from a version to another is one path); declared ops parse; a transform is
    known and given exactly its arguments."""
    seen: set[str] = set()
    for i, step in enumerate(steps):
        where = f"/migrations/{i}"
        for name, version in (("from", step.from_version), ("to", step.to_version)):
            if version not in versions:
                return f"{where}/{name}", f"version {version} of the schema is not registered"
        if version_key(step.to_version) <= version_key(step.from_version):
            return f"{where}/to", "a migration goes to a later version"
        if step.from_version in seen:
            return f"{where}/from", f"another migration already leaves {step.from_version}"
        seen.add(step.from_version)
        problem = _how_problem(step)
        if problem is not None:
            return f"{where}/{problem[0]}", problem[1]
    return None


def _how_problem(step: Step) -> tuple[str, str] | None:
    if step.transform is None:
        try:
            parse_ops(step.ops)
        except BadRequest as exc:
            return "ops", exc.message
        return None
    transform = TRANSFORMS.get(step.transform)
    if transform is None:
        return "transform", f"unknown transform; known: {', '.join(sorted(TRANSFORMS))}"
    if set(step.args) != set(transform.arguments):
        return "args", f"{step.transform} takes {', '.join(sorted(transform.arguments))}"
    for name, kind in transform.arguments.items():
        value = step.args[name]
        if not isinstance(value, str) or not value:
            return f"args/{name}", "must be a non-empty string"
        if kind == "pointer" and not _is_pointer(value):
            return f"args/{name}", "must be a content-relative JSON Pointer (/section)"
    return None


def _is_pointer(text: str) -> bool:
    try:
        return bool(pointers.parse(text))
    except ValueError:
        return False


def path(steps: Mapping[str, Step], start: str, target: str) -> list[Step] | None:
    """The steps from version ``start`` to ``target`` (``steps`` by their ``from``), or
    None if none lead there; ``[]`` when they are the same version."""
    found: list[Step] = []
    version = start
    while version != target:
        step = steps.get(version)
        if step is None or len(found) >= MAX_STEPS:
            return None
        found.append(step)
        version = step.to_version
    return found


class MigrationFailed(Unprocessable):
    """A declared migration does not apply to this document; it is left as it was."""

    code = "MIGRATION_FAILED"


@dataclass(frozen=True)
class Migrated:
    """A document migrated in memory: the envelope after, and the envelope-level ops
    (what an audit record stores) that make it of the one before."""

    document: Json
    ops: list[Json]
    from_version: str
    to_version: str

    def as_json(self) -> Json:
        """What the audit record of the change that migrated says of it."""
        return {"from": self.from_version, "to": self.to_version}


def migrate(schema_id: str, document: Json, steps: list[Step]) -> Migrated:
    """``document`` (an envelope) migrated through ``steps`` in order; raises
    :class:`MigrationFailed` naming the step and the op that did not apply."""
    content, ops = document.get(CONTENT), list[Json]()
    for step in steps:
        try:
            planned = step.content_ops(content)
            content = apply_ops(content, parse_ops(planned))
        except (TransformRefused, Unprocessable, BadRequest) as exc:
            raise _failed(schema_id, step, exc) from exc
        ops.extend(_in_content(op) for op in planned)
    target = steps[-1].to_version if steps else document.get("schema_version", "")
    version = {"op": "replace", "path": "/schema_version", "value": target}
    after = {**document, "schema_version": target, CONTENT: content}
    return Migrated(after, [version, *ops], str(document.get("schema_version")), target)


def _in_content(op: Json) -> Json:
    moved = {**op, "path": "/" + CONTENT + op["path"]}
    if "from" in op:
        moved["from"] = "/" + CONTENT + op["from"]
    return moved


def _failed(schema_id: str, step: Step, exc: Exception) -> MigrationFailed:
    reason = exc.message if isinstance(exc, Unprocessable | BadRequest) else str(exc)
    details: Json = {"schema_id": schema_id, "from": step.from_version, "to": step.to_version}
    if isinstance(exc, Unprocessable | BadRequest):
        details.update({k: v for k, v in exc.details.items() if k in ("op_index", "path")})
    how = f"transform {step.transform}" if step.transform else "ops"
    message = (
        f"The migration of {schema_id} from {step.from_version} to {step.to_version} "
        f"({how}) does not apply to this document: {reason}"
    )
    return MigrationFailed(message, **details)
