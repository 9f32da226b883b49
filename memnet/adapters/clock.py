"""The system clock: the :class:`~memnet.ports.Clock` the service runs on."""

from __future__ import annotations

from datetime import UTC, datetime


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)
