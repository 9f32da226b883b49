"""MCP tools over the governed API (docs/mcp.md): ``remember``, ``recall`` and ``forget``.

Each tool calls the handlers of the HTTP routes with the MCP request's own headers, so
authentication, roles, tenants, quotas, validation, idempotency and audit are those of
the API: a tool can do what its caller could do over HTTP and nothing more. An error
becomes a tool result with ``isError`` and the API's error payload (code, message,
request id), never an exception the MCP layer would have to render.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from memnet.api.endpoint import ServicesSource, new_request_id
from memnet.api.errors import error_response
from memnet.api.tools.forget import forget
from memnet.api.tools.invocation import (
    ApiFailure,
    Invocation,
    ToolResult,
    error_result,
    parse_context,
)
from memnet.api.tools.recall import recall
from memnet.api.tools.remember import remember
from memnet.api.tools.specs import SPECS, ToolSpec
from memnet.domain.errors import BadRequest, MemnetError, Unavailable
from memnet.ports import StorageError

log = logging.getLogger("memnet.api")

__all__ = ["HANDLERS", "SPECS", "ToolSpec", "call"]

HANDLERS: dict[str, Callable[[Invocation], ToolResult]] = {
    "remember": remember,
    "recall": recall,
    "forget": forget,
}


def call(tool: str, context: str, services: ServicesSource) -> str:
    """Run ``tool`` on the extension's context JSON; the MCP ``CallToolResult`` as JSON."""
    try:
        invocation = parse_context(context, services)
        _refuse_unknown(SPECS[tool], invocation.arguments)
        result = HANDLERS[tool](invocation)
    except ApiFailure as failure:
        result = failure.result()
    except MemnetError as error:
        result = _refused(tool, error)
    except StorageError:
        log.warning("tool %s: storage unavailable", tool, exc_info=True)
        result = _refused(tool, Unavailable("Storage is unavailable; retry the call."))
    except Exception:
        request_id = new_request_id()
        log.exception("request_id=%s tool %s failed", request_id, tool)
        internal = MemnetError("Internal error; quote the request id.")
        result = error_result(error_response(internal, request_id))
    return result.to_json()


def _refuse_unknown(spec: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """An argument the tool does not take is an error, as an unknown field is in the
    API: a model's misspelt ``memory_pth`` must not be silently dropped."""
    allowed = [p.name for p in spec.properties]
    unknown = sorted(name for name in arguments if name not in allowed)
    if unknown:
        raise BadRequest(
            f"Unknown arguments for {spec.name}: {', '.join(unknown)}.",
            code="UNKNOWN_FIELD",
            fields=unknown,
            allowed=allowed,
        )


def _refused(tool: str, error: MemnetError) -> ToolResult:
    """A refusal of the tool's own (its arguments, a durable target, authentication)."""
    request_id = new_request_id()
    log.info("request_id=%s tool %s refused: %s", request_id, tool, error.code)
    return error_result(error_response(error, request_id))
