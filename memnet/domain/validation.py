"""Checks on a document after ops are applied (spec 12, 15; docs/decisions.md "Documents"):
JSON Schema of the whole document, ``max_chars`` and the binding's array limits."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import Any

from jsonschema import Draft202012Validator

from memnet.domain import pointers
from memnet.domain.bindings import Binding
from memnet.domain.envelope import CONTENT, MAX_DOCUMENT_DEPTH, char_count
from memnet.domain.errors import Unprocessable
from memnet.domain.policy import Violation

MAX_REPORTED = 20


def document_violations(
    document: Any,
    binding: Binding,
    validator: Draft202012Validator,
    size: int | None = None,
) -> list[Violation]:
    """The reasons ``document`` may not be stored under ``binding`` (empty if none), at
    most MAX_REPORTED. Cheapest first, stopping at the first kind that finds any: size
    and array limits, then depth, then JSON Schema, whose errors are taken lazily (a
    schema check of a value with 500,000 bad items stops at the 20th).
    ``size``: its :func:`~memnet.domain.envelope.char_count`, if the caller has it already."""
    found = list(_limit_violations(document, binding, size))
    if not found and pointers.depth_exceeds(document, MAX_DOCUMENT_DEPTH):
        found = [TOO_DEEP]
    if not found:
        found = list(islice(_schema_violations(document, validator), MAX_REPORTED))
    return found[:MAX_REPORTED]


TOO_DEEP = Violation(
    "DOCUMENT_TOO_DEEP", f"the document would nest deeper than {MAX_DOCUMENT_DEPTH} levels."
)


def _schema_violations(document: Any, validator: Draft202012Validator) -> Iterator[Violation]:
    for error in validator.iter_errors(document):
        yield Violation(
            "SCHEMA_VIOLATION",
            error.message,
            path=pointers.render(tuple(str(p) for p in error.absolute_path)),
        )


def _limit_violations(document: Any, binding: Binding, size: int | None) -> Iterator[Violation]:
    size = char_count(document) if size is None else size
    if size > binding.max_chars:
        yield Violation(
            "MAX_CHARS_EXCEEDED", f"document is {size} chars; binding allows {binding.max_chars}."
        )
    for section, limit in binding.array_limits.items():
        items = _array_at(document, (CONTENT, *section))
        if items is not None and len(items) > limit:
            yield Violation(
                "ARRAY_LIMIT_EXCEEDED",
                f"{len(items)} items exceed the limit of {limit}.",
                path=pointers.render((CONTENT, *section)),
            )


def _array_at(document: Any, segments: pointers.Segments) -> list[Any] | None:
    try:
        found = pointers.resolve(document, segments)
    except KeyError:
        return None
    return found if isinstance(found, list) else None


def raise_if_any(violations: list[Violation]) -> None:
    """Raise one 422 carrying every violation; its code is the first violation's."""
    if violations:
        first = violations[0]
        summary = first.message if len(violations) == 1 else f"{len(violations)} violations."
        raise Unprocessable(summary, code=first.code, violations=[v.as_json() for v in violations])
