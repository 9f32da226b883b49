"""Event digest validation (spec 9.2): every bad field is a 400 naming it; a stored blob
is checked the same way before it is indexed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memnet.domain.errors import BadRequest
from memnet.domain.event_model import parse_event, parse_stored

GOOD = {
    "service_id": "assistant-a",
    "timestamp": "2026-02-14T20:00:00Z",
    "source_type": "chat",
    "digest": "User asked to split memory by contention and lifecycle.",
    "keywords": ["memory", "config"],
    "project_ids": ["project-alpha"],
    "snapshot_uri": "blob://tenants/t1/users/u1/snapshots/c_1/s_1.json",
    "evidence": {"message_ids": ["m12", "m13"], "span": {"start": 12, "end": 13}},
}


def parse(**changes: Any) -> dict[str, Any]:
    body = {k: v for k, v in {**GOOD, **changes}.items() if v is not ...}
    return parse_event(body, "t1", "u1", "caller")


def test_a_good_event_is_kept_with_scope_from_the_path_and_the_recording_caller():
    record = parse()
    assert record["tenant_id"] == "t1" and record["user_id"] == "u1"
    assert record["event_id"] is None  # the service derives it from the idempotency claim
    assert {k: record[k] for k in GOOD} == GOOD
    assert record["recorded_by"] == "caller"


def test_recorded_by_comes_from_the_caller_never_from_the_body():
    assert parse(recorded_by="caller")["recorded_by"] == "caller"  # a round-tripped record
    with pytest.raises(BadRequest) as caught:
        parse(recorded_by="someone-else")
    assert caught.value.details == {"field": "recorded_by"}


def test_service_id_defaults_to_the_caller():
    assert parse(service_id=...)["service_id"] == "caller"


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("tenant_id", "t2", "SCOPE_MISMATCH"),
        ("user_id", "u2", "SCOPE_MISMATCH"),
        ("timestamp", "2026-02-14T20:00:00", "INVALID_FIELD"),
        ("timestamp", "2026-W01-1T00:00Z", "INVALID_FIELD"),
        ("timestamp", "2026-01-01 00:00:00Z", "INVALID_FIELD"),
        ("timestamp", "2016-12-31T23:59:60Z", "INVALID_FIELD"),
        ("timestamp", 1771099200, "INVALID_FIELD"),
        ("timestamp", "yesterday", "INVALID_FIELD"),
        ("timestamp", ..., "INVALID_FIELD"),
        ("digest", "", "INVALID_FIELD"),
        ("digest", "x" * 4001, "INVALID_FIELD"),
        ("digest", 5, "INVALID_FIELD"),
        ("keywords", ["ok"] * 33, "INVALID_FIELD"),
        ("keywords", ["x" * 65], "INVALID_FIELD"),
        ("keywords", "memory", "INVALID_FIELD"),
        ("project_ids", ["../p"], "INVALID_FIELD"),
        ("service_id", "a b", "INVALID_IDENTIFIER"),
        ("source_type", ..., "INVALID_FIELD"),
        ("event_id", "evt/1", "INVALID_IDENTIFIER"),
        ("snapshot_uri", "blob://tenants/t2/users/u1/snapshots/c/s.json", "INVALID_FIELD"),
        ("snapshot_uri", "blob://tenants/t1/users/u1/documents/x.json", "INVALID_FIELD"),
        ("snapshot_uri", "blob://tenants/t1/users/u1/snapshots/../../u2/x", "INVALID_FIELD"),
        ("snapshot_uri", "https://example.org/x", "INVALID_FIELD"),
        ("evidence", "m1", "INVALID_FIELD"),
        ("evidence", {"message_ids": "m1"}, "INVALID_FIELD"),
        ("evidence", {"span": {"start": 5, "end": 1}}, "INVALID_FIELD"),
        ("evidence", {"span": {"start": True, "end": 1}}, "INVALID_FIELD"),
        ("surprise", 1, "UNKNOWN_FIELD"),
    ],
)
def test_bad_fields_are_400(field: str, value: Any, code: str):
    with pytest.raises(BadRequest) as caught:
        parse(**{field: value})
    assert caught.value.code == code


@pytest.mark.parametrize(
    "written", ["2026-02-14T21:00:00+01:00", "2026-02-14t20:00:00z", "2026-02-14T20:00:00.000Z"]
)
def test_timestamps_are_stored_in_the_canonical_utc_form(written: str):
    assert parse(timestamp=written)["timestamp"] == "2026-02-14T20:00:00Z"


def stored(**changes: Any) -> bytes:
    record = {**parse(event_id="evt_1"), **changes}
    return json.dumps({k: v for k, v in record.items() if v is not ...}).encode()


def test_a_stored_blob_is_read_back_as_its_fields_with_a_canonical_timestamp():
    fields = parse_stored(stored(timestamp="2026-02-14t20:00:00z"), "t1", "u1", "evt_1")
    assert fields["timestamp"] == "2026-02-14T20:00:00Z" and fields["digest"] == GOOD["digest"]
    old = parse_stored(stored(recorded_by=...), "t1", "u1", "evt_1")  # written before it
    assert old["event_id"] == "evt_1"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        (b"not json", None),
        (b"\xff\xfe", None),
        (b"[1, 2]", "event_id"),
        (b"null", "event_id"),
        (stored(event_id="evt_2"), "event_id"),  # not the event its name says
        (stored(event_id=...), "event_id"),
        (stored(tenant_id="t2"), "tenant_id"),
        (stored(timestamp="2026-W01-1T00:00Z"), "timestamp"),
        (stored(timestamp="2026-01-01 00:00:00Z"), "timestamp"),
        (stored(timestamp=...), "timestamp"),
        (stored(service_id=...), "service_id"),
        (stored(digest=""), "digest"),
        (stored(surprise=1), None),
    ],
)
def test_a_blob_that_holds_no_valid_event_is_400(data: bytes, field: str | None):
    with pytest.raises(BadRequest) as caught:
        parse_stored(data, "t1", "u1", "evt_1")
    assert caught.value.details.get("field") == field
