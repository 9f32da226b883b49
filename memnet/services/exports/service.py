"""Exporting a user's memory as a job (issue 27, item 5; docs/export.md).

``request`` stores the job (``queued``) under the tenant's governance prefix and queues
it on ``memnet-export``; the queue worker (``run``) writes the archive's files beside it,
part by part (:mod:`.archive`), saving its progress, and marks it ``done`` with the
manifest's list of files, or ``failed``. A redelivered message of a job that did not
finish writes the archive again from the start (the files' names are fixed, so what a
crash left is overwritten); a finished job's message is dropped.

The archive is written for the caller who asked, with the rights it had then (roles,
clearance, profiles): the job keeps them, and the worker acts as that caller. Who may
read the status and the files: that caller, or an ``admin`` of the tenant.

Exports hold a copy of the user's memory, so they do not stay: each expires
:data:`KEEP_DAYS` after it was asked for (then it answers 404, and it is deleted when
read, when the user asks for a new export, or by ``DELETE``), and a forget of the user
deletes all of them (kind ``exports``, :mod:`memnet.services.forget.user`).
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.errors import BadRequest, Conflict, NotFound
from memnet.domain.export_archive import Manifest
from memnet.domain.layout import export_file_name, export_job_name, export_prefix
from memnet.domain.profiles import Profile
from memnet.domain.timestamps import format_millis, parse_timestamp
from memnet.ports import (
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    MessageQueue,
    PreconditionFailed,
)
from memnet.services.exports.archive import ArchiveWriter, Sink, Sources
from memnet.services.forget.tombstones import Tombstones
from memnet.services.governance.holds import LegalHolds
from memnet.services.profiles.registry import ProfileRegistry
from memnet.services.records import JsonRecords

EXPORT_QUEUE = "memnet-export"
KEEP_DAYS = 7
MAX_KEPT = 5  # exports kept per user at once (queued, running or done)
PROGRESS_EVERY = 5000  # records between two saves of the job's progress
log = logging.getLogger("memnet.services.exports.service")


@dataclass(frozen=True)
class ExportFile:
    """One file of a finished export, as the API serves it."""

    name: str
    data: bytes

    @property
    def content_type(self) -> str:
        if self.name.endswith(".jsonl"):
            return "application/x-ndjson; charset=utf-8"
        if self.name.endswith(".md"):
            return "text/markdown; charset=utf-8"
        return "application/json; charset=utf-8"


class BlobSink:
    """An export's files as blobs beside its job."""

    def __init__(self, blobs: BlobStore, tenant_id: str, user_id: str, export_id: str) -> None:
        self._blobs, self._where = blobs, (tenant_id, user_id, export_id)

    def put(self, name: str, data: bytes) -> None:
        # Overwriting is the point: a rerun writes the same file again.
        self._blobs.write(export_file_name(*self._where, name), data, Condition.unconditional())


class UserForgotten(Exception):
    """The user is being forgotten: the export stops (and is deleted by the forget)."""


