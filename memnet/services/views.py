"""What a caller may see of a document and change in it, by sensitivity (issue 15,
capability 5; docs/profiles.md "Sensitivity"; :mod:`memnet.domain.sensitivity`).

A profile without ``sensitivity_rules`` changes nothing here. With them, a caller reads
its *view* (content above its clearance left out, the ETag the stored one), writes ops
against that view (array indexes translated to the stored document's; a path into
hidden content refused), may not change hidden content nor add content above its
clearance, and reads a document's history only with every class's clearance (its
records hold every value ever written).
"""

from __future__ import annotations

from typing import Any

from memnet.domain import pointers
from memnet.domain.callers import Caller
from memnet.domain.errors import Forbidden, Unprocessable
from memnet.domain.patching import Op, apply_in_place, apply_ops, parse_ops
from memnet.domain.profiles import Binding, Profile
from memnet.domain.sensitivity import SensitivityRules, View, to_stored, view, write_violations


def rules_for(profile: Profile, binding: Binding) -> SensitivityRules | None:
    return profile.sensitivity(binding.binding_id)


def clearance(caller: Caller, rules: SensitivityRules) -> int:
    return rules.clearance(caller.clearance, "admin" in caller.roles)


def seen(document: dict[str, Any], caller: Caller, rules: SensitivityRules | None) -> Any:
    """``document`` (an envelope) as ``caller`` may see it."""
    if rules is None or not isinstance(document, dict):
        return document
    content = view(document.get("content"), rules, clearance(caller, rules)).content
    return {**document, "content": content}


def stored_ops(ops: list[Op], content: Any, caller: Caller, rules: SensitivityRules) -> list[Op]:
    """``ops`` written against the caller's view, addressed to the stored content. Each op
    is translated against the view *after* the ops before it (a working copy takes them
    in turn), as JSON Patch applies them; an op that cannot apply ends the translation
    (the real apply refuses the patch at that op)."""
    level = clearance(caller, rules)
    working = apply_ops({"content": content}, [])  # one copy, changed in place below
    translated: list[dict[str, Any]] = []
    for position, op in enumerate(ops):
        visible = view(working["content"], rules, level)
        body = op.as_json()
        body["path"] = _translated(op.segments, visible, op.index)
        if op.from_segments is not None:
            body["from"] = _translated(op.from_segments, visible, op.index)
        translated.append(body)
        try:
            working = apply_in_place(working, parse_ops([body])[0])
        except Unprocessable:
            return parse_ops(translated + [o.as_json() for o in ops[position + 1 :]])
    return parse_ops(translated)


def _translated(segments: tuple[str, ...], visible: View, index: int) -> str:
    """The stored path of a view path; 403 for a path into hidden content, above it (a
    ``test`` or ``replace`` of a whole array holding hidden items would show or change
    them), or outside the content."""
    if segments[:1] != ("content",) or len(segments) == 1:
        raise _refused(index)
    try:
        stored = to_stored(segments[1:], visible)
    except ValueError as problem:
        raise Unprocessable(
            f"op {index} cannot be applied: {problem}.",
            code="PATCH_NOT_APPLICABLE",
            op_index=index,
        ) from None
    for hidden in visible.hidden:
        if pointers.is_within(stored, hidden) or pointers.is_within(hidden, stored):
            raise _refused(index)
    return pointers.render(("content", *stored))


def _refused(index: int) -> Forbidden:
    return Forbidden(
        "The op addresses content above the caller's clearance.",
        code="CLEARANCE_EXCEEDED",
        op_index=index,
    )


def check_write(
    before: Any,
    after: Any,
    caller: Caller,
    rules: SensitivityRules | None,
    pending: tuple[str, ...] | None = None,
) -> None:
    """403 ``CLEARANCE_EXCEEDED`` for a write that changes hidden content or adds content
    above the caller's clearance outside the binding's pending section."""
    if rules is None:
        return
    write_up = () if pending is None else (pending,)
    found = write_violations(before, after, rules, clearance(caller, rules), write_up)
    if found:
        raise Forbidden(found[0][1] + ".", code="CLEARANCE_EXCEEDED")


def require_full(caller: Caller, rules: SensitivityRules | None) -> None:
    """History shows every value ever written: only with every class's clearance."""
    if rules is not None and clearance(caller, rules) < rules.highest:
        raise Forbidden(
            "This document's history needs clearance for every sensitivity class.",
            code="CLEARANCE_REQUIRED",
        )


def hides_anything(content: Any, caller: Caller, rules: SensitivityRules | None) -> bool:
    """Whether ``caller`` sees less than the stored ``content`` (then an upsert must not
    match against what it cannot see: it would tell a hidden id or value by its answer)."""
    return rules is not None and bool(view(content, rules, clearance(caller, rules)).hidden)
