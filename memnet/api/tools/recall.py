"""The ``recall`` tool: context assembly and event search, through the handlers of
``POST …/context:assemble`` and ``POST …/events:search`` (docs/mcp.md)."""

from __future__ import annotations

from typing import Any

from memnet.api import context, events
from memnet.api.tools.invocation import ApiCall, Invocation, ToolResult, number_arg, text_arg
from memnet.api.tools.scope import Scope, scope_of
from memnet.domain.errors import BadRequest

INCLUDES = ("both", "context", "events")


def recall(call: Invocation) -> ToolResult:
    scope = scope_of(call)
    include = text_arg(call.arguments, "include") or "both"
    if include not in INCLUDES:
        raise BadRequest(
            f"include must be one of {list(INCLUDES)}.", code="INVALID_ARGUMENT", field="include"
        )
    found: dict[str, Any] = {}
    if include in ("both", "context"):
        found["context"] = _context(call, scope)
    if include in ("both", "events"):
        found["events"] = _events(call, scope)
    return ToolResult(found)


def _context(call: Invocation, scope: Scope) -> Any:
    args = call.arguments
    hint = _present(text=text_arg(args, "query"), project_id=text_arg(args, "project_id"))
    body = _present(
        profile_id=text_arg(args, "profile_id"),
        conversation_hint=hint,
        max_chars_total=number_arg(args, "max_chars_total", integer=True),
    )
    assemble = ApiCall("POST", scope.path("context:assemble"), scope.params, body or {})
    return assemble.send(context.assemble_context, call)


def _events(call: Invocation, scope: Scope) -> Any:
    args = call.arguments
    body = _present(
        text=text_arg(args, "query"),
        top_k=number_arg(args, "top_k", integer=True),
        profile_id=text_arg(args, "profile_id"),  # its search_rules.ranking, if any
    )
    search = ApiCall("POST", scope.path("events:search"), scope.params, body or {})
    return search.send(events.search_events, call)


def _present(**members: Any) -> dict[str, Any] | None:
    """The members that are set; None when none is (an absent member, not an empty one)."""
    found = {name: value for name, value in members.items() if value is not None}
    return found or None
