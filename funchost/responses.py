"""An answer of the host as bytes on its way out: what a function returned, the MCP
endpoint's JSON-RPC reply, or the host's own refusal in the error shape."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


def json_error(status: int, body: bytes, request_id: str) -> RawResponse:
    headers = [("Content-Type", "application/json; charset=utf-8"), ("x-request-id", request_id)]
    return RawResponse(status, headers, body)
