"""The records of an export archive, kind by kind: what each must hold to be imported
(checked before anything is written: :func:`memnet.services.transfer.archive.open_archive`)
and the same record moved to the target user (:func:`relocated`).

Every record must name the archive's own tenant and user: a record of anyone else is
refused, so an archive cannot smuggle writes into another user's prefix. The names
every blob is written under (change ids, namespaces and paths, event ids, conversation
and snapshot ids, receipt ids) are checked as the API checks them.
"""

from __future__ import annotations

import json
from typing import Any

from memnet.domain.audit_records import AuditRecord, change_time, is_change_id
from memnet.domain.envelope import Json
from memnet.domain.errors import BadRequest
from memnet.domain.event_model import parse_stored
from memnet.domain.identifiers import check_document_path, check_identifier
from memnet.domain.transcript import parse_transcript
from memnet.services.governance.holds import HOLD_KINDS, Hold
from memnet.services.replay.records import ReplayRecord
from memnet.services.transfer.archive import Archive, Check

HOLD_SCOPES = ("tenant", "user")


def _audit(record: Json, archive: Archive) -> None:
    _owned(record, archive)
    audit = _parsed(AuditRecord.from_json, record)
    _change_id(audit.change_id)
    _place(audit.ref.namespace, audit.ref.path)
    archive.findings.change_ids.add(audit.change_id)
    if audit.prev_change_id is not None:
        prev = _change_id(audit.prev_change_id)
        if change_time(prev) > change_time(audit.change_id):  # it would move the horizon on
            raise _bad("a change follows one minted after it")
        archive.findings.missing_prev.add(prev)


def _documents(record: Json, archive: Archive) -> None:
    ref, document = record.get("ref"), record.get("document")
    if not isinstance(ref, dict) or not isinstance(document, dict):
        raise _bad("a documents record holds a ref and a document")
    _owned(ref, archive)
    _place(ref.get("namespace"), ref.get("path"))
    _change_id(document.get("change_id"))


def _events(record: Json, archive: Archive) -> None:
    event_id = record.get("event_id")
    if not isinstance(event_id, str):
        raise _bad("an event has no event_id")
    parse_stored(json.dumps(record).encode(), archive.tenant_id, archive.user_id, event_id)


def _replays(record: Json, archive: Archive) -> None:
    _owned(record, archive)
    replay = _parsed(ReplayRecord.from_json, record)
    check_identifier("conversation_id", _text(replay.conversation_id))
    check_identifier("snapshot_id", _text(replay.snapshot_id))


def _receipts(record: Json, archive: Archive) -> None:
    _owned(record, archive)
    check_identifier("receipt_id", _text(record.get("receipt_id")))


def _holds(record: Json, archive: Archive) -> None:
    if record.get("scope") not in HOLD_SCOPES or not isinstance(record.get("hold"), dict):
        raise _bad('a holds record is {"scope": "tenant" or "user", "hold": {...}}')
    if record["scope"] == "user" and record.get("user_id", archive.user_id) != archive.user_id:
        raise BadRequest("a hold names another user", code="RECORD_OUT_OF_SCOPE")
    hold = _parsed(Hold.from_json, record["hold"])
    if not set(hold.kinds) <= set(HOLD_KINDS):
        raise _bad(f"a hold keeps kinds of {list(HOLD_KINDS)} only")


def _snapshots(record: Json, archive: Archive) -> None:
    ids, content = record.get("snapshot"), record.get("content")
    if not isinstance(ids, dict) or not isinstance(content, dict):
        raise _bad("a snapshots record holds a snapshot's ids and its content")
    check_identifier("conversation_id", _text(ids.get("conversation_id")))
    check_identifier("snapshot_id", _text(ids.get("snapshot_id")))
    parse_transcript(content)


def _kept(record: Json, archive: Archive) -> None:
    """Proposals: verified with their part, not written (see :data:`NOT_WRITTEN`)."""


CHECKS: dict[str, Check] = {
    "audit": _audit,
    "documents": _documents,
    "events": _events,
    "replays": _replays,
    "receipts": _receipts,
    "holds": _holds,
    "proposals": _kept,
    "snapshots": _snapshots,
}
NOT_WRITTEN = {
    "proposals": "a proposal and its decision are held by its document and audit records",
}


def relocated(kind: str, record: Json, tenant_id: str, user_id: str) -> Json:
    """The record as the target user's: its ``tenant_id`` and ``user_id`` (a document's
    ``ref``) rewritten; nothing nested (pointers such as a snapshot URI keep naming
    where they pointed when they were written)."""
    if kind == "documents":
        return {**record, "ref": {**record["ref"], "tenant_id": tenant_id, "user_id": user_id}}
    if kind in ("audit", "events", "replays", "receipts"):
        return {**record, "tenant_id": tenant_id, "user_id": user_id}
    return record


def _owned(record: Json, archive: Archive) -> None:
    owner = (record.get("tenant_id"), record.get("user_id"))
    if owner != (archive.tenant_id, archive.user_id):
        raise BadRequest(
            "a record names another tenant or user than the manifest",
            code="RECORD_OUT_OF_SCOPE",
        )


def _place(namespace: Any, path: Any) -> None:
    check_identifier("namespace", _text(namespace))
    check_document_path(_text(path))


def _change_id(value: Any) -> str:
    if not is_change_id(value):
        raise _bad("a change id is not chg_ and 28 hex digits of a time up to the year 9999")
    return value


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise _bad("an identifier is not a string")
    return value


def _parsed(parse: Any, record: Json) -> Any:
    try:
        return parse(record)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise _bad(f"a record lacks a member or has one of the wrong type ({exc})") from exc


def _bad(message: str) -> BadRequest:
    return BadRequest(message, code="ARCHIVE_INVALID")
