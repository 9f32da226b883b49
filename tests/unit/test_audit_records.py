"""An audit record has one JSON form: what is stored reads back as the same record and
writes out as the same bytes, optional members and all (memnet.domain.audit_records)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memnet.domain.audit_records import AuditRecord, fold

BASE: dict[str, Any] = {
    "change_id": "chg_0190000000001234567890abcdef",
    "prev_change_id": None,
    "operation": "create",
    "tenant_id": "t1",
    "user_id": "u1",
    "namespace": "user",
    "path": "user_dynamic.json",
    "binding_id": "user_dynamic",
    "profile_id": "default",
    "actor": "agent-1",
    "timestamp": "2026-11-29T07:00:00.000Z",
    "reason": "live_update",
    "pre_etag": None,
    "ops": [{"op": "add", "path": "/content/notes/-", "value": "a"}],
    "ops_sha256": "0" * 64,
    "evidence": {"conversation_id": "c1"},
    "confidence": 0.9,
    "base": {"doc_id": "d1", "schema_id": "s", "schema_version": "1", "content": {"notes": []}},
    "request_id": "req-1",
    "idempotency_key_sha256": "1" * 64,
}

SHAPES = {
    "a replace": {**BASE, "operation": "replace"},
    "a patch with every optional member": {
        **BASE,
        "operation": "patch",
        "base": None,
        "expires_at": "2026-12-29T07:00:00.000Z",
        "redirected_ops": [],
        "upserts": [{"index": 0}],
        "origin": {"replay_id": "r1"},
        "reason_codes": ["dedupe"],
        "rebased_from": '"0x1"',
    },
    "a create made meanwhile by another writer": {**BASE, "rebased_from": None},
    "a member this version does not know": {**BASE, "post_etag": '"0x2"'},
    "a revert": {
        **BASE,
        "operation": "patch",
        "reason": "revert",
        "base": None,
        "reverted_to": "chg_0190000000000000000000000001",
    },
    "a rebased undo": {
        **BASE,
        "operation": "patch",
        "reason": "revert",
        "base": None,
        "undone": "chg_0190000000000000000000000001",
        "rebased_from": '"0x1"',
    },
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_stored_record_reads_back_and_writes_out_the_same(shape: str):
    stored = SHAPES[shape]
    record = AuditRecord.from_json(stored)
    assert json.dumps(record.as_json()) == json.dumps(stored)  # members in the same order


def test_rebased_from_none_is_kept_apart_from_no_rebase():
    assert not AuditRecord.from_json(BASE).rebased
    meanwhile = AuditRecord.from_json({**BASE, "rebased_from": None})
    assert meanwhile.rebased and meanwhile.rebased_from is None


def test_new_ops_carry_their_own_hash_and_fold_in_order():
    created = AuditRecord.from_json(BASE)
    later = AuditRecord.from_json(
        {**BASE, "change_id": "chg_0190000000011234567890abcdef", "operation": "patch"}
    )
    later = later.with_ops([{"op": "add", "path": "/content/notes/-", "value": "b"}])
    later = AuditRecord.from_json({**later.as_json(), "base": None})
    assert later.ops_sha256 != BASE["ops_sha256"]
    document = fold([created, later])
    assert document is not None and document["content"] == {"notes": ["a", "b"]}
    assert document["change_id"] == later.change_id and document["created_at"] == BASE["timestamp"]