class ExportService:
    def __init__(
        self,
        *,
        sources: Sources,
        registry: ProfileRegistry,
        queue: MessageQueue,
        holds: LegalHolds,
        tombstones: Tombstones,
        clock: Clock,
    ) -> None:
        self._src, self._registry, self._queue = sources, registry, queue
        self._holds, self._tombstones, self._clock = holds, tombstones, clock
        self._records = JsonRecords(sources.blobs)

    # -- requests -------------------------------------------------------------------

    def request(
        self, caller: Caller, tenant_id: str, user_id: str, profile_id: str | None
    ) -> dict[str, Any]:
        """Queue a new export (role ``read``; 409 while the user is being forgotten, and
        while the user has :data:`MAX_KEPT` exports kept: each is a full copy to build)."""
        job = self._new_job(caller, tenant_id, user_id, profile_id)
        if self._purge_expired(tenant_id, user_id) >= MAX_KEPT:
            raise Conflict(
                f"This user has {MAX_KEPT} exports kept; delete one (DELETE its status URL) "
                "or wait until one expires.",
                code="EXPORT_LIMIT",
                limit=MAX_KEPT,
            )
        self._records.save(export_job_name(tenant_id, user_id, job["export_id"]), job, None)
        self._logged("export_requested", job)
        self._queue.send(EXPORT_QUEUE, json.dumps(_message(job)))
        return public_view(job)

    def export_to(
        self,
        caller: Caller,
        where: tuple[str, str],
        profile_id: str | None,
        sink: Sink,
        progress: Callable[[str, int], None],
    ) -> Manifest:
        """An export written here, into ``sink`` (the command line's directory), not
        stored; audited as one asked through the API is."""
        job = self._new_job(caller, *where, profile_id)
        self._logged("export_requested", job)
        manifest = self.build(job, sink, progress)
        self._logged(
            "export_completed", job, complete=manifest.complete, records=_records(manifest)
        )
        return manifest

    def _new_job(
        self, caller: Caller, tenant_id: str, user_id: str, profile_id: str | None
    ) -> dict[str, Any]:
        caller.require(tenant_id, "read")
        caller.require_user(user_id)
        profile = self.profile_for(caller, profile_id)
        self._tombstones.check(tenant_id, user_id)
        now = self._clock.now()
        return {
            "export_id": f"exp_{secrets.token_hex(12)}",
            "tenant_id": tenant_id,
            "user_id": user_id,
            "status": "queued",
            "requested_by": caller.caller_id,
            "profile_id": None if profile is None else profile.profile_id,
            "caller": _caller_json(caller),
            "created_at": format_millis(now),
            "updated_at": format_millis(now),
            "expires_at": format_millis(now + timedelta(days=KEEP_DAYS)),
            "progress": {"kind": None, "records": 0},
        }

    def _logged(self, action: str, job: dict[str, Any], **details: Any) -> None:
        """The governance log's entry (docs/governance: who exported whom, when)."""
        actor = job["requested_by"] if action == "export_requested" else "memnet-export"
        self._holds.log(
            job["tenant_id"],
            action,
            actor,
            user_id=job["user_id"],
            export_id=job["export_id"],
            requested_by=job["requested_by"],
            **details,
        )

    def profile_for(self, caller: Caller, profile_id: str | None) -> Profile | None:
        """The profile whose classes decide what of a document the caller sees: the one
        named, or the caller's only one; none for a caller of every profile cleared for
        every class that names none (it sees every document whole). A caller of some
        profiles sees only the documents its profile binds, as its reads do."""
        full = caller.acting_clearance() == FULL_CLEARANCE and ANY in caller.profiles
        if full and profile_id is None and not self._one_profile(caller):
            return None
        return self._registry.for_caller(caller, profile_id)

    def _one_profile(self, caller: Caller) -> bool:
        return caller.default_profile(self._registry.profile_ids()) is not None

    def status(
        self, caller: Caller, tenant_id: str, user_id: str, export_id: str
    ) -> dict[str, Any]:
        return public_view(self._job_for(caller, tenant_id, user_id, export_id))

    def file(
        self, caller: Caller, tenant_id: str, user_id: str, export_id: str, name: str
    ) -> ExportFile:
        """One file of a finished export: ``manifest.json``, ``memory.md`` or a part it lists."""
        job = self._job_for(caller, tenant_id, user_id, export_id)
        if job["status"] != "done":
            raise Conflict(
                "The export is not finished.", code="EXPORT_NOT_READY", status=job["status"]
            )
        if name not in job.get("files", ()):
            raise NotFound("The export has no such file.", code="EXPORT_FILE_NOT_FOUND")
        try:
            data = self._src.blobs.read(export_file_name(tenant_id, user_id, export_id, name)).data
        except BlobNotFound:
            raise NotFound("The export has no such file.", code="EXPORT_FILE_NOT_FOUND") from None
        return ExportFile(name, data)

    def delete(self, caller: Caller, tenant_id: str, user_id: str, export_id: str) -> None:
        self._job_for(caller, tenant_id, user_id, export_id)
        self._remove(tenant_id, user_id, export_id)
        self._holds.log(
            tenant_id, "export_deleted", caller.caller_id, user_id=user_id, export_id=export_id
        )

    def _job_for(
        self, caller: Caller, tenant_id: str, user_id: str, export_id: str
    ) -> dict[str, Any]:
        """The job, for its requester or an admin; 404 for anyone else, for an id that
        is not one, and for an expired export (deleted now)."""
        caller.require(tenant_id, "read")
        caller.require_user(user_id)
        if not export_id.startswith("exp_"):
            raise _not_found()
        found = self._records.read(export_job_name(tenant_id, user_id, export_id))
        if found is None:
            raise _not_found()
        job = found.value
        if job["requested_by"] != caller.caller_id and "admin" not in caller.roles:
            raise _not_found()
        if self._expired(job):
            self._remove(tenant_id, user_id, export_id)
            raise _not_found()
        return job

    def _expired(self, job: dict[str, Any]) -> bool:
        return parse_timestamp(job["expires_at"], "expires_at") <= self._clock.now()

    def _purge_expired(self, tenant_id: str, user_id: str) -> int:
        """Remove the user's expired exports; how many are kept."""
        kept = 0
        for name in list(self._src.blobs.list_names(export_prefix(tenant_id, user_id))):
            if name.endswith("/job.json"):
                found = self._records.read(name)
                if found is not None and self._expired(found.value):
                    self._remove(tenant_id, user_id, found.value["export_id"])
                elif found is not None:
                    kept += 1
        return kept

    def _remove(self, tenant_id: str, user_id: str, export_id: str) -> None:
        """The export's files, then its job (a crash between leaves a job whose files
        a rerun of the removal finds gone)."""
        prefix = f"{export_prefix(tenant_id, user_id)}{export_id}/"
        for name in sorted(
            self._src.blobs.list_names(prefix), key=lambda n: n.endswith("job.json")
        ):
            try:
                self._src.blobs.delete(name)
            except BlobNotFound:
                continue

    # -- the worker -----------------------------------------------------------------

    def handle_message(self, body: str) -> dict[str, Any] | None:
        """One ``memnet-export`` message: write the archive of its job; the job's public
        view afterwards (None: dropped, the job being gone or finished)."""
        try:
            message = json.loads(body)
            name = export_job_name(message["tenant_id"], message["user_id"], message["export_id"])
        except (ValueError, KeyError, TypeError):
            log.error("export message is not one: dropped")
            return None
        found = self._records.read(name)
        if found is None or found.value["status"] in ("done", "failed"):
            return None
        job = self._save(name, {**found.value, "status": "running"})
        try:
            manifest = self.build(job, BlobSink(self._src.blobs, *_where(job)), self._saver(name))
        except UserForgotten:
            return self._failed(name, job, "the user is being forgotten")
        except (BadRequest, NotFound) as error:  # the profile is gone, or not the caller's
            return self._failed(name, job, error.message)
        return self._done(name, manifest)

    def gave_up(self, body: str) -> dict[str, Any] | None:
        """A message that failed every delivery (``memnet-export-poison``): its job is
        ``failed`` (the caller may ask again), not left ``running``."""
        try:
            message = json.loads(body)
            name = export_job_name(message["tenant_id"], message["user_id"], message["export_id"])
        except (ValueError, KeyError, TypeError):
            return None
        found = self._records.read(name)
        if found is None or found.value["status"] == "done":
            return None
        log.error("export %s failed every delivery", found.value["export_id"])
        return self._failed(name, found.value, "the export failed every delivery; ask again")

    def _failed(self, name: str, job: dict[str, Any], error: str) -> dict[str, Any]:
        return public_view(self._save(name, {**job, "status": "failed", "error": error}))

    def _done(self, name: str, manifest: Manifest) -> dict[str, Any]:
        records = _records(manifest)
        done = {
            **self._records_value(name),
            "status": "done",
            "complete": manifest.complete,
            "omitted": [o.as_json() for o in manifest.omitted],
            "files": ["manifest.json", "memory.md", *(p.name for p in manifest.parts)],
            "progress": {"kind": None, "records": records},
        }
        job = self._save(name, done)
        self._logged("export_completed", job, complete=manifest.complete, records=records)
        return public_view(job)

    def _saver(self, name: str) -> Callable[[str, int], None]:
        return lambda kind, records: self._progress(name, kind, records)

    def build(
        self,
        job: dict[str, Any],
        sink: Sink,
        progress: Any = lambda kind, n: None,
    ) -> Manifest:
        """Write the archive ``job`` describes into ``sink``, as its caller."""
        caller = _caller_of(job["caller"])
        profile = (
            None
            if job["profile_id"] is None
            else self._registry.for_caller(caller, job["profile_id"])
        )
        manifest = Manifest(
            export_id=job["export_id"],
            tenant_id=job["tenant_id"],
            user_id=job["user_id"],
            created_at=job["created_at"],
            requested_by=job["requested_by"],
        )
        return ArchiveWriter(self._src, sink, manifest, caller, profile, progress).write()

    def _progress(self, name: str, kind: str, records: int) -> None:
        job = self._records_value(name)
        try:
            self._tombstones.check(job["tenant_id"], job["user_id"])
        except Conflict:
            raise UserForgotten from None
        if records % PROGRESS_EVERY == 0:
            self._save(name, {**job, "progress": {"kind": kind, "records": records}})

    def _records_value(self, name: str) -> dict[str, Any]:
        found = self._records.read(name)
        if found is None:
            raise UserForgotten  # deleted under the job: only a forget does that
        return found.value

    def _save(self, name: str, job: dict[str, Any]) -> dict[str, Any]:
        """Save ``job`` over whatever is stored (one worker owns a job while it runs;
        a request never writes it again)."""
        job = {**job, "updated_at": format_millis(self._clock.now())}

        def write(found: dict[str, Any] | None) -> dict[str, Any] | None:
            return None if found is None else job

        try:
            self._records.update(name, write)
        except PreconditionFailed:
            log.warning("export job %s saved by another worker", job["export_id"])
        return job


