"""HTTP handler for ``POST .../context:assemble`` (spec 10.4)."""

from __future__ import annotations

from typing import Any

from memnet import bootstrap
from memnet.api import parsing
from memnet.api.access import caller_of
from memnet.api.endpoint import endpoint
from memnet.api.http import ApiRequest, ApiResponse
from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import check_identifier
from memnet.services.context import AssembleRequest

FIELDS = frozenset(
    {"profile_id", "conversation_hint", "max_docs", "max_chars_total", "debug", "render"}
)
HINT_FIELDS = frozenset({"text", "project_id"})
MAX_HINT_CHARS = 4000
MAX_DOCS = 50
MAX_CHARS_TOTAL = 1_000_000
RENDERS = ("json", "text")


@endpoint
def assemble_context(request: ApiRequest, request_id: str) -> ApiResponse:
    services = bootstrap.services()
    caller = caller_of(request, write=False)
    body = parsing.json_body(request, services.settings.max_body_bytes, FIELDS)
    assembled = services.context.assemble(caller, _request(request, body))
    return ApiResponse.json(200, assembled)


def _request(request: ApiRequest, body: dict[str, Any]) -> AssembleRequest:
    text, project_id = _hint(body.get("conversation_hint"))
    return AssembleRequest(
        tenant_id=check_identifier("tenant_id", request.route_params.get("tenant_id", "")),
        user_id=check_identifier("user_id", request.route_params.get("user_id", "")),
        profile_id=parsing.optional_str(body, "profile_id"),
        hint_text=text,
        project_id=project_id,
        max_docs=_bounded(body, "max_docs", MAX_DOCS),
        max_chars_total=_bounded(body, "max_chars_total", MAX_CHARS_TOTAL),
        debug=_flag(body, "debug"),
        render=_render(body),
    )


def _hint(value: Any) -> tuple[str, str | None]:
    if value is None:
        return "", None
    if not isinstance(value, dict) or set(value) - HINT_FIELDS:
        raise BadRequest(
            f"conversation_hint is an object with {sorted(HINT_FIELDS)}.",
            code="INVALID_FIELD",
            field="conversation_hint",
        )
    text = value.get("text") or ""
    if not isinstance(text, str) or len(text) > MAX_HINT_CHARS:
        raise BadRequest(
            f"conversation_hint.text is a string of at most {MAX_HINT_CHARS} characters.",
            code="INVALID_FIELD",
            field="conversation_hint.text",
        )
    return text, parsing.optional_str(value, "project_id")


def _bounded(body: dict[str, Any], name: str, top: int) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise BadRequest(
            f"{name} must be an integer from 1 to {top}.", code="INVALID_FIELD", field=name
        )
    return value


def _flag(body: dict[str, Any], name: str) -> bool:
    value = body.get(name, False)
    if not isinstance(value, bool):
        raise BadRequest(f"{name} must be true or false.", code="INVALID_FIELD", field=name)
    return value


def _render(body: dict[str, Any]) -> str:
    value = body.get("render", "json")
    if not isinstance(value, str) or value not in RENDERS:
        raise BadRequest(
            f"render must be one of {list(RENDERS)}.", code="INVALID_FIELD", field="render"
        )
    return str(value)
