"""The request and response the API layer works with, independent of any framework."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

JSON = "application/json"


@dataclass(frozen=True)
class ApiRequest:
    method: str
    path: str
    route_params: Mapping[str, str]
    headers: Mapping[str, str]
    query: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""

    @classmethod
    def of(
        cls,
        method: str,
        path: str,
        route_params: Mapping[str, str],
        headers: Mapping[str, str],
        query: Mapping[str, str],
        body: bytes,
    ) -> ApiRequest:
        """Normalise header names to lower case, as HTTP compares them."""
        lowered = {k.lower(): v for k, v in headers.items()}
        return cls(method.upper(), path, dict(route_params), lowered, dict(query), body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass
class ApiResponse:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(
        cls, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> ApiResponse:
        try:
            body = json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:  # a lone surrogate echoed back: escape it instead
            body = json.dumps(payload, separators=(",", ":")).encode()
        return cls.encoded(status, body, headers)

    @classmethod
    def encoded(
        cls, status: int, body: bytes, headers: Mapping[str, str] | None = None
    ) -> ApiResponse:
        """A JSON body that is already serialised (UTF-8)."""
        return cls(status, body, {"Content-Type": f"{JSON}; charset=utf-8", **(headers or {})})
