"""Short-lived documents (issue 15, capability 2; docs/profiles.md "Short-lived memory").

A binding with ``ttl_seconds`` gives each of its documents an ``expires_at`` in the
envelope: the time of the document's last committed write plus the TTL, so working
memory lives while it is used and goes when it is left alone. From that instant the
document reads as absent (GET, history, listing, context assembly, an ``If-Match``
write); a create may take its place; the retention sweep deletes it. The writer's
binding decides, once, at the write: a document carries its own expiry, so the sweep
needs no profile to know it. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from memnet.domain.bindings import Binding
from memnet.domain.envelope import EXPIRES_AT
from memnet.domain.timestamps import InvalidTimestamp, format_millis, parse_timestamp


def expires_at(binding: Binding, written_at: datetime) -> str | None:
    """When a document of ``binding`` written at ``written_at`` expires, or None."""
    if binding.ttl_seconds is None:
        return None
    return format_millis(written_at + timedelta(seconds=binding.ttl_seconds))


def expired(document: Mapping[str, Any], now: datetime) -> bool:
    """Whether ``document`` (a stored envelope) has expired at ``now``. An unreadable
    ``expires_at`` (no writer of the service stores one) counts as expired: the document
    then goes rather than living for ever."""
    value = document.get(EXPIRES_AT)
    if value is None:
        return False
    try:
        return parse_timestamp(value, EXPIRES_AT) <= now
    except InvalidTimestamp:
        return True
