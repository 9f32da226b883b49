"""Event digest validation (spec 9.2): every bad field is a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from memnet.errors import BadRequest
from memnet.event_model import parse_event

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


def test_a_good_event_is_kept_with_scope_from_the_path():
    record = parse()
    assert record["tenant_id"] == "t1" and record["user_id"] == "u1"
    assert record["event_id"].startswith("evt_") and len(record["event_id"]) == 32
    assert {k: record[k] for k in GOOD} == GOOD


def test_service_id_defaults_to_the_caller():
    assert parse(service_id=...)["service_id"] == "caller"


@pytest.mark.parametrize(
    ("field", "value", "code"),
    [
        ("tenant_id", "t2", "SCOPE_MISMATCH"),
        ("user_id", "u2", "SCOPE_MISMATCH"),
        ("timestamp", "2026-02-14T20:00:00", "INVALID_FIELD"),
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


def test_offsets_other_than_utc_are_accepted():
    assert parse(timestamp="2026-02-14T21:00:00+01:00")["timestamp"].endswith("+01:00")
