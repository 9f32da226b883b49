"""Retention sweeps (spec 15, 17; issue 11 item 3): delete what the retention rules say
has expired, a page at a time, resumably, and never what a legal hold keeps.

One sweep is a run of the ``retention`` :class:`~memnet.services.governance.walker.Walker` over
``tenants/``. Each blob is classified by its name (``tenants/{t}/users/{u}/<kind>/...``);
governance blobs and anything unknown are left alone, and documents too unless they are
short-lived and past their ``expires_at`` (:mod:`memnet.services.documents.expiry`). A
blob is due when its
age (the service clock minus its ``last_modified``) reaches its kind's rule
(:class:`~memnet.domain.retention.RetentionPolicy`); idempotency records are due after
the idempotency TTL plus the lease, whatever the profiles say. Deletion order, so a
crash between any two steps leaves what the next pass finishes:

- events: the search index entries first, then the blobs (an index entry never points
  at a deleted blob);
- audit records: the user's audit horizon is raised past them first, then they are
  deleted (a document's history then ends at the horizon instead of breaking), then
  the user's version cache, which copies what they held, is dropped
  (:meth:`~memnet.services.documents.versions.Versions.drop_user`; a crash before it
  leaves a cache no read uses past the horizon, dropped by the next deletion);
- idempotency records: read again and deleted under their ETag only if still expired
  (a key reused since the listing keeps its fresh record);
- replay records: kept while their snapshot exists (they make its replay happen once).

Deleting what is already gone is fine: another instance or an earlier run did it.
"""

from __future__ import annotations

import contextlib
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from memnet.domain.audit_records import change_time, is_change_id
from memnet.domain.errors import ConfigError
from memnet.domain.layout import SnapshotRef
from memnet.domain.retention import KINDS, Ceilings, RetentionPolicy, parse_ceilings
from memnet.domain.timestamps import parse_timestamp
from memnet.ports import (
    BlobInfo,
    BlobNotFound,
    BlobStore,
    Clock,
    Condition,
    PreconditionFailed,
    SearchIndex,
)
from memnet.services.documents.audit import AuditLog
from memnet.services.documents.expiry import DocumentExpiry, document_ref
from memnet.services.documents.versions import Versions
from memnet.services.forget.tombstones import Tombstones
from memnet.services.governance.holds import HoldPolicy, LegalHolds
from memnet.services.governance.walker import Walker, WalkReport
from memnet.services.profiles.registry import ProfileRegistry

JOB = "retention"
SWEPT_KINDS = (*KINDS, "idempotency", "documents")
LISTED_MAX = 1000  # names a dry run lists; the counts go on


@dataclass(frozen=True)
class Item:
    """A swept blob, classified: whose it is and which kind."""

    info: BlobInfo
    tenant_id: str
    user_id: str
    kind: str

    @property
    def leaf(self) -> str:
        return self.info.name.rsplit("/", 1)[1].removesuffix(".json")


@dataclass
class SweepReport:
    dry_run: bool
    walk: WalkReport = field(default_factory=WalkReport)
    counts: dict[str, dict[str, int]] = field(
        default_factory=lambda: {k: defaultdict(int) for k in SWEPT_KINDS}
    )
    would_delete: list[str] = field(default_factory=list)

    def count(self, kind: str, outcome: str, n: int = 1) -> None:
        self.counts[kind][outcome] += n

    def as_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"job": JOB, "dry_run": self.dry_run, **self.walk.as_json()}
        body["counts"] = {k: dict(v) for k, v in self.counts.items() if v}
        if self.dry_run:
            body["would_delete_names"] = self.would_delete
        return body


@dataclass
class _Looks:
    """What a page's items share, read once per page: each tenant's holds, and whether
    a forget of each user runs."""

    policies: dict[str, HoldPolicy] = field(default_factory=dict)
    forgetting: dict[tuple[str, str], bool] = field(default_factory=dict)


def classify(info: BlobInfo) -> Item | None:
    """The user data a name addresses, if retention governs it; None for documents,
    governance blobs (holds, jobs, receipts, the audit horizon) and unknown names."""
    parts = info.name.split("/")
    if len(parts) < 6 or parts[0] != "tenants" or parts[2] != "users":
        return None
    if _DEPTH.get(parts[4]) != len(parts) or not parts[-1].endswith(".json"):
        return None
    item = Item(info, parts[1], parts[3], parts[4])
    if item.kind == "audit" and not is_change_id(item.leaf):
        return None  # not a record the service wrote: its age cannot be trusted
    return item


