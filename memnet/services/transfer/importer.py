"""Importing an export archive into this deployment (issue 27, item 6; docs/moving.md,
docs/decisions.md "Importing an archive").

The archive is verified whole before anything is written (:mod:`.archive`). Then its
records are written kind by kind (audit records before the documents that name them,
as the write path does; :mod:`.import_writes`), every write create-only: a record
already there with the same bytes is the same write, so a rerun after a crash repeats
the unfinished part and skips the parts the ledger (:mod:`.import_ledger`) marks done.
Kept: document ids, change ids, audit records, timestamps; new: the ETags (the target
store's).

A user who already holds memory is refused, unless it is this archive's own import
resuming. A live write that lands during the import wins: a document (or event, replay
record, receipt) it created first is left as it is, the import's record is not written
(its audit records for that document are removed again: off every chain) and the
conflict is listed in the report and the ledger. A live write to a document the import
had already written is a later change of the imported document, not a conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from memnet.domain.audit_records import change_time
from memnet.domain.envelope import Json
from memnet.domain.errors import Conflict, Forbidden
from memnet.domain.export_archive import Part
from memnet.domain.identifiers import check_identifier
from memnet.domain.layout import user_prefix
from memnet.ports import Clock, PreconditionFailed
from memnet.services.forget.tombstones import Tombstones
from memnet.services.records import JsonRecords
from memnet.services.search.index import JOB_BATCH
from memnet.services.transfer.archive import Archive, open_archive
from memnet.services.transfer.archive_records import CHECKS, NOT_WRITTEN, relocated
from memnet.services.transfer.import_ledger import DONE, ImportLedgers, ImportState, Ledger
from memnet.services.transfer.import_writes import RecordWrites

ORDER = ("audit", "documents", "events", "replays", "snapshots", "receipts", "holds")
Progress = Callable[[int, str, int], None]  # records done, the part, written in the part


@dataclass(frozen=True)
class Mapping:
    """Where the archive goes. By default into the tenant and user it names; ``tenant``
    and ``user`` map one named source (``(from, to)``) to another, and refuse an
    archive of any other; ``to`` sends the archive, whoever it names, to one user."""

    tenant: tuple[str, str] | None = None
    user: tuple[str, str] | None = None
    to: tuple[str, str] | None = None

    def target(self, tenant_id: str, user_id: str) -> tuple[str, str]:
        if self.to is not None:
            return self.to
        return _mapped("tenant", self.tenant, tenant_id), _mapped("user", self.user, user_id)


@dataclass(frozen=True)
class ImportReport:
    """What an import did. ``status``: ``imported``, or ``already_imported`` (a rerun of
    a finished import: nothing was written)."""

    status: str
    state: ImportState
    resumed: bool
    not_written: dict[str, str]

    def as_json(self) -> Json:
        state = self.state.as_json()
        shown = ("import_id", "export_id", "tenant_id", "user_id", "source", "written")
        return {
            "status": self.status,
            **{k: state[k] for k in shown},
            "resumed": self.resumed,
            "conflicts": state["conflicts"],
            "not_written": self.not_written,
            "started_at": state["started_at"],
            "completed_at": state["completed_at"],
        }


class Importer:
    def __init__(self, writes: RecordWrites, tombstones: Tombstones, clock: Clock) -> None:
        """``writes``: the record writes over the target's stores, which the import's
        own reads and records (ledger, horizon, governance log) use too."""
        self.writes, self._tombstones = writes, tombstones
        self._blobs, self._audit, self._holds = writes.blobs, writes.audit_log, writes.holds
        self._ledgers = ImportLedgers(JsonRecords(self._blobs), clock)

    def run(
        self, directory: Path, mapping: Mapping, actor: str, progress: Progress | None = None
    ) -> ImportReport:
        """Import the archive at ``directory``; refusals (nothing written) raise
        :class:`~memnet.domain.errors.MemnetError` subclasses."""
        archive = open_archive(directory, CHECKS)
        tenant_id, user_id = mapping.target(archive.tenant_id, archive.user_id)
        check_identifier("tenant_id", tenant_id)
        check_identifier("user_id", user_id)
        self._tombstones.check(tenant_id, user_id)
        not_written = {k: NOT_WRITTEN[k] for k in NOT_WRITTEN if archive.of_kind(k)}
        ledger = self._begin(archive, tenant_id, user_id, actor)
        if ledger.state.status == DONE:
            return ImportReport("already_imported", ledger.state, True, not_written)
        resumed = bool(ledger.state.parts_done)
        self._raise_horizon(archive, tenant_id, user_id)
        run = _Run(self, archive, tenant_id, user_id, actor, progress or _quiet)
        for part in (p for kind in ORDER for p in archive.of_kind(kind)):
            if part.name not in ledger.state.parts_done:
                ledger = run.part(ledger, part)
        return ImportReport("imported", self._finish(ledger, actor).state, resumed, not_written)

    def _begin(self, archive: Archive, tenant_id: str, user_id: str, actor: str) -> Ledger:
        """This archive's ledger for the user: found (a resumption, or a finished import
        whose user still holds memory), or new on a user without memory."""
        found = self._ledgers.load(tenant_id, user_id)
        running = found is not None and found.state.status != DONE
        ours = found is not None and found.state.manifest_sha256 == archive.manifest_sha256
        if found is not None and ours and (running or self._holds_memory(tenant_id, user_id)):
            return found
        if found is not None and running:
            raise Conflict(
                "Another archive's import into this user is not finished.",
                code="IMPORT_BUSY",
                import_id=found.state.import_id,
            )
        if self._holds_memory(tenant_id, user_id):
            raise Conflict(
                "The user already holds memory; an import goes into an empty user only.",
                code="USER_NOT_EMPTY",
            )
        fresh = self._ledgers.fresh(tenant_id, user_id, _described(archive), actor)
        try:
            ledger = self._ledgers.save(
                tenant_id, user_id, fresh, None if found is None else found.etag
            )
        except PreconditionFailed as exc:
            raise Conflict("Another import started first.", code="IMPORT_BUSY") from exc
        self._log("import_started", ledger.state, actor)
        return ledger

    def _holds_memory(self, tenant_id: str, user_id: str) -> bool:
        return bool(self._blobs.list_page(user_prefix(tenant_id, user_id), None, 1).items)

    def _raise_horizon(self, archive: Archive, tenant_id: str, user_id: str) -> None:
        """The source's retention removed the records its oldest ones follow: the
        target's audit horizon covers them, so the imported chains end there as the
        source's did rather than read as broken."""
        missing = archive.findings.missing_prev
        if missing:
            moment = max(change_time(change_id) for change_id in missing)
            self._audit.raise_horizon(tenant_id, user_id, moment)

    def _finish(self, ledger: Ledger, actor: str) -> Ledger:
        """Logged before the ledger says done: a crash between the two logs it again
        on the rerun rather than never."""
        state = replace(ledger.state, status=DONE, completed_at=self._ledgers.now())
        self._log("import_completed", state, actor, conflicts=len(state.conflicts))
        return self.save(ledger, state)

    def _log(self, action: str, state: ImportState, actor: str, **more: Any) -> None:
        self._holds.log(
            state.tenant_id,
            action,
            actor,
            user_id=state.user_id,
            import_id=state.import_id,
            export_id=state.export_id,
            source=state.source,
            written=state.written,
            **more,
        )

    def save(self, ledger: Ledger, state: ImportState) -> Ledger:
        """Another run of the same import saving first stops this one (what it wrote
        is written; the ledger is the other run's to finish, or a rerun's)."""
        try:
            return self._ledgers.save(state.tenant_id, state.user_id, state, ledger.etag)
        except PreconditionFailed as exc:
            raise Conflict(
                "Another run of this import saved its ledger first.", code="IMPORT_BUSY"
            ) from exc


