"""The pure half of the embedded search index (:mod:`.search`): the
SQL filter clauses of a query, and timestamps (read by :mod:`memnet.domain.timestamps`, the one
parser) as UTC microseconds. No I/O."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from memnet.domain.timestamps import parse_timestamp
from memnet.ports import EventQuery

_EPOCH, _MICROSECOND = datetime(1970, 1, 1, tzinfo=UTC), timedelta(microseconds=1)


def filters(query: EventQuery, scope: int, correlated: bool = False) -> tuple[str, list[object]]:
    """The AND-ed filter clauses on ``e`` (any-of within a field; a class filter keeps
    unclassified events and those of its classes), with their parameters.
    A project or keyword filter is a list subquery (SQLite builds it once per statement)
    or, ``correlated``, an index probe per row (for a statement run again and again)."""
    clauses: list[str] = []
    params: list[object] = []
    for op, bound in ((">=", query.since), ("<", query.until)):
        if bound is not None:
            clauses.append(f"e.ts_us {op} ?")
            params.append(micros(utc(bound)))
    for column, values in (("service_id", query.service_ids), ("source_type", query.source_types)):
        if values:
            clauses.append(f"e.{column} IN ({','.join('?' * len(values))})")
            params.extend(values)
    if query.classes is not None:  # unclassified events, and those of the classes given
        shown = f" OR e.sensitivity IN ({_marks(query.classes)})" if query.classes else ""
        clauses.append(f"(e.sensitivity IS NULL{shown})")
        params.extend(query.classes)
    for kind, values in (("p", query.project_ids), ("k", query.keywords)):
        if values:
            tags = f"event_tags WHERE scope_id = ? AND kind = ? AND value IN ({_marks(values)})"
            if correlated:
                clauses.append(f"EXISTS (SELECT 1 FROM {tags} AND doc_id = e.doc_id)")
            else:
                clauses.append(f"e.doc_id IN (SELECT doc_id FROM {tags})")
            params.extend((scope, kind, *values))
    return "".join(f" AND {clause}" for clause in clauses), params


def field_counts(query: EventQuery, scope: int) -> list[tuple[str, list[object]]]:
    """Per filtered field, a statement counting the user's events that field alone selects
    (tags: matching values, so an event with two counts twice), up to a LIMIT bound as the
    last parameter: a few index entries each, whatever the user holds."""
    counts: list[tuple[str, list[object]]] = []
    since, until = query.since, query.until
    if since is not None or until is not None:
        low = micros(utc(since)) if since is not None else -(2**63)
        high = micros(utc(until)) if until is not None else 2**63 - 1
        counts.append(("events WHERE scope_id = ? AND ts_us >= ? AND ts_us < ?", [low, high]))
    for column, values in (("service_id", query.service_ids), ("source_type", query.source_types)):
        if values:
            counts.append(
                (f"events WHERE scope_id = ? AND {column} IN ({_marks(values)})", [*values])
            )
    for kind, values in (("p", query.project_ids), ("k", query.keywords)):
        if values:
            sql = f"event_tags WHERE scope_id = ? AND kind = ? AND value IN ({_marks(values)})"
            counts.append((sql, [kind, *values]))
    return [
        (f"SELECT count(*) FROM (SELECT 1 FROM {sql} LIMIT ?)", [scope, *params])
        for sql, params in counts
    ]


def _marks(values: Sequence[object]) -> str:
    return ",".join("?" * len(values))


def utc(value: str) -> datetime:
    """An RFC 3339 timestamp as aware UTC (400 ``InvalidTimestamp`` otherwise)."""
    return parse_timestamp(value)


def micros(moment: datetime) -> int:
    return (moment - _EPOCH) // _MICROSECOND
