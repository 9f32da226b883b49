"""When to send a call again, as a pure policy (no I/O, no sleeping): the session asks
it after each attempt and sleeps for what it says.

- ``429``, ``503`` and ``409 IDEMPOTENCY_KEY_IN_PROGRESS`` (the first request with this
  key is still running, typically our own lost attempt) are retried after the
  server's ``Retry-After`` — but only when that is at most ``max_wait`` seconds: a
  quota window of a minute is better reported than slept through inside an agent turn.
  Without ``Retry-After`` the wait is exponential backoff.
- A connection that could not be opened is retried for any call (nothing was sent).
- A connection that broke after sending is retried only for ``resend_safe`` calls;
  writes are sent again with the same ``Idempotency-Key``, so the server applies them
  once and answers the retry with the stored response.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from memnet_client.errors import retry_after_seconds

__all__ = ["RetryPolicy"]

_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` attempts after the first; ``max_wait`` bounds any one sleep,
    including a server's ``Retry-After``; ``backoff`` is the first backoff delay."""

    max_retries: int = 3
    max_wait: float = 30.0
    backoff: float = 0.5

    def after_response(self, attempt: int, response: httpx.Response) -> float | None:
        """Seconds to wait before attempt ``attempt + 1``, or ``None``: do not retry."""
        if attempt >= self.max_retries or not _retryable(response):
            return None
        wait = retry_after_seconds(response)
        if wait is None:
            return self._backoff(attempt)
        return wait if wait <= self.max_wait else None

    def after_error(
        self, attempt: int, error: httpx.TransportError, resend_safe: bool
    ) -> float | None:
        if attempt >= self.max_retries:
            return None
        if isinstance(error, _NOT_SENT) or resend_safe:
            return self._backoff(attempt)
        return None

    def _backoff(self, attempt: int) -> float:
        return float(min(self.max_wait, self.backoff * 2**attempt))


def _retryable(response: httpx.Response) -> bool:
    status = response.status_code
    if status in (429, 503):
        return True
    return status == 409 and _code(response) == "IDEMPOTENCY_KEY_IN_PROGRESS"


def _code(response: httpx.Response) -> str | None:
    try:
        code = response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None
    return code if isinstance(code, str) else None
