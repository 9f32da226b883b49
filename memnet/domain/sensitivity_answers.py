"""Answers and errors in a caller's terms (issue 15, capability 5; docs/profiles.md
"Sensitivity"): a write's answer shows the caller's view of the document, and paths in
answers and errors are its view paths. A stored index would tell how many hidden items
lie before the one it names, and a message about a value holding hidden content would
show it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memnet.domain import pointers
from memnet.domain.callers import Caller
from memnet.domain.errors import MemnetError
from memnet.domain.patching import Op
from memnet.domain.policy import Violation
from memnet.domain.sensitivity import SensitivityRules, View, to_view, view
from memnet.domain.sensitivity_views import clearance


def shown_body(
    body: dict[str, Any], caller: Caller, rules: SensitivityRules, written: list[Op] | None
) -> dict[str, Any]:
    """A write's answer as ``caller`` may see it: the document's view, and the paths of
    its redirected ops and upserts in the caller's terms (``written``: its own ops)."""
    document = body.get("document")
    level = clearance(caller, rules)
    seen_now = None
    shown = dict(body)
    if isinstance(document, dict):
        seen_now = view(document.get("content"), rules, level)
        shown["document"] = {**document, "content": seen_now.content}
    if written is not None and body.get("redirected_ops"):
        shown["redirected_ops"] = [
            {**r, "from_path": written[r["op_index"]].path}
            if 0 <= r.get("op_index", -1) < len(written)
            else r
            for r in body["redirected_ops"]
        ]
    if body.get("upserts") and level < rules.highest:
        shown["upserts"] = [_upsert_shown(u, seen_now) for u in body["upserts"]]
    return shown


def _upsert_shown(entry: dict[str, Any], seen_now: View | None) -> dict[str, Any]:
    path = entry.get("path")
    found = None
    if seen_now is not None and isinstance(path, str) and path.startswith("/content/"):
        found = to_view(pointers.parse(path)[1:], seen_now)
    rest = {k: v for k, v in entry.items() if k != "path"}
    return rest if found is None else {**rest, "path": pointers.render(("content", *found))}


_GENERIC = {
    "SCHEMA_VIOLATION": "the document would not satisfy its schema here.",
    "MAX_CHARS_EXCEEDED": "the document would exceed the binding's size limit.",
    "ARRAY_LIMIT_EXCEEDED": "the section would exceed its item limit.",
}


def show_error(error: MemnetError, written: list[Op], sent: list[Op]) -> None:
    """``error``, raised for the stored ops ``sent``, changed in place to name the ops'
    paths as the caller ``written`` them (its details, its violations, its message)."""
    swaps = [(s.path, w.path) for s, w in zip(sent, written, strict=True) if s.path != w.path]
    swaps += [
        (s.from_path, w.from_path)
        for s, w in zip(sent, written, strict=True)
        if s.from_path is not None and w.from_path is not None and s.from_path != w.from_path
    ]
    if not swaps:
        return
    error.message = _swapped(error.message, swaps, written, error.details.get("op_index"))
    _fix_detail(error.details, written, sent)
    for entry in error.details.get("violations", ()):
        entry["message"] = _swapped(entry["message"], swaps, written, entry.get("op_index"))
        _fix_detail(entry, written, sent)


def _swapped(text: str, swaps: list[tuple[str, str]], written: list[Op], index: Any) -> str:
    """``text`` naming the caller's path of op ``index``; a text about another op that
    names a stored path loses it (never the stored index)."""
    if isinstance(index, int) and 0 <= index < len(written):
        for stored, own in swaps:
            text = text.replace(stored, own)
    return text if not any(stored in text for stored, _ in swaps) else "the op cannot be applied."


def _fix_detail(detail: dict[str, Any], written: list[Op], sent: list[Op]) -> None:
    """A detail's ``path`` about op ``op_index``: the stored path (or a path inside its
    value) becomes the caller's; any other, the caller's op path."""
    index = detail.get("op_index")
    if not (isinstance(index, int) and 0 <= index < len(written) and "path" in detail):
        return
    path, mine, stored = detail["path"], written[index], sent[index]
    for before, after in ((stored.path, mine.path), (stored.from_path, mine.from_path)):
        if before is not None and after is not None and _starts(path, before):
            detail["path"] = after + path[len(before) :]
            return
    detail["path"] = mine.path


def _starts(path: Any, prefix: str) -> bool:
    return isinstance(path, str) and (path == prefix or path.startswith(prefix + "/"))


def shown_violations(
    found: list[Violation],
    contents: tuple[Any, Any],
    caller: Caller,
    rules: SensitivityRules | None,
) -> list[Violation]:
    """The document-level ``found`` (about the content after the write, ``contents``
    being before and after) as the caller may be told them: paths in its view (cut at the
    first hidden step), no message about a value holding hidden content, no sizes or
    counts that include it."""
    if not found or rules is None:
        return found
    level = clearance(caller, rules)
    after = view(contents[1], rules, level)
    if not after.hidden and not view(contents[0], rules, level).hidden:
        return found
    return [_shown(v, after) for v in found]


def _shown(found: Violation, after: View) -> Violation:
    message = found.message
    if found.code != "SCHEMA_VIOLATION":
        message = _GENERIC.get(found.code, message)  # sizes and counts include hidden content
    if found.path is None or not found.path.startswith("/content/"):
        return replace(found, message=message)
    inner = pointers.parse(found.path)[1:]
    shown = to_view(inner, after)
    cut = shown is None
    while shown is None:  # the deepest step the caller sees
        inner = inner[:-1]
        shown = to_view(inner, after)
    if cut or any(pointers.is_within(h, inner) for h in after.hidden):
        message = _GENERIC.get(found.code, message)  # the value it names holds hidden content
    return replace(found, message=message, path=pointers.render(("content", *shown)))
