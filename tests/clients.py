"""Two ways to call the API in tests: the function directly, or HTTP via the local host."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import parse_qsl, unquote, urlsplit

import azure.functions as func


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    data: Any = field(init=False)

    def __post_init__(self) -> None:
        self.headers = {k.lower(): v for k, v in self.headers.items()}
        media = self.headers.get("content-type", "").split(";")[0].strip()
        other = media and media != "application/json" and not media.endswith("+json")
        self.data = json.loads(self.body) if self.body and not other else None  # not JSON: body

    @property
    def error_code(self) -> str | None:
        return (self.data or {}).get("error", {}).get("code")


class ApiClient(Protocol):
    key: str | None

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply: ...

    def as_key(self, key: str | None) -> ApiClient: ...


def _headers(key: str | None, extra: dict[str, str] | None) -> dict[str, str]:
    base = {"Content-Type": "application/json"}
    if key is not None:
        base["Authorization"] = f"Bearer {key}"
    return {**base, **(extra or {})}


def _payload(body: Any, raw: bytes | None) -> bytes:
    if raw is not None:
        return raw
    return b"" if body is None else json.dumps(body).encode()


class HttpClient:
    """Real HTTP to the local host serving ``function_app.app``."""

    def __init__(self, base_url: str, key: str | None) -> None:
        self.base_url, self.key = base_url, key

    def as_key(self, key: str | None) -> HttpClient:
        return HttpClient(self.base_url, key)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        parts = urlsplit(self.base_url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            conn.request(method, path, _payload(body, raw), _headers(self.key, headers))
            response = conn.getresponse()
            return Reply(response.status, dict(response.getheaders()), response.read())
        finally:
            conn.close()


class DirectClient:
    """Calls the user function from ``function_app`` with a real ``func.HttpRequest``,
    routing by the route templates the app declares (the same index the host uses)."""

    def __init__(self, key: str | None) -> None:
        self.key = key

    def as_key(self, key: str | None) -> DirectClient:
        return DirectClient(key)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
    ) -> Reply:
        import function_app
        from funchost import functions_of
        from funchost.route_templates import Router

        index = functions_of(function_app.app)
        split = urlsplit(path)
        found = Router(index.http_routes, prefix="").resolve(method, split.path)
        assert found.route is not None, f"no route for {method} {path}"
        request = func.HttpRequest(
            method,
            "http://localhost" + path,
            headers=_headers(self.key, headers),
            params=dict(parse_qsl(split.query)),
            route_params=found.params,
            body=_payload(body, raw),
        )
        response = found.route.function(request)
        return Reply(response.status_code, dict(response.headers), response.get_body())


def unquote_path(path: str) -> str:
    return unquote(path)
