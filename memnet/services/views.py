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
from memnet.domain.errors import Forbidden
from memnet.domain.patching import Op, parse_ops
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
    """``ops`` written against the caller's view, addressed to the stored content."""
    visible = view(content, rules, clearance(caller, rules))
    translated = []
    for op in ops:
        body = op.as_json()
        body["path"] = _translated(op.segments, visible, op.index)
        if op.from_segments is not None:
            body["from"] = _translated(op.from_segments, visible, op.index)
        translated.append(body)
    return parse_ops(translated)


def _translated(segments: tuple[str, ...], visible: View, index: int) -> str:
    if segments[:1] != ("content",):
        return pointers.render(segments)  # refused by the write policy anyway
    stored = to_stored(segments[1:], visible)
    for hidden in visible.hidden:
        if pointers.is_within(stored, hidden):
            raise Forbidden(
                "The op addresses content above the caller's clearance.",
                code="CLEARANCE_EXCEEDED",
                op_index=index,
            )
    return pointers.render(("content", *stored))


def check_write(before: Any, after: Any, caller: Caller, rules: SensitivityRules | None) -> None:
    """403 ``CLEARANCE_EXCEEDED`` for a write that changes hidden content or adds content
    above the caller's clearance."""
    if rules is None:
        return
    found = write_violations(before, after, rules, clearance(caller, rules))
    if found:
        raise Forbidden(found[0][1] + ".", code="CLEARANCE_EXCEEDED")


def require_full(caller: Caller, rules: SensitivityRules | None) -> None:
    """History shows every value ever written: only with every class's clearance."""
    if rules is not None and clearance(caller, rules) < rules.highest:
        raise Forbidden(
            "This document's history needs clearance for every sensitivity class.",
            code="CLEARANCE_REQUIRED",
        )
