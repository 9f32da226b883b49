"""Revalidation of a patched document (spec 12): when the document a patch started from
is known to satisfy its schema, only what the patch changed is checked again.

A document is *known valid* when its exact stored bytes passed validation in this
process, under the same validator (:class:`KnownValid`, keyed by a digest of the bytes,
so a file edited by hand is never taken for one that was checked). A patch changes the
document only along its ops' paths, so :func:`still_valid` walks each path from the
content schema's root through *plain* schema nodes (an object node of ``type``,
``required``, ``properties`` and a boolean ``additionalProperties``; an array node of
``type`` and ``items``), checks those keywords on the new containers, and runs
jsonschema only on the subtree at the end of the path. Anything else (another keyword,
several ops reaching into one array, a path outside ``content``) stops the walk early
and validates that whole subtree. ``True`` means the whole-document schema holds;
``False`` means "not shown": the caller then validates the whole content, so verdicts
and error reports stay those of the full validator
(``tests/unit/test_revalidation.py`` checks the agreement).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator

from memnet.envelope import CONTENT
from memnet.patching import Op
from memnet.pointers import Segments

_ANNOTATIONS = frozenset(
    {"$schema", "$comment", "$defs", "title", "description", "default", "examples"}
)
_OBJECT_KEYWORDS = _ANNOTATIONS | {"type", "required", "properties", "additionalProperties"}
_ARRAY_KEYWORDS = _ANNOTATIONS | {"type", "items"}
_DYNAMIC = ("$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor")


class KnownValid:
    """Digests of document bytes that passed validation, each with its validator; the
    ``limit`` most recently added are kept."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._seen: OrderedDict[bytes, Draft202012Validator] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, data: bytes, validator: Draft202012Validator) -> None:
        key = _digest(data)
        with self._lock:
            self._seen[key] = validator
            self._seen.move_to_end(key)
            if len(self._seen) > self._limit:
                self._seen.popitem(last=False)

    def holds(self, data: bytes, validator: Draft202012Validator) -> bool:
        key = _digest(data)
        with self._lock:
            return self._seen.get(key) is validator


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


def still_valid(validator: Draft202012Validator, document: Any, ops: list[Op]) -> bool:
    """Whether ``document``'s content satisfies the schema of ``validator`` (an envelope
    schema), given that the document before ``ops`` did. False: not shown."""
    schema = _ContentSchema.of(validator)
    if schema is None or not isinstance(document, dict) or CONTENT not in document:
        return False
    writing = [op for op in ops if op.writes()]
    paths: list[tuple[Segments | None, str]] = [(op.segments, op.op) for op in writing]
    paths += [(op.from_segments, "remove") for op in writing if op.op == "move"]
    # Array indices of one op still name its element afterwards; not so for a move (a
    # removal, then an insertion that can shift the removal's element).
    exact = len(writing) == 1 and writing[0].op != "move"
    return all(
        segments is not None and _path_valid(schema, document[CONTENT], segments, kind, exact)
        for segments, kind in paths
    )


def _path_valid(
    schema: _ContentSchema, content: Any, segments: Segments, kind: str, exact: bool
) -> bool:
    if not segments or segments[0] != CONTENT:
        return False
    node, pointer, value = schema.root, "", content
    rest = segments[1:]
    for depth, segment in enumerate(rest):
        last = depth == len(rest) - 1
        if _plain_object(node):
            if not _object_holds(node, value):
                return False
            properties = node.get("properties", {})
            if segment not in value or segment not in properties:
                return True  # a removed key, or one additionalProperties allows
            node, value = properties[segment], value[segment]
            pointer = f"{pointer}/properties/{_escape(segment)}"
        elif exact and _plain_array(node):
            if not isinstance(value, list):
                return False
            if last and kind == "remove":
                return True  # the other items are unchanged
            index = _index(segment, value)
            if index is None:
                return False
            node, value, pointer = node["items"], value[index], f"{pointer}/items"
        else:
            break
    return schema.valid_at(pointer, value)


def _plain_object(node: Any) -> bool:
    return (
        isinstance(node, dict)
        and node.get("type") == "object"
        and node.keys() <= _OBJECT_KEYWORDS
        and isinstance(node.get("properties", {}), dict)
        and isinstance(node.get("required", []), list)
        and isinstance(node.get("additionalProperties", True), bool)
    )


def _object_holds(node: Mapping[str, Any], value: Any) -> bool:
    if not isinstance(value, dict) or not all(name in value for name in node.get("required", [])):
        return False
    if node.get("additionalProperties", True) is True:
        return True
    properties: Mapping[str, Any] = node.get("properties", {})
    return value.keys() <= properties.keys()


def _plain_array(node: Any) -> bool:
    return (
        isinstance(node, dict)
        and node.get("type") == "array"
        and "items" in node
        and (node.keys() <= _ARRAY_KEYWORDS)
    )


def _index(segment: str, items: list[Any]) -> int | None:
    if segment == "-":
        return len(items) - 1 if items else None
    if not segment.isdigit() or not 0 <= int(segment) < len(items):
        return None
    return int(segment)


def _escape(segment: str) -> str:
    return quote(segment.replace("~", "~0").replace("/", "~1"), safe="")


class _ContentSchema:
    """The content schema of one envelope validator: its contents, and validators for
    its subschemas (resolved once, each with the resolver of its place in the schema)."""

    def __init__(self, validator: Draft202012Validator, uri: str, root: Any) -> None:
        self._validator, self._uri, self.root = validator, uri, root
        self._at: dict[str, Validator] = {}

    @classmethod
    def of(cls, validator: Draft202012Validator) -> _ContentSchema | None:
        found = _schemas.get(id(validator))
        if found is None or found[0] is not validator:
            found = (validator, cls._build(validator))
            _schemas[id(validator)] = found
        return found[1]

    @classmethod
    def _build(cls, validator: Draft202012Validator) -> _ContentSchema | None:
        resolver = getattr(validator, "_resolver", None)  # jsonschema 4.18+ (pinned)
        try:
            uri = validator.schema["properties"][CONTENT]["$ref"]  # type: ignore[index]
            root = resolver.lookup(uri).contents  # type: ignore[union-attr]
        except (AttributeError, KeyError, TypeError, LookupError):
            return None
        text = json.dumps(root)
        if not isinstance(root, dict) or any(f'"{k}"' in text for k in _DYNAMIC):
            return None  # dynamic scope depends on the path taken: validate from the root
        return cls(validator, uri, root)

    def valid_at(self, pointer: str, value: Any) -> bool:
        checker = self._at.get(pointer)
        if checker is None:
            resolved = self._validator._resolver.lookup(  # type: ignore[attr-defined]
                f"{self._uri}#{pointer}" if pointer else self._uri
            )
            checker = self._validator.evolve(schema=resolved.contents, _resolver=resolved.resolver)
            self._at[pointer] = checker
        return next(iter(checker.iter_errors(value)), None) is None


_schemas: dict[int, tuple[Draft202012Validator, _ContentSchema | None]] = {}