_DEPTH = {"snapshots": 7, "replays": 7, "events": 6, "audit": 6, "idempotency": 6}


class RetentionService:
    def __init__(
        self,
        *,
        blobs: BlobStore,
        clock: Clock,
        index: SearchIndex,
        audit: AuditLog,
        policy: RetentionPolicy,
        idempotency: tuple[timedelta, timedelta],
        page_size: int,
        max_seconds: float,
        tombstones: Tombstones | None = None,
        expiry: DocumentExpiry | None = None,
    ) -> None:
        self._blobs, self._clock, self._index, self._audit = blobs, clock, index, audit
        self._expiry = expiry  # None: documents are left alone
        self._policy, (self._ttl, self._lease) = policy, idempotency
        self._holds = LegalHolds(blobs, clock)
        self._page_size, self._max_seconds = page_size, max_seconds
        self._tombstones = tombstones
        self._versions = Versions(blobs, audit)
        self.walker = Walker(blobs, clock, JOB, "tenants/", page_size)

    @property
    def policy(self) -> RetentionPolicy:
        return self._policy

    def sweep(
        self, dry_run: bool = False, max_seconds: float | None = None, limit: int | None = None
    ) -> SweepReport:
        """One bounded run of the sweep (resuming the current pass); ``dry_run`` walks
        from the start, up to ``limit`` blobs, deletes nothing and lists what it would."""
        report = SweepReport(dry_run)
        seconds = self._max_seconds if max_seconds is None else max_seconds
        report.walk = self.walker.run(
            lambda items: self._page(items, report), seconds, dry_run, limit
        )
        return report

    def _page(self, items: list[BlobInfo], report: SweepReport) -> None:
        now = self._clock.now()
        due = self._due(items, now, report)
        if report.dry_run:
            for item in due:
                report.count(item.kind, "would_delete")
                if len(report.would_delete) < LISTED_MAX:
                    report.would_delete.append(item.info.name)
            self._expire_documents(items, now, report)
            return
        by_kind: dict[str, list[Item]] = defaultdict(list)
        for item in due:
            by_kind[item.kind].append(item)
        self._delete_events(by_kind["events"], report)
        self._delete_audit(by_kind["audit"], now, report)
        self._delete_idempotency(by_kind["idempotency"], now, report)
        for item in by_kind["snapshots"] + by_kind["replays"]:
            self._delete(item, report)
        self._expire_documents(items, now, report)

    def _expire_documents(self, items: list[BlobInfo], now: datetime, report: SweepReport) -> None:
        """Short-lived documents past their ``expires_at``
        (:mod:`memnet.services.documents.expiry`),
        unless a hold keeps the user's documents or a forget is emptying the user."""
        if self._expiry is None:
            return
        looks = _Looks()
        for info in items:
            ref = document_ref(info.name)
            stored = None if ref is None else self._expiry.due(info, now)
            if ref is None or stored is None:
                continue
            kept = self._kept_because(Item(info, ref.tenant_id, ref.user_id, "documents"), looks)
            if kept is not None:
                report.count("documents", kept)
            elif report.dry_run:
                report.count("documents", "would_delete")
                if len(report.would_delete) < LISTED_MAX:
                    report.would_delete.append(info.name)
            elif self._expiry.expire(ref, stored, JOB):
                report.count("documents", "deleted")

    def _due(self, items: list[BlobInfo], now: datetime, report: SweepReport) -> list[Item]:
        """The page's expired items; held ones are counted as kept. Holds are read once
        per tenant per page."""
        looks, due = _Looks(), list[Item]()
        for item in filter(None, map(classify, items)):
            cutoff = self._cutoff(item, now)
            if cutoff is None or item.info.last_modified > cutoff:
                continue
            kept = self._kept_because(item, looks)
            if kept is None:
                due.append(item)
            else:
                report.count(item.kind, kept)
        return due

    def _kept_because(self, item: Item, looks: _Looks) -> str | None:
        """Why an expired item stays, or None."""
        if item.kind == "idempotency":
            return None  # never held
        if item.tenant_id not in looks.policies:
            looks.policies[item.tenant_id] = self._holds.policy(item.tenant_id)
        if item.kind in looks.policies[item.tenant_id].held(item.user_id):
            return "kept_by_hold"
        if self._forgetting(item, looks):
            return "left_to_forget"  # its job deletes it; the sweep must not race it
        if item.kind == "replays" and self._snapshot_exists(item):
            return "kept_with_snapshot"
        return None

    def _forgetting(self, item: Item, looks: _Looks) -> bool:
        """Whether a forget of the item's user runs (read once per user per page): the
        sweep then leaves the user alone, so that raising an audit horizon cannot
        recreate a blob under a prefix being emptied."""
        user = (item.tenant_id, item.user_id)
        if user not in looks.forgetting:
            tombstones = self._tombstones
            looks.forgetting[user] = tombstones is not None and tombstones.running(*user)
        return looks.forgetting[user]

    def _cutoff(self, item: Item, now: datetime) -> datetime | None:
        """Blobs last modified at or before this are due; None: kept forever."""
        if item.kind == "idempotency":
            return now - self._ttl - self._lease
        days = self._policy.days(item.tenant_id, item.kind)
        return None if days is None else now - timedelta(days=days)

    def _delete_events(self, items: list[Item], report: SweepReport) -> None:
        for (tenant_id, user_id), group in _by_user(items).items():
            self._index.delete(tenant_id, user_id, [item.leaf for item in group])
            for item in group:
                self._delete(item, report)

    def _delete_audit(self, items: list[Item], now: datetime, report: SweepReport) -> None:
        for (tenant_id, user_id), group in _by_user(items).items():
            cutoff = self._cutoff(group[0], now)
            assert cutoff is not None  # only due items get here
            minted = max(change_time(item.leaf) for item in group)
            self._audit.raise_horizon(tenant_id, user_id, max(cutoff, minted))
            for item in group:
                self._delete(item, report)
            self._versions.drop_user(tenant_id, user_id)

    def _delete_idempotency(self, items: list[Item], now: datetime, report: SweepReport) -> None:
        for item in items:
            try:
                blob = self._blobs.read(item.info.name)
                expires = parse_timestamp(json.loads(blob.data)["expires_at"], "expires_at")
            except BlobNotFound:
                continue
            except (ValueError, KeyError, TypeError):
                expires = None  # unreadable: the listing's age decides
            if expires is not None and expires + self._lease > now:
                continue  # reused since the listing: its fresh record stays
            self._delete(item, report, Condition.match(blob.etag))

    def _snapshot_exists(self, item: Item) -> bool:
        """A replay record outlives its snapshot: it is what makes the snapshot's replay
        happen once (a blob trigger may fire again for an existing snapshot), so it is
        kept while the snapshot exists, and goes in a later pass."""
        conversation_id = item.info.name.split("/")[5]
        snapshot = SnapshotRef(item.tenant_id, item.user_id, conversation_id, item.leaf)
        listed = self._blobs.list_page(snapshot.blob_name, None, 1).items
        return bool(listed) and listed[0].name == snapshot.blob_name

    def _delete(self, item: Item, report: SweepReport, condition: Condition = Condition()) -> None:
        with contextlib.suppress(BlobNotFound, PreconditionFailed):
            self._blobs.delete(item.info.name, condition)
            report.count(item.kind, "deleted")


def _by_user(items: list[Item]) -> dict[tuple[str, str], list[Item]]:
    grouped: dict[tuple[str, str], list[Item]] = defaultdict(list)
    for item in items:
        grouped[(item.tenant_id, item.user_id)].append(item)
    return grouped


def load_ceilings(path: Path | None) -> Ceilings:
    """The retention file (``MEMNET_RETENTION_FILE``), checked; no file, no ceilings."""
    if path is None:
        return Ceilings()
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(str(path), "MEMNET_RETENTION_FILE", f"not readable JSON: {exc}") from exc
    return parse_ceilings(raw, str(path))


def retention_policy(
    registry: ProfileRegistry, retention_file: Path | None, audit_floor_days: int
) -> RetentionPolicy:
    """Every loaded profile's ``retention_rules`` with the configured ceilings and floor."""
    profiles = [registry.get(p) for p in registry.profile_ids()]
    rules = [dict(p.raw.get("retention_rules", {})) for p in profiles if p is not None]
    return RetentionPolicy.of(rules, load_ceilings(retention_file), audit_floor_days)
