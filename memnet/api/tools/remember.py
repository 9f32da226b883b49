"""The ``remember`` tool: an event digest, always, and optionally one memory item written
through the document PATCH gate (docs/mcp.md).

The item goes where the profile's writable rules let agents write, never into a durable
section (``confidence_rules.durable_sections``): durable facts are what the gate lets
through with enough confidence and evidence, and a tool an LLM calls on its own say-so
must not be a way round confirmation. With ``pending`` the item becomes a proposal in
the binding's pending section, in the shape the gate itself writes redirected ops in
(:func:`memnet.domain.policy.plan_ops`), for a person or a later verified write to confirm.
Section names all come from the profile.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from memnet.api import documents, events
from memnet.api.tools.invocation import (
    ApiCall,
    ApiFailure,
    Invocation,
    ToolResult,
    flag_arg,
    number_arg,
    text_arg,
    texts_arg,
)
from memnet.api.tools.scope import Scope, authenticated, scope_of
from memnet.domain import pointers
from memnet.domain.bindings import Binding
from memnet.domain.envelope import CONTENT
from memnet.domain.errors import BadRequest, NotFound, Unprocessable
from memnet.domain.pointers import Segments
from memnet.domain.profiles import Profile
from memnet.domain.timestamps import format_timestamp

ITEM_ARGUMENTS = ("memory_binding", "memory_path", "memory_value")


@dataclass(frozen=True)
class MemoryWrite:
    """The PATCH that writes the item: which document, and the body."""

    namespace: str
    path: str
    body: Mapping[str, Any]


def remember(call: Invocation) -> ToolResult:
    """Refusals of the item come first, so a refused call stores nothing."""
    scope = scope_of(call)
    moment = text_arg(call.arguments, "timestamp") or format_timestamp(datetime.now(UTC))
    write = _memory_write(call, moment)
    key = text_arg(call.arguments, "idempotency_key") or uuid.uuid4().hex
    event = ApiCall(
        "POST",
        scope.path("events"),
        scope.params,
        _event(call.arguments, moment),
        {"idempotency-key": f"{key}.event"},
    ).send(events.write_event, call)
    if write is None:
        return ToolResult(event)
    try:
        return ToolResult({**event, "memory": _patch(scope, write, key, call)})
    except ApiFailure as failure:
        return failure.result(**event)


def _event(args: Mapping[str, Any], moment: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "timestamp": moment,
        "source_type": text_arg(args, "source_type") or "mcp",
        "digest": text_arg(args, "text", required=True),
    }
    keywords = texts_arg(args, "keywords")
    project = text_arg(args, "project_id")
    importance = number_arg(args, "importance")
    if keywords is not None:
        body["keywords"] = keywords
    if importance is not None:
        body["importance"] = importance
    if (evidence := _evidence(args)) is not None:
        body["evidence"] = evidence  # forgetting the conversation removes the digest too
    if project is not None:
        body["project_ids"] = [project]
    return body


def _memory_write(call: Invocation, moment: str) -> MemoryWrite | None:
    args = call.arguments
    given = [name for name in ITEM_ARGUMENTS if args.get(name) is not None]
    if not given:
        return None
    if len(given) < len(ITEM_ARGUMENTS):
        missing = [name for name in ITEM_ARGUMENTS if name not in given]
        raise BadRequest(
            f"{', '.join(ITEM_ARGUMENTS)} go together.", code="MISSING_FIELD", fields=missing
        )
    caller = authenticated(call)
    profile = call.services().registry.for_caller(caller, text_arg(args, "profile_id"))
    binding = _binding(profile, text_arg(args, "memory_binding") or "")
    target = _pointer(text_arg(args, "memory_path") or "")
    # An item a model chose to remember is an inference: it always asserts evidence (the
    # tool, and the conversation when named), so the poisoning guard holds what reads as
    # an instruction or a secret (docs/security.md).
    evidence = {"tool": "remember", **(_evidence(args) or {})}
    body: dict[str, Any] = {
        "profile_id": profile.profile_id,
        "binding_id": binding.binding_id,
        "evidence": evidence,
    }
    if flag_arg(args, "pending"):
        proposal = _proposal(args, target, evidence, moment, caller.caller_id)
        body["ops"] = [_append(_pending_section(profile, binding), proposal)]
    else:
        _refuse_durable(profile, binding, target)
        _refuse_pending(profile, binding, target)
        body["ops"] = [{"op": "add", "path": _document_path(target), "value": args["memory_value"]}]
        if args.get("confidence") is not None:
            body["confidence"] = number_arg(args, "confidence")
    return MemoryWrite(binding.namespace, _path(profile, binding, args), body)


def _binding(profile: Profile, binding_id: str) -> Binding:
    binding = profile.binding(binding_id)
    if binding is None:
        raise NotFound(
            f"Profile {profile.profile_id!r} has no binding {binding_id!r}.",
            code="BINDING_NOT_FOUND",
            field="memory_binding",
        )
    return binding


def _pointer(text: str) -> Segments:
    try:
        return pointers.parse(text)
    except ValueError:
        raise BadRequest(
            "memory_path must be a JSON Pointer.", code="INVALID_ARGUMENT", field="memory_path"
        ) from None


def _path(profile: Profile, binding: Binding, args: Mapping[str, Any]) -> str:
    """The document's path; a templated binding is filled with the project id."""
    routing = profile.context.routing
    project = text_arg(args, "project_id")
    variables = {routing.project_variable: project} if routing and project else {}
    path = binding.path_for(variables)
    if path is None:
        raise BadRequest(
            f"Binding {binding.binding_id!r} is per project: give project_id.",
            code="MISSING_FIELD",
            field="project_id",
        )
    return path


