"""The MCP tools' names, descriptions and arguments, as data (docs/mcp.md).

``function_app.py`` declares each tool from its :class:`ToolSpec` (the Azure Functions MCP
extension's ``toolProperties`` list, :meth:`ToolSpec.properties_json`), and the local host
serves what the declarations say; a test holds the three together. Tenant and user are
arguments, never inferred from the conversation: the API checks them against the caller.
"""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolProperty:
    """One argument, in the shape of the extension's ``toolProperties`` items."""

    name: str
    type: str  # the extension's propertyType: string, number, integer, boolean, object
    description: str
    required: bool = False
    array: bool = False

    def binding(self) -> dict[str, object]:
        return {
            "propertyName": self.name,
            "propertyType": self.type,
            "description": self.description,
            "isRequired": self.required,
            "isArray": self.array,
        }


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    properties: tuple[ToolProperty, ...]

    def properties_json(self) -> str:
        return json.dumps([p.binding() for p in self.properties])


TENANT = ToolProperty("tenant_id", "string", "The tenant whose memory this is.", required=True)
USER = ToolProperty(
    "user_id",
    "string",
    "The user whose memory this is; optional with a user's own (delegated) token.",
)
PROFILE = ToolProperty(
    "profile_id", "string", "The memory profile; optional when the caller may use only one."
)
PROJECT = ToolProperty("project_id", "string", "The project the memory is about, if any.")

REMEMBER = ToolSpec(
    "remember",
    "Record what happened as an event digest (always), and optionally one memory item: "
    "written where the profile lets agents write (not a durable section), or, with "
    "pending=true, proposed for confirmation in the profile's pending section. Every "
    "write goes through the API's checks (roles, paths, confidence, schema).",
    (
        TENANT,
        USER,
        ToolProperty("text", "string", "The digest: what happened or was said.", required=True),
        ToolProperty("source_type", "string", "Where it came from (default: mcp)."),
        ToolProperty("keywords", "string", "Keywords for search.", array=True),
        ToolProperty(
            "importance", "number", "How much the event matters, 0-1 (search can rank by it)."
        ),
        PROJECT,
        ToolProperty(
            "idempotency_key",
            "string",
            "Repeat a call safely: the same key and timestamp store once.",
        ),
        ToolProperty("timestamp", "string", "When it happened, RFC 3339 (default: now)."),
        PROFILE,
        ToolProperty("memory_binding", "string", "The document (binding id) of the item."),
        ToolProperty(
            "memory_path",
            "string",
            "Where the item goes in that document, a JSON Pointer (e.g. /preferences/-).",
        ),
        ToolProperty(
            "memory_value",
            "object",
            "The item itself, in the shape the document's schema gives its section "
            '(e.g. {"text": "Prefers tabs"}).',
        ),
        ToolProperty("pending", "boolean", "Propose the item for confirmation instead."),
        ToolProperty("confidence", "number", "How sure the agent is of the item, 0-1."),
        ToolProperty("conversation_id", "string", "The conversation the item was learned in."),
    ),
)

RECALL = ToolSpec(
    "recall",
    "Read memory: the documents to inject for a conversation (context assembly) and the "
    "event digests that match a query (event search, ranked as the profile says).",
    (
        TENANT,
        USER,
        ToolProperty("query", "string", "What the conversation is about; the search text."),
        ToolProperty("include", "string", "context, events or both (default: both)."),
        ToolProperty("top_k", "integer", "How many events at most (1-100, default 10)."),
        PROJECT,
        PROFILE,
        ToolProperty("max_chars_total", "integer", "A size budget for the documents."),
    ),
)

FORGET = ToolSpec(
    "forget",
    "Forget one conversation: its snapshots and events, and what was learned from it "
    "(needs the forget role). With status=true, report how that forget is going instead.",
    (
        TENANT,
        USER,
        ToolProperty("conversation_id", "string", "The conversation to forget.", required=True),
        ToolProperty("status", "boolean", "Only report the status of its forget."),
    ),
)

SPECS: dict[str, ToolSpec] = {spec.name: spec for spec in (REMEMBER, RECALL, FORGET)}
