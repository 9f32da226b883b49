"""A replay record's entries have one JSON form: what is stored reads back and writes
out the same, optional members and all (memnet.services.replay.records)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memnet.domain.replay_contract import Rejection
from memnet.domain.replay_plan import Applied

APPLIED: dict[str, Any] = {
    "patch_index": 2,
    "binding_id": "user_dynamic",
    "namespace": "user",
    "path": "user_dynamic.json",
    "change_id": "chg_0190000000001234567890abcdef",
    "etag": '"0x1"',
}
CHANGES = {
    "plain": APPLIED,
    "rebased over a create made meanwhile": {**APPLIED, "rebased_from": None},
    "rebased, redirected, retried": {
        **APPLIED,
        "rebased_from": '"0x0"',
        "redirected_ops": [{"op": "add", "path": "/content/pending/-"}],
        "retried": 2,
    },
    "unchanged, resolved by an admin": {**APPLIED, "unchanged": True, "resolved_by": "admin"},
}


@pytest.mark.parametrize("shape", list(CHANGES))
def test_an_applied_change_reads_back_and_writes_out_the_same(shape: str):
    stored = CHANGES[shape]
    assert json.dumps(Applied.from_json(stored).as_json()) == json.dumps(stored)


@pytest.mark.parametrize(
    "stored",
    [
        {"part": "digest", "index": 0, "code": "NOT_STRUCTURED", "reason": "r"},
        {"part": "patch", "index": 1, "code": "SCHEMA_VIOLATION", "reason": "r", "details": {}},
    ],
)
def test_a_rejection_reads_back_and_writes_out_the_same(stored: dict[str, Any]):
    assert json.dumps(Rejection.from_json(stored).as_json()) == json.dumps(stored)