def _refuse_durable(profile: Profile, binding: Binding, target: Segments) -> None:
    for section in profile.confidence.durable_sections.get(binding.binding_id, ()):
        if pointers.is_within(target, section) or pointers.is_within(section, target):
            raise Unprocessable(
                "The tool does not write durable sections; set pending=true to propose "
                "the item for confirmation.",
                code="DURABLE_SECTION_REFUSED",
                path=pointers.render(target),
            )


def _refuse_pending(profile: Profile, binding: Binding, target: Segments) -> None:
    """Proposals are made by ``pending=true`` only, which stamps ``proposed_by`` and
    ``proposed_at``: a hand-made item in the pending section could claim any reviewer."""
    section = profile.confidence.pending_sections.get(binding.binding_id)
    if section is not None and (
        pointers.is_within(target, section) or pointers.is_within(section, target)
    ):
        raise Unprocessable(
            "The pending section takes proposals made with pending=true only; set "
            "pending=true and give the item's own target as memory_path.",
            code="PENDING_SECTION_REFUSED",
            path=pointers.render(target),
        )


def _pending_section(profile: Profile, binding: Binding) -> Segments:
    section = profile.confidence.pending_sections.get(binding.binding_id)
    if section is None:
        raise Unprocessable(
            f"Binding {binding.binding_id!r} has no pending section in this profile.",
            code="NO_PENDING_SECTION",
        )
    return section


def _proposal(
    args: Mapping[str, Any], target: Segments, evidence: Any, moment: str, actor: str
) -> dict[str, Any]:
    """A pending item as the gate writes one: the agent's confidence stays on the item,
    not on the write (adding a proposal is not itself uncertain)."""
    return {
        "candidate": args["memory_value"],
        "target_path": pointers.render(target),
        "op": "add",
        "confidence": number_arg(args, "confidence"),
        "evidence": evidence,
        "proposed_at": moment,
        "proposed_by": actor,
    }


def _append(section: Segments, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": _document_path((*section, "-")), "value": value}


def _document_path(target: Segments) -> str:
    return pointers.render((CONTENT, *target))


def _evidence(args: Mapping[str, Any]) -> dict[str, str] | None:
    conversation = text_arg(args, "conversation_id")
    return None if conversation is None else {"conversation_id": conversation}


def _patch(scope: Scope, write: MemoryWrite, key: str, call: Invocation) -> Any:
    """Create the document with the item, or (412: it exists) add to its latest version,
    rebased over concurrent writes (an append commutes with them)."""
    route = {**scope.params, "namespace": write.namespace, "path": write.path}
    url = scope.path(f"documents/{write.namespace}/{write.path}")
    create = {"idempotency-key": f"{key}.create", "if-none-match": "*"}
    try:
        return ApiCall("PATCH", url, route, write.body, create).send(documents.patch_document, call)
    except ApiFailure as failure:
        latest = _latest_etag(failure)
        if latest is None:
            raise
    update = {"idempotency-key": f"{key}.update", "if-match": latest}
    return ApiCall("PATCH", url, route, {**write.body, "rebase": True}, update).send(
        documents.patch_document, call
    )


def _latest_etag(failure: ApiFailure) -> str | None:
    error = failure.payload.get("error")
    details = error.get("details") if isinstance(error, dict) else None
    latest = details.get("latest_etag") if isinstance(details, dict) else None
    return latest if failure.status == 412 and isinstance(latest, str) else None
