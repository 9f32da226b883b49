"""JSON Patch (RFC 6902): parse the whole patch first, then apply it op by op.

Parsing failures are 400 (spec 10.7, "invalid operation syntax"); an op that cannot be
applied to the current document (missing target, failed ``test``) is a 422 naming the
op. Application is done by the ``jsonpatch`` library.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import jsonpatch
import jsonpointer

from memnet.domain import pointers
from memnet.domain.envelope import serialise
from memnet.domain.errors import BadRequest, Unprocessable
from memnet.domain.pointers import Segments

OPS_WITH_VALUE = frozenset({"add", "replace", "test"})
OPS_WITH_FROM = frozenset({"move", "copy"})
KNOWN_OPS = OPS_WITH_VALUE | OPS_WITH_FROM | {"remove"}


@dataclass(frozen=True)
class Op:
    """One parsed operation; ``segments``/``from_segments`` are the parsed pointers."""

    index: int
    op: str
    path: str
    segments: Segments
    value: Any = None
    from_path: str | None = None
    from_segments: Segments | None = None

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"op": self.op, "path": self.path}
        if self.op in OPS_WITH_VALUE:
            body["value"] = self.value
        if self.from_path is not None:
            body["from"] = self.from_path
        return body

    def writes(self) -> bool:
        return self.op != "test"

    def reads(self) -> bool:
        """Whether the op shows the caller something of the document (``test`` compares
        with it; ``copy`` and ``move`` take a value from it)."""
        return self.op in ("test", "copy", "move")


def parse_ops(raw: Any) -> list[Op]:
    """Parse a JSON Patch array into :class:`Op` objects or raise 400 naming the op: the
    one grammar of an op, for a request body and for every patch the services make."""
    if not isinstance(raw, list):
        raise BadRequest(
            "ops must be a JSON array of operations.", code="INVALID_PATCH", field="ops"
        )
    return [_parse_op(i, item) for i, item in enumerate(raw)]


def _parse_op(index: int, item: Any) -> Op:
    if not isinstance(item, dict):
        raise _invalid(index, "operation must be an object")
    name = item.get("op")
    if not isinstance(name, str) or name not in KNOWN_OPS:  # never echoed: a caller's input
        raise _invalid(index, "op must be one of add, remove, replace, move, copy, test")
    if name in OPS_WITH_VALUE and "value" not in item:
        raise _invalid(index, f"'{name}' needs a 'value'")
    from_path = item.get("from") if name in OPS_WITH_FROM else None
    if name in OPS_WITH_FROM and not isinstance(from_path, str):
        raise _invalid(index, f"'{name}' needs a string 'from'")
    path = item.get("path")
    if not isinstance(path, str):
        raise _invalid(index, "'path' must be a string")
    return Op(
        index=index,
        op=name,
        path=path,
        segments=_pointer(index, path),
        value=item.get("value"),
        from_path=from_path,
        from_segments=None if from_path is None else _pointer(index, from_path),
    )


def _pointer(index: int, text: str) -> Segments:
    try:
        return pointers.parse(text)
    except ValueError as exc:
        raise _invalid(index, str(exc)) from exc


def _invalid(index: int, reason: str) -> BadRequest:
    return BadRequest(f"op {index}: {reason}.", code="INVALID_PATCH", op_index=index)


def apply_ops(document: Any, ops: list[Op], max_chars: int | None = None) -> Any:
    """Return a new document with ``ops`` applied in order; the input is not changed.
    ``max_chars``: the most the document may hold after any ``copy`` (the one op that
    grows it by more than the body brings: 25 copies of a document into itself would
    double it 25 times before the size check after the last op)."""
    try:
        result = _copy(document)
        for op in ops:
            result = _apply_one(result, op)
            if op.op == "copy" and max_chars is not None:
                _check_size(result, op, max_chars)
    except RecursionError as exc:  # a document stored before depth was bounded, or a copy
        raise Unprocessable(  # of a deep value: too deep to work on, not a server error
            "the document nests too deeply to apply the patch.", code="DOCUMENT_TOO_DEEP"
        ) from exc
    return result


def apply_in_place(document: Any, op: Op) -> Any:
    """``document`` (already a copy the caller owns) with ``op`` applied to it; for
    planning ops one at a time without copying the document for each."""
    try:
        return _apply_one(document, op)
    except RecursionError as exc:
        raise Unprocessable(
            "the document nests too deeply to apply the patch.", code="DOCUMENT_TOO_DEEP"
        ) from exc


def _check_size(document: Any, op: Op, max_chars: int) -> None:
    size = len(serialise(document))
    if size > max_chars:
        raise Unprocessable(  # not the size: it would tell the size of what a caller cannot see
            f"op {op.index} (copy to {op.path}) makes the document larger than the "
            f"binding's {max_chars} chars.",
            code="MAX_CHARS_EXCEEDED",
            op_index=op.index,
            path=op.path,
        )


def _copy(value: Any) -> Any:
    """A deep copy of JSON data (a few times faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    if value is None or isinstance(value, str | int | float):  # immutable (bool is an int)
        return value
    return copy.deepcopy(value)


def _apply_one(document: Any, op: Op) -> Any:
    """``op`` applied; an op that cannot apply is refused with a fixed reason: the
    libraries' own texts quote the values they met (a whole array or object), which an
    error must never carry back (a caller may not see all of it: sensitivity)."""
    try:
        return jsonpatch.JsonPatch([op.as_json()]).apply(document, in_place=True)
    except jsonpatch.JsonPatchTestFailed as exc:
        raise _not_applicable(op, "PATCH_TEST_FAILED", TEST_FAILED) from exc
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise _not_applicable(op, "PATCH_NOT_APPLICABLE", _reason(exc)) from exc
    except (KeyError, IndexError, TypeError) as exc:
        raise _not_applicable(op, "PATCH_NOT_APPLICABLE", NO_TARGET) from exc


TEST_FAILED = "the value at the path is not the tested value"
NO_TARGET = "its path (or from) does not resolve in the document"
_REASONS = (  # the libraries' texts that quote nothing, and what we say for them
    ("outside of list", "its array index is past the end of the array"),
    ("own children", "a value cannot move into itself"),
    ("whole document", "the whole document cannot be removed"),
    ("invalid array index", "its array index is not a number"),
)


def _reason(exc: Exception) -> str:
    """A fixed reason for a library error, chosen by its kind; its own text is never
    passed on (many quote the value they met)."""
    text = str(exc)
    return next((reason for found, reason in _REASONS if found in text), NO_TARGET)


def _not_applicable(op: Op, code: str, reason: str) -> Unprocessable:
    return Unprocessable(
        f"op {op.index} ({op.op} {op.path}) cannot be applied: {reason}",
        code=code,
        op_index=op.index,
        path=op.path,
    )
