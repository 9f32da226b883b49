"""The conversation snapshot's transcript format (spec 7.2, 13): what an agent uploads
after a conversation and what the replay worker reads. Pure: no I/O.

```json
{
  "messages": [
    {"id": "m1", "role": "user", "text": "Remember that I work in Lisbon.",
     "timestamp": "2026-11-24T10:00:00Z"}
  ],
  "service_id": "assistant-a",
  "profile_id": "project-copilot-v1",
  "project_hint": "project-alpha",
  "metadata": {"channel": "web"}
}
```

``messages`` is required (1 to :data:`MAX_MESSAGES`), each with a unique ``id``
(identifier grammar), a ``role`` of :data:`ROLES`, a ``text`` of at most
:data:`MAX_TEXT_CHARS` and an RFC 3339 ``timestamp`` (stored as UTC ``Z``). The rest is
optional. Unknown fields are refused, so a typo is not silently ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memnet.domain.envelope import canonical
from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import SEGMENT
from memnet.domain.timestamps import normalise_timestamp

ROLES = frozenset({"user", "assistant", "system", "tool"})
FIELDS = frozenset({"messages", "service_id", "profile_id", "project_hint", "metadata"})
MESSAGE_FIELDS = frozenset({"id", "role", "text", "timestamp"})
MAX_MESSAGES = 2000
MAX_TEXT_CHARS = 32_000
MAX_METADATA_CHARS = 4096


@dataclass(frozen=True)
class Message:
    id: str
    role: str
    text: str
    timestamp: str


@dataclass(frozen=True)
class Transcript:
    messages: tuple[Message, ...]
    service_id: str | None = None
    profile_id: str | None = None
    project_hint: str | None = None
    metadata: dict[str, Any] | None = None

    def message_ids(self) -> frozenset[str]:
        return frozenset(m.id for m in self.messages)

    def as_json(self) -> dict[str, Any]:
        """The canonical form stored (encrypted) in the snapshot blob."""
        body: dict[str, Any] = {
            "messages": [
                {"id": m.id, "role": m.role, "text": m.text, "timestamp": m.timestamp}
                for m in self.messages
            ]
        }
        for name in ("service_id", "profile_id", "project_hint", "metadata"):
            if getattr(self, name) is not None:
                body[name] = getattr(self, name)
        return body


def parse_transcript(body: Any) -> Transcript:
    """A :class:`Transcript`, or 400 naming the first bad field."""
    if not isinstance(body, dict):
        raise _bad("body", "must be a JSON object")
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise BadRequest(
            f"Unknown transcript fields: {unknown}.",
            code="UNKNOWN_FIELD",
            fields=unknown,
            allowed=sorted(FIELDS),
        )
    raw = body.get("messages")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_MESSAGES:
        raise _bad("messages", f"must be an array of 1 to {MAX_MESSAGES} messages")
    messages = tuple(_message(i, item) for i, item in enumerate(raw))
    seen: set[str] = set()
    for i, message in enumerate(messages):
        if message.id in seen:
            raise _bad(f"messages[{i}].id", f"repeats the id {message.id!r}")
        seen.add(message.id)
    metadata = body.get("metadata")
    if metadata is not None and (
        not isinstance(metadata, dict) or len(canonical(metadata)) > MAX_METADATA_CHARS
    ):
        raise _bad("metadata", f"must be an object of at most {MAX_METADATA_CHARS} chars")
    return Transcript(
        messages,
        service_id=_identifier(body, "service_id"),
        profile_id=_identifier(body, "profile_id"),
        project_hint=_identifier(body, "project_hint"),
        metadata=metadata,
    )


def _message(index: int, item: Any) -> Message:
    where = f"messages[{index}]"
    if not isinstance(item, dict):
        raise _bad(where, "must be an object")
    unknown = sorted(set(item) - MESSAGE_FIELDS)
    if unknown:
        raise _bad(where, f"has unknown fields {unknown}")
    message_id, role, text = item.get("id"), item.get("role"), item.get("text")
    if not isinstance(message_id, str) or not SEGMENT.fullmatch(message_id):
        raise _bad(f"{where}.id", f"must match {SEGMENT.pattern}")
    if not isinstance(role, str) or role not in ROLES:
        raise _bad(f"{where}.role", f"must be one of {sorted(ROLES)}")
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS:
        raise _bad(f"{where}.text", f"must be a string of at most {MAX_TEXT_CHARS} chars")
    timestamp = normalise_timestamp(item.get("timestamp"), f"{where}.timestamp")
    return Message(message_id, str(role), text, timestamp)


def _identifier(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not SEGMENT.fullmatch(value):
        raise _bad(name, f"must match {SEGMENT.pattern}")
    return value


def _bad(field: str, problem: str) -> BadRequest:
    return BadRequest(f"{field} {problem}.", code="INVALID_TRANSCRIPT", field=field)
