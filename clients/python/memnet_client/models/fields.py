"""Reading members of a server's JSON object without trusting their types: a result
never fails on a member that is absent or of a newer shape."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

JsonObject = Mapping[str, Any]


def text(data: JsonObject, name: str) -> str | None:
    value = data.get(name)
    return value if isinstance(value, str) else None


def items(data: JsonObject, name: str) -> tuple[Any, ...]:
    value = data.get(name)
    return tuple(value) if isinstance(value, list) else ()
