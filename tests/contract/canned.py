"""A canned azure-core HTTP response, for adapters tested at the transport level against
recorded response shapes (Azure AI Search, Key Vault)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Self

from azure.core.exceptions import HttpResponseError
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest import HttpRequest, HttpResponse


class CannedResponse(HttpResponse):
    """A complete, already-read response (azure.core.rest.HttpResponse)."""

    def __init__(
        self, request: HttpRequest, status: int, body: Any, headers: dict[str, str]
    ) -> None:
        self._request, self._status = request, status
        self._content = b"" if body is None else json.dumps(body).encode()
        self._headers = headers

    request = property(lambda self: self._request)
    status_code = property(lambda self: self._status)
    headers = property(lambda self: self._headers)
    reason = property(lambda self: "Canned")
    content_type = property(lambda self: self._headers["Content-Type"])
    is_closed = property(lambda self: True)
    is_stream_consumed = property(lambda self: True)
    encoding = property(lambda self: "utf-8")
    url = property(lambda self: self._request.url)
    content = property(lambda self: self._content)

    def text(self, encoding: str | None = None) -> str:
        return self._content.decode(encoding or "utf-8")

    def json(self) -> Any:
        return json.loads(self._content) if self._content else None

    def raise_for_status(self) -> None:
        if self._status >= 400:
            raise HttpResponseError(response=self)

    def __enter__(self) -> CannedResponse:
        return self

    def __exit__(self, *args: Any) -> None:
        pass

    def close(self) -> None:
        pass

    def read(self) -> bytes:
        return self._content

    def iter_raw(self, **kwargs: Any) -> Iterator[bytes]:
        yield self._content

    def iter_bytes(self, **kwargs: Any) -> Iterator[bytes]:
        yield self._content


class InMemoryTransport(HttpTransport):  # type: ignore[type-arg]  # generic in its own types
    """An azure-core transport with no connection to open or close: a subclass answers
    each request in ``send`` (with :class:`CannedResponse`)."""

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *args: Any) -> None:
        pass
