"""What one API call is, before any I/O: method, path, body, headers, how to read the
answer, and whether it may be sent twice. The client builds these; the session sends
them. Keeping the request a value is what lets the retry loop, the idempotency key and a
second (async) transport share one description of each route."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

import httpx

from memnet_client.errors import InvalidIdentifier

T = TypeVar("T")

__all__ = ["Call", "segment", "document_path", "drop_none"]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One request and its parser.

    ``write``: the call changes state, so it carries an ``Idempotency-Key`` (a uuid4
    made once per call and kept across the client's retries; routes that do not read it
    ignore it). ``resend_safe``: after a connection broke mid-request the call may be
    sent again — reads, and writes the server de-duplicates (by that key, or by the
    resource they name, like a snapshot PUT). Admin actions such as resolving a parked
    patch are not: a second send would answer 404 for the work the first one did.
    """

    method: str
    path: str
    parse: Callable[[httpx.Response], T]
    json: Any = None
    params: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    write: bool = False
    resend_safe: bool = True


_DOT_SEGMENTS = frozenset({"", ".", ".."})


def segment(value: str) -> str:
    """One path segment, percent-encoded whole (``/``, ``%``, ``?``, ``#`` and every
    other reserved character), so the server sees exactly the id given.

    ``""``, ``"."`` and ``".."`` are refused with :class:`InvalidIdentifier` before any
    I/O: percent-encoding leaves them as they are and httpx removes dot segments
    (RFC 3986), so ``forget_conversation("..")`` would be ``DELETE …/users/{user}``,
    forgetting the whole user, and the server would never see the id to refuse it.
    """
    if value in _DOT_SEGMENTS:
        raise InvalidIdentifier(value)
    return quote(value, safe="")


def document_path(tenant: str, user: str, namespace: str, path: str) -> str:
    """``/v1/…/documents/{namespace}/{path}``, each ``/``-separated part of ``path`` a
    :func:`segment` (so ``a//b``, ``a/./b`` and ``a/../b`` are refused)."""
    encoded = "/".join(segment(part) for part in path.split("/"))
    return f"{user_path(tenant, user)}/documents/{segment(namespace)}/{encoded}"


def user_path(tenant: str, user: str) -> str:
    return f"/v1/tenants/{segment(tenant)}/users/{segment(user)}"


def drop_none(**members: Any) -> dict[str, Any]:
    """A JSON body without the members the caller left out (the server applies its own
    defaults, which the client should not restate)."""
    return {name: value for name, value in members.items() if value is not None}
