"""Timestamps: the one parser and the one stored form (docs/decisions.md "Timestamps").

Every timestamp the service takes in (an event's ``timestamp``, a search ``time_range``,
a stored record, an index hit, an idempotency record) goes through
:func:`parse_timestamp`: an RFC 3339 ``date-time`` (section 5.6), nothing looser, read as
an instant in UTC. :func:`format_timestamp` writes that instant in the canonical form,
``2026-02-14T20:00:00Z`` or ``2026-02-14T20:00:00.250000Z``. Pure: no I/O.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from memnet.domain.errors import BadRequest

# [0-9], never \d: \d also matches other scripts' digits, which int() would then read.
_DATE_TIME = re.compile(
    r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})[Tt]"
    r"(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]{1,9}))?"
    r"(?P<zone>[Zz]|(?P<sign>[+-])(?P<zone_hour>[0-9]{2}):(?P<zone_minute>[0-9]{2}))"
)
EXAMPLE = "2026-02-14T20:00:00Z"


class InvalidTimestamp(BadRequest):
    """400 ``INVALID_FIELD`` naming the field whose timestamp was refused."""

    code = "INVALID_FIELD"

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}", field=field)


def parse_timestamp(value: Any, field: str = "timestamp") -> datetime:
    """The instant an RFC 3339 date-time names, as an aware UTC datetime.

    ``T`` and ``Z`` may be lower case (RFC 3339 allows it); an offset is applied
    (``-00:00`` is UTC). Fractions of up to 9 digits are truncated to microseconds.
    Refused, as :class:`InvalidTimestamp`: anything else (no zone, no seconds, a space
    or ISO week date, ``+0100``), leap second ``:60``, and instants outside the years
    0001-9999 in UTC."""
    found = _DATE_TIME.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise InvalidTimestamp(field, f"must be an RFC 3339 date-time such as {EXAMPLE}")
    if found["second"] == "60":
        raise InvalidTimestamp(field, "leap second :60 is not accepted (write :59.999999)")
    try:
        return _local(found).astimezone(UTC)
    except ValueError as exc:
        raise InvalidTimestamp(field, "is not a valid date and time") from exc
    except OverflowError as exc:
        raise InvalidTimestamp(field, "must fall within the years 0001-9999 in UTC") from exc


def format_timestamp(moment: datetime) -> str:
    """The canonical form of an aware datetime: UTC, upper-case ``T`` and ``Z``, and
    six fraction digits only when the microseconds are not zero."""
    utc = moment.astimezone(UTC).replace(tzinfo=None)
    return utc.isoformat(timespec="microseconds" if utc.microsecond else "seconds") + "Z"


def format_millis(moment: datetime) -> str:
    """The form of the times the service itself records (documents, audit): UTC with
    milliseconds, e.g. ``2026-02-14T20:00:00.000Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def normalise_timestamp(value: Any, field: str = "timestamp") -> str:
    """``value`` in the canonical form (:func:`format_timestamp`), or 400."""
    return format_timestamp(parse_timestamp(value, field))


def written_date(value: str) -> str | None:
    """The date an RFC 3339 date-time is written on (in its own zone: ``2026-11-24`` of
    ``2026-11-24T23:30:00-05:00``), or None when ``value`` is not one."""
    found = _DATE_TIME.fullmatch(value)
    return value[:10] if found is not None else None


def _local(found: re.Match[str]) -> datetime:
    """The datetime as written, in its own zone (ValueError for impossible values)."""
    year, month, day, hour, minute, second = (
        int(found[k]) for k in ("year", "month", "day", "hour", "minute", "second")
    )
    micros = int((found["fraction"] or "")[:6].ljust(6, "0"))
    return datetime(year, month, day, hour, minute, second, micros, tzinfo=_zone(found))


def _zone(found: re.Match[str]) -> timezone:
    if found["sign"] is None:
        return UTC
    hours, minutes = int(found["zone_hour"]), int(found["zone_minute"])
    if hours > 23 or minutes > 59:
        raise ValueError("offset out of range")
    offset = timedelta(hours=hours, minutes=minutes)
    return timezone(-offset if found["sign"] == "-" else offset)
