"""The synchronous transport: sends a :class:`Call` through one ``httpx.Client``,
retrying as the :class:`RetryPolicy` says, and turns error answers into exceptions.

One ``Idempotency-Key`` per call, made before the first attempt and sent with every
retry of it: that is what makes a retry after a lost response safe for the server to
de-duplicate (docs/decisions.md, "Idempotency"; keys are scoped to tenant, user and caller).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TypeVar

import httpx

from memnet_client.calls import Call
from memnet_client.errors import InvalidResponse, TransportError, error_from_response
from memnet_client.retries import RetryPolicy

T = TypeVar("T")

__all__ = ["Session", "USER_AGENT"]

USER_AGENT = "memnet-client-python/0.1.0"


class Session:
    """Connection pool, credentials and retry policy; shared by every scoped client."""

    def __init__(
        self,
        base_url: str,
        auth: httpx.Auth | None,
        *,
        retry: RetryPolicy,
        timeout: float,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retry, self._sleep = retry, sleep
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            auth=auth,
            timeout=timeout,
            transport=transport,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )

    def send(self, call: Call[T]) -> T:
        """The parsed answer of ``call``; an :class:`ApiError` subclass for an error
        answer, :class:`TransportError` when the server could not be reached."""
        request = self._build(call)
        attempt = 0
        while True:
            try:
                response = self._http.send(request)
            except httpx.TransportError as error:
                wait = self.retry.after_error(attempt, error, call.resend_safe)
                if wait is None:
                    raise TransportError(f"{call.method} {call.path}: {error}") from error
            else:
                wait = self.retry.after_response(attempt, response)
                if wait is None:
                    return self._finish(call, response)
            self._sleep(wait)
            attempt += 1

    def _build(self, call: Call[T]) -> httpx.Request:
        headers = dict(call.headers)
        if call.write:
            headers["Idempotency-Key"] = str(uuid.uuid4())
        return self._http.build_request(
            call.method, call.path, params=call.params, json=call.json, headers=headers
        )

    @staticmethod
    def _finish(call: Call[T], response: httpx.Response) -> T:
        response.read()
        if response.is_error:
            raise error_from_response(response)
        try:
            return call.parse(response)
        except (ValueError, LookupError, TypeError) as problem:  # JSONDecodeError included
            raise InvalidResponse.of(response, problem) from problem

    def close(self) -> None:
        self._http.close()
