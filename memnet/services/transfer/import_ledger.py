"""An import's ledger (``tenants/{t}/_governance/imports/{u}.json``): which archive is
imported into the user, which of its parts are done, what was written and what a live
write had taken first. Saved under its ETag after each part, so a rerun skips the
parts done and repeats (create-only, identical) the writes of the part it was in."""

from __future__ import annotations

import secrets
from dataclasses import asdict, dataclass, field, replace

from memnet.domain.envelope import Json
from memnet.domain.layout import import_ledger_name
from memnet.domain.timestamps import format_millis
from memnet.ports import Clock
from memnet.services.records import JsonRecords, Stored

RUNNING, DONE = "running", "done"


@dataclass(frozen=True)
class ImportState:
    import_id: str
    export_id: str
    manifest_sha256: str
    source: dict[str, str]  # the tenant and user the archive names
    tenant_id: str
    user_id: str
    requested_by: str
    started_at: str
    updated_at: str
    status: str = RUNNING
    parts_done: tuple[str, ...] = ()
    written: dict[str, int] = field(default_factory=dict)  # records written, by kind
    conflicts: tuple[Json, ...] = ()  # what live writes had taken first
    completed_at: str | None = None

    @classmethod
    def from_json(cls, stored: Json) -> ImportState:
        parts, conflicts = tuple(stored["parts_done"]), tuple(stored["conflicts"])
        return cls(**{**stored, "parts_done": parts, "conflicts": conflicts})

    def as_json(self) -> Json:
        found = asdict(self)
        return {**found, "parts_done": list(self.parts_done), "conflicts": list(self.conflicts)}

    def part_done(self, name: str, written: int, conflicts: list[Json], kind: str) -> ImportState:
        counts = {**self.written, kind: self.written.get(kind, 0) + written}
        return replace(
            self,
            parts_done=(*self.parts_done, name),
            written=counts,
            conflicts=(*self.conflicts, *conflicts),
        )


@dataclass(frozen=True)
class Ledger:
    """The state as read, and the ETag its next save must match (None: not stored)."""

    name: str
    state: ImportState
    etag: str | None


class ImportLedgers:
    def __init__(self, records: JsonRecords, clock: Clock) -> None:
        self._records, self._clock = records, clock

    def load(self, tenant_id: str, user_id: str) -> Ledger | None:
        name = import_ledger_name(tenant_id, user_id)
        found: Stored | None = self._records.read(name)
        if found is None:
            return None
        return Ledger(name, ImportState.from_json(found.value), found.etag)

    def fresh(self, tenant_id: str, user_id: str, archive: Json, actor: str) -> ImportState:
        now = self.now()
        return ImportState(
            import_id=f"imp_{secrets.token_hex(8)}",
            tenant_id=tenant_id,
            user_id=user_id,
            requested_by=actor,
            started_at=now,
            updated_at=now,
            **archive,
        )

    def save(self, tenant_id: str, user_id: str, state: ImportState, etag: str | None) -> Ledger:
        """Under ``etag`` (None: create-only);
        :class:`~memnet.ports.PreconditionFailed` when another import saved first."""
        name = import_ledger_name(tenant_id, user_id)
        state = replace(state, updated_at=self.now())
        return Ledger(name, state, self._records.save(name, state.as_json(), etag))

    def now(self) -> str:
        return format_millis(self._clock.now())