class _Run:
    """One run's walk through the parts: each record to its writer, then the part
    marked done in the ledger."""

    def __init__(
        self,
        importer: Importer,
        archive: Archive,
        tenant_id: str,
        user_id: str,
        actor: str,
        progress: Progress,
    ) -> None:
        self._importer, self._archive = importer, archive
        self._tenant_id, self._user_id, self._actor = tenant_id, user_id, actor
        self._progress, self._done = progress, 0

    def part(self, ledger: Ledger, part: Part) -> Ledger:
        conflicts: list[Json] = []
        written = 0
        for batch in _batches(self._records(part), JOB_BATCH):
            found = self._importer.writes.write(
                part.kind, batch, self._tenant_id, self._user_id, self._actor
            )
            conflicts += found
            written += len(batch) - len(found)
            self._done += len(batch)
            self._progress(self._done, part.name, written)
        state = ledger.state.part_done(part.name, written, conflicts, part.kind)
        return self._importer.save(ledger, state)

    def _records(self, part: Part) -> Iterator[Json]:
        for record in self._archive.records(part):
            yield relocated(part.kind, record, self._tenant_id, self._user_id)


def _batches(records: Iterator[Json], size: int) -> Iterator[list[Json]]:
    batch: list[Json] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _mapped(kind: str, pair: tuple[str, str] | None, named: str) -> str:
    if pair is None:
        return named
    if pair[0] != named:
        raise Forbidden(
            f"The archive names {kind} {named!r}; the import maps {pair[0]!r}.",
            code="IMPORT_NOT_MAPPED",
        )
    return pair[1]


def _described(archive: Archive) -> Json:
    return {
        "export_id": archive.export_id,
        "manifest_sha256": archive.manifest_sha256,
        "source": {"tenant_id": archive.tenant_id, "user_id": archive.user_id},
    }


def _quiet(done: int, part: str, written: int) -> None:
    """No progress shown."""
