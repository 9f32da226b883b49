"""The ``forget`` tool: forget one conversation, or report how that forget is going,
through the handlers of its HTTP routes (role ``forget``, as there; docs/mcp.md).

One conversation only. Forgetting a whole user is one call that cannot be undone and ends
the user's memory; it stays an HTTP call a person makes on purpose
(``DELETE /v1/tenants/{t}/users/{u}``), not a tool a model may pick from a list.
"""

from __future__ import annotations

from memnet.api import governance
from memnet.api.tools.invocation import ApiCall, Invocation, ToolResult, flag_arg, text_arg
from memnet.api.tools.scope import scope_of


def forget(call: Invocation) -> ToolResult:
    scope = scope_of(call)
    conversation = text_arg(call.arguments, "conversation_id", required=True) or ""
    params = {**scope.params, "conversation_id": conversation}
    if flag_arg(call.arguments, "status"):
        path = scope.path(f"forget/conversations/{conversation}")
        status = ApiCall("GET", path, params).send(governance.forget_conversation_status, call)
        return ToolResult(status)
    path = scope.path(f"conversations/{conversation}")
    job = ApiCall("DELETE", path, params).send(governance.forget_conversation, call)
    return ToolResult(job)
