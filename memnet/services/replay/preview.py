"""A replay's dry run (``python -m memnet replay SNAPSHOT --dry-run``): what replaying a
snapshot now, with a given extractor, would write, and how that differs from what its
replay wrote before. Nothing is written: no record, no event, no document, no audit."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from memnet.domain.envelope import Json, canonical
from memnet.domain.errors import EtagMismatch, MemnetError
from memnet.domain.layout import SnapshotRef
from memnet.domain.replay_plan import PatchRecord
from memnet.ports import Extractor
from memnet.services.replay.records import ReplayRecord
from memnet.services.replay.worker import ReplayService
from memnet.services.replay.writes import Planned, command, replay_caller


def preview(replay: ReplayService, ref: SnapshotRef, extractor: Extractor) -> dict[str, Any]:
    request = replay.extraction_request(ref)
    plan = replay.checked(extractor.extract(request), request)
    etags = {(t.binding_id, t.path): t.etag for t in request.targets}
    profile_id = request.profile.profile_id
    about = Planned(profile_id, {"name": extractor.name, "version": extractor.version})
    previous = replay.records.load(ref)
    clearance = None if previous is None else previous.clearance
    caller = replay_caller(ref, profile_id, clearance)  # as extraction_request's views
    patches = []
    for patch in plan.patches:
        base = etags.get((patch.binding_id, patch.path))
        record = PatchRecord.of(patch, ref.replay_id, request, base)
        patches.append({**record.as_json(), **_outcome(replay, caller, ref, about, record)})
    digests = [d.digest for d in plan.digests]
    return {
        "snapshot": ref.as_json(),
        **asdict(about),
        "digests": digests,
        "patches": patches,
        "rejected": [r.as_json() for r in plan.rejected],
        "previous": None if previous is None else _previous(previous),
        "diff": _diff(previous, digests, patches),
    }


def _outcome(
    replay: ReplayService,
    caller: Any,
    ref: SnapshotRef,
    about: Planned,
    record: PatchRecord,
) -> Json:
    try:
        response = replay.documents.preview(caller, command(ref, about, record, record.base_etag))
    except EtagMismatch as error:
        return {"outcome": "conflict", "conflict": error.details.get("rebase")}
    except MemnetError as error:
        return {"outcome": "rejected", "code": error.code, "reason": error.message}
    body = response.body
    if body.get("unchanged"):
        return {"outcome": "unchanged"}
    if body.get("redirected_ops"):
        return {"outcome": "redirected", "redirected_ops": body["redirected_ops"]}
    return {"outcome": "rebased" if "rebased_from" in body else "applied"}


def _previous(record: ReplayRecord) -> dict[str, Any]:
    return {
        "status": record.status,
        "extractor": record.extractor,
        "events": list(record.events),
        "changes": [c.as_json() for c in record.changes],
    }


def _diff(
    previous: ReplayRecord | None, digests: list[str], patches: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the new plan adds and drops against the stored one (patches compared by
    target and ops, digests by text)."""
    output = previous.output if previous else None
    old_digests = [d.digest for d in output.digests] if output else []
    old = {_key(p): p for p in (p.as_json() for p in output.patches)} if output else {}
    new = {_key(p): p for p in patches}
    return {
        "digests_added": [d for d in digests if d not in old_digests],
        "digests_removed": [d for d in old_digests if d not in digests],
        "patches_added": [_brief(p) for k, p in new.items() if k not in old],
        "patches_removed": [_brief(p) for k, p in old.items() if k not in new],
    }


def _key(patch: dict[str, Any]) -> bytes:
    return canonical([patch["target_binding_id"], patch["target_path"], patch["ops"]])


def _brief(patch: dict[str, Any]) -> dict[str, Any]:
    return {k: patch[k] for k in ("target_binding_id", "target_path", "ops", "confidence")}
