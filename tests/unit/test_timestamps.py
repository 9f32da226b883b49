"""The one timestamp parser (memnet.domain.timestamps; docs/decisions.md "Timestamps"): strict
RFC 3339 date-times in, the canonical UTC form out, a 400 naming the field otherwise."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memnet.api.errors import status_of
from memnet.domain.errors import BadRequest
from memnet.domain.timestamps import (
    InvalidTimestamp,
    format_timestamp,
    normalise_timestamp,
    parse_timestamp,
)

ACCEPTED = [
    ("2026-02-14T20:00:00Z", "2026-02-14T20:00:00Z"),
    ("2026-02-14t20:00:00z", "2026-02-14T20:00:00Z"),  # RFC 3339 5.6: t and z may be lower
    ("2026-02-14T20:00:00z", "2026-02-14T20:00:00Z"),
    ("2026-02-14T21:00:00+01:00", "2026-02-14T20:00:00Z"),  # offsets become UTC
    ("2026-02-14T14:30:00-05:30", "2026-02-14T20:00:00Z"),
    ("2026-02-14T20:00:00-00:00", "2026-02-14T20:00:00Z"),  # unknown local offset: UTC
    ("2026-02-15T00:00:00+04:00", "2026-02-14T20:00:00Z"),  # crosses the date line back
    ("2026-02-14T20:00:00.5Z", "2026-02-14T20:00:00.500000Z"),
    ("2026-02-14T20:00:00.000Z", "2026-02-14T20:00:00Z"),
    ("2026-02-14T20:00:00.1234567Z", "2026-02-14T20:00:00.123456Z"),  # .NET "o": 7 digits
    ("2026-02-14T20:00:00.123456789Z", "2026-02-14T20:00:00.123456Z"),  # truncated
    ("2024-02-29T12:00:00Z", "2024-02-29T12:00:00Z"),
    ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"),  # zero-padded, not "1-01-01"
    ("0999-12-31T23:59:59Z", "0999-12-31T23:59:59Z"),
    ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999Z"),
    ("9999-12-31T23:59:59+23:59", "9999-12-31T00:00:59Z"),
]

REFUSED = [
    ("2026-W01-1T00:00Z", "RFC 3339"),  # ISO 8601 week date
    ("2026-01-01 00:00:00Z", "RFC 3339"),  # space separator
    ("2026-02-14T20:00:00", "RFC 3339"),  # no zone
    ("2026-02-14T20:00Z", "RFC 3339"),  # no seconds
    ("2026-02-14", "RFC 3339"),
    ("20260214T200000Z", "RFC 3339"),  # ISO basic format
    ("2026-02-14T20:00:00+0100", "RFC 3339"),  # offset without colon
    ("2026-02-14T20:00:00+01", "RFC 3339"),
    ("2026-02-14T20:00:00 Z", "RFC 3339"),
    ("2026-02-14T20:00:00.Z", "RFC 3339"),
    ("2026-02-14T20:00:00.1234567890Z", "RFC 3339"),  # more than 9 fraction digits
    ("2026-02-14T20:00:00,5Z", "RFC 3339"),
    ("2026-02-14T20:00:00UTC", "RFC 3339"),
    ("2026-02-14T20:00:00Z\n", "RFC 3339"),
    (" 2026-02-14T20:00:00Z", "RFC 3339"),
    ("+2026-02-14T20:00:00Z", "RFC 3339"),
    ("12026-02-14T20:00:00Z", "RFC 3339"),
    ("\uff12\uff10\uff12\uff16-02-14T20:00:00Z", "RFC 3339"),  # fullwidth digits
    ("٢٠٢٦-02-14T20:00:00Z", "RFC 3339"),  # Arabic-Indic digits
    ("yesterday", "RFC 3339"),
    ("", "RFC 3339"),
    ("2026-13-01T00:00:00Z", "valid date"),
    ("2026-02-30T00:00:00Z", "valid date"),
    ("2025-02-29T00:00:00Z", "valid date"),
    ("2026-02-14T24:00:00Z", "valid date"),
    ("2026-02-14T20:60:00Z", "valid date"),
    ("2026-02-14T20:00:00+24:00", "valid date"),
    ("2026-02-14T20:00:00+01:60", "valid date"),
    ("0000-01-01T00:00:00Z", "valid date"),
    ("2016-12-31T23:59:60Z", "leap second"),
    ("9999-12-31T23:00:00-05:00", "0001-9999"),  # past 9999 in UTC
    ("0001-01-01T00:30:00+01:00", "0001-9999"),  # before 0001 in UTC
]


@pytest.mark.parametrize(("text", "canonical"), ACCEPTED)
def test_rfc_3339_date_times_are_read_as_utc_instants_in_the_canonical_form(
    text: str, canonical: str
):
    assert normalise_timestamp(text) == canonical
    moment = parse_timestamp(text)
    assert moment.tzinfo is UTC
    assert normalise_timestamp(canonical) == canonical  # the canonical form is a fixed point


@pytest.mark.parametrize(("text", "problem"), REFUSED)
def test_anything_else_is_a_400_naming_the_field(text: str, problem: str):
    with pytest.raises(InvalidTimestamp) as caught:
        parse_timestamp(text, "time_range.from")
    error = caught.value
    assert isinstance(error, BadRequest) and status_of(error) == 400
    assert error.code == "INVALID_FIELD" and error.details == {"field": "time_range.from"}
    assert problem in error.message


@pytest.mark.parametrize("value", [None, 1_700_000_000, 1.5, ["2026-02-14T20:00:00Z"], b"x"])
def test_values_that_are_not_strings_are_400(value: object):
    with pytest.raises(InvalidTimestamp):
        parse_timestamp(value)


def test_format_writes_any_aware_datetime_as_utc():
    plus_two = timezone(timedelta(hours=2))
    assert format_timestamp(datetime(2026, 2, 14, 22, 0, tzinfo=plus_two)) == (
        "2026-02-14T20:00:00Z"
    )
    assert format_timestamp(datetime(1, 1, 1, 0, 0, 0, 7, tzinfo=UTC)) == (
        "0001-01-01T00:00:00.000007Z"
    )


def test_no_module_parses_timestamps_but_this_one():
    core = Path(__file__).resolve().parents[2] / "memnet"
    others = [p for p in core.rglob("*.py") if p.name != "timestamps.py"]
    parsers = ("fromisoformat", "strptime")
    assert not [p for p in others if any(name in p.read_text() for name in parsers)]
