"""The system clock and the one timestamp format the service writes."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """RFC 3339 UTC with milliseconds, e.g. ``2026-02-14T20:00:00.000Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