def public_view(job: dict[str, Any]) -> dict[str, Any]:
    """What the status route answers: the job without the caller's rights it keeps."""
    base = f"/v1/tenants/{job['tenant_id']}/users/{job['user_id']}/exports/{job['export_id']}"
    shown = {k: v for k, v in job.items() if k != "caller"}
    shown["status_url"] = base
    if job["status"] == "done":
        shown["files_url"] = base + "/files/"
    return shown


def _records(manifest: Manifest) -> int:
    return sum(p.count for p in manifest.parts)


def _where(job: dict[str, Any]) -> tuple[str, str, str]:
    return job["tenant_id"], job["user_id"], job["export_id"]


def _message(job: dict[str, Any]) -> dict[str, str]:
    return {k: job[k] for k in ("export_id", "tenant_id", "user_id")}


def _caller_json(caller: Caller) -> dict[str, Any]:
    return {
        "caller_id": caller.caller_id,
        "tenants": sorted(caller.tenants),
        "profiles": sorted(caller.profiles),
        "roles": sorted(caller.roles),
        "user_id": caller.user_id,
        "clearance": caller.clearance,
    }


def _caller_of(stored: dict[str, Any]) -> Caller:
    return Caller(
        caller_id=stored["caller_id"],
        tenants=frozenset(stored["tenants"]),
        profiles=frozenset(stored["profiles"]),
        roles=frozenset(stored["roles"]),
        user_id=stored["user_id"],
        clearance=stored["clearance"],
    )


def _not_found() -> NotFound:
    return NotFound("No such export (or it has expired).", code="EXPORT_NOT_FOUND")
