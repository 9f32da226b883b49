"""Value templates: what a ``replay_rules`` statement or a ``promotion_rules`` item
writes, with ``{name}`` fields filled from what was found (docs/profiles.md).

A leaf of the domain (docs/architecture.md, "The layers"): the rule parsers and
:mod:`memnet.domain.profiles` import it, it imports none of them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_FIELD = re.compile(r"\{([a-z_]+)\}")
INLINE_FIELDS = frozenset({"text", "message_id", "timestamp"})
WHOLE_FIELDS = frozenset({"confidence", "evidence"})


def fill_value(template: Any, fields: Mapping[str, Any]) -> Any:
    """``template`` with its fields filled: a string that is exactly ``{name}`` becomes
    ``fields[name]`` whatever its type; ``{text}``, ``{message_id}`` and ``{timestamp}``
    inside longer strings are replaced in one pass (a filled-in text is not scanned again,
    so a message cannot smuggle in another field)."""
    if isinstance(template, dict):
        return {key: fill_value(item, fields) for key, item in template.items()}
    if isinstance(template, list):
        return [fill_value(item, fields) for item in template]
    if not isinstance(template, str):
        return template
    whole = _FIELD.fullmatch(template)
    if whole is not None and whole.group(1) in fields:
        return fields[whole.group(1)]
    return _FIELD.sub(lambda m: str(fields.get(m.group(1), m.group(0))), template)


def statement_fields(
    text: str, message_id: str, timestamp: str, confidence: float, snapshot_uri: str
) -> dict[str, Any]:
    """What a ``value`` template may name, for one statement found in one message."""
    return {
        "text": text,
        "message_id": message_id,
        "timestamp": timestamp,
        "confidence": confidence,
        "evidence": {"message_ids": [message_id], "snapshot_uri": snapshot_uri},
    }


def template_fields(template: Any) -> frozenset[str]:
    """The ``{name}`` fields a ``value`` template (or one member of it) uses."""
    return frozenset(_FIELD.findall(json.dumps(template)))


def template_problem(template: Any) -> str | None:
    """Why a ``value`` template cannot be filled, or None: an unknown ``{name}``, or
    ``{confidence}``/``{evidence}`` (not strings) inside a longer string."""
    stack = [template]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            stack.extend(node.values() if isinstance(node, dict) else node)
        elif isinstance(node, str):
            whole = _FIELD.fullmatch(node)
            for name in _FIELD.findall(node):
                if name not in INLINE_FIELDS | WHOLE_FIELDS:
                    return f"unknown field {{{name}}}"
                if name in WHOLE_FIELDS and whole is None:
                    return f"{{{name}}} must be the whole string"
    return None
