"""What a caller may see of a document and change in it, by sensitivity (issue 15,
capability 5; docs/profiles.md "Sensitivity"; :mod:`memnet.domain.sensitivity`).

A profile without ``sensitivity_rules`` changes nothing here. With them, a caller reads
its *view* (content above its clearance left out, the ETag the stored one), writes ops
against that view (array indexes translated to the stored document's; a path into
hidden content refused), may not change hidden content nor add content above its
clearance, and reads a document's history only with every class's clearance (its
records hold every value ever written). Answers and errors in the caller's terms:
:mod:`memnet.domain.sensitivity_answers`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memnet.domain import pointers, proposals
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.errors import Forbidden, Unprocessable
from memnet.domain.patching import Op, apply_in_place, apply_ops, parse_ops
from memnet.domain.pointers import Segments
from memnet.domain.policy import Violation
from memnet.domain.profiles import Profile
from memnet.domain.sensitivity import (
    SensitivityRules,
    View,
    to_stored,
    view,
    write_violations,
)
from memnet.domain.upsert import Hidden


def rules_for(profile: Profile, binding: Binding) -> SensitivityRules | None:
    return profile.sensitivity(binding.binding_id)


def clearance(caller: Caller, rules: SensitivityRules) -> int:
    return rules.clearance(caller.clearance, "admin" in caller.roles)


def sees_all(caller: Caller, rules: SensitivityRules | None) -> bool:
    """Whether ``caller`` has every class's clearance (or there are no classes): its view
    is the stored document, and nothing of this module changes what it does."""
    return rules is None or clearance(caller, rules) >= rules.highest


def appends_only(ops: list[Op]) -> bool:
    """Whether every op appends (``add`` at ``…/-``): the same op in any view."""
    return all(op.op == "add" and op.segments[-1:] == ("-",) for op in ops)


def seen(document: dict[str, Any], caller: Caller, rules: SensitivityRules | None) -> Any:
    """``document`` (an envelope) as ``caller`` may see it."""
    if rules is None or not isinstance(document, dict):
        return document
    content = view(document.get("content"), rules, clearance(caller, rules)).content
    return {**document, "content": content}


def content_seen(content: Any, caller: Caller, rules: SensitivityRules | None) -> Any:
    """A document's ``content`` as ``caller`` may see it."""
    if rules is None:
        return content
    return view(content, rules, clearance(caller, rules)).content


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


def indexed_targets(
    contents: tuple[Any, Any],
    pending: tuple[str, ...] | None,
    caller: Caller,
    rules: SensitivityRules | None,
) -> list[Violation]:
    """A caller that sees less than everything may propose only targets without array
    indexes (an append ``-``, a member): a proposal's ``target_path`` is applied as a
    stored path by whoever approves it, and an index of the caller's view is not one."""
    if pending is None or sees_all(caller, rules):
        return []
    return [
        Violation(
            "PROPOSAL_TARGET_INDEXED",
            "a caller that does not see every item proposes appends ('-') or members only.",
            path=pointers.render(("content", *pending, str(index), "target_path")),
        )
        for index, item in proposals.fresh(contents[0], contents[1], pending)
        if any(pointers.is_digits(s) for s in proposals.target_of(item) or ())
    ]


def require_full(
    caller: Caller, rules: SensitivityRules | None, what: str = "This document's history"
) -> None:
    """History shows every value ever written, and a replace states the whole document
    (its answer, unchanged or refused, would confirm a guess of what is hidden): only
    with every class's clearance."""
    if not sees_all(caller, rules):
        raise Forbidden(
            f"{what} needs clearance for every sensitivity class.", code="CLEARANCE_REQUIRED"
        )


def queue_seen(
    entries: list[dict[str, Any]],
    content: Any,
    pending: Segments,
    caller: Caller,
    rules: SensitivityRules | None,
) -> list[dict[str, Any]]:
    """One document's proposal queue entries as ``caller`` may see them: those its view
    of the pending section holds, each item as viewed (nested content above its
    clearance left out), ``index`` its place in that view."""
    if sees_all(caller, rules):
        return entries
    assert rules is not None
    seen = view(content, rules, clearance(caller, rules))
    shown = seen.visible.get(tuple(pending))
    if shown is None:  # the pending section itself is above the caller's clearance
        return []
    items = pointers.resolve(seen.content, pending)
    return [
        {**entry, "index": shown.index(entry["index"]), "item": items[shown.index(entry["index"])]}
        for entry in entries
        if entry["index"] in shown
    ]


def proposal_class(
    item: Any, pending: Segments, index: int, rules: SensitivityRules | None
) -> str | None:
    """The class of the proposal at ``index`` of a pending section: its item's (its
    candidate's, at its target) or the section's, the higher; None for the lowest."""
    if rules is None:
        return None
    rank = max(rules.item_rank(item), rules.section_rank((*pending, str(index))))
    return rules.classes[rank] if rank > 0 else None


def sees_class(caller: Caller, rules: SensitivityRules | None, name: str | None) -> bool:
    """Whether ``caller`` is cleared for class ``name`` (None: the lowest; a name the
    rules do not list: the highest, as an item's unreadable class is)."""
    return rules is None or clearance(caller, rules) >= rules.named_rank(name)


def require_clearance_of(caller: Caller, profile: Profile, name: str | None) -> None:
    """403 ``CLEARANCE_REQUIRED`` unless ``caller`` has at least clearance ``name`` in
    ``profile``'s classes (what a replay of an upload with that clearance could see and
    plan; a profile without classes: anyone)."""
    rules = profile.sensitivity("")  # the classes alone, no binding's sections
    if rules is not None and clearance(caller, rules) < rules.clearance(name, admin=False):
        raise Forbidden(
            "This replay's status needs the clearance its snapshot's uploader had.",
            code="CLEARANCE_REQUIRED",
        )


def item_ranks(rules: SensitivityRules | None) -> Callable[[Segments, int, Any], int] | None:
    """Each array item's class, ``(section, index, item)`` (None: no classes)."""
    if rules is None:
        return None

    def rank(section: Segments, index: int, item: Any) -> int:
        return max(rules.item_rank(item), rules.section_rank((*section, str(index))))

    return rank


def hidden_items(caller: Caller, rules: SensitivityRules | None) -> Hidden | None:
    """Which items of an identity section ``caller`` cannot see (an upsert never matches
    them: its answer would tell a hidden item's identity); None: it sees every one."""
    if rules is None:
        return None
    level = clearance(caller, rules)
    if level >= rules.highest:
        return None

    def hidden(section: pointers.Segments, index: int, item: Any) -> bool:
        where = (*section, str(index))
        return max(rules.item_rank(item), rules.section_rank(where)) > level

    return hidden
