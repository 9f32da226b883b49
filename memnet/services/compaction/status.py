"""What the compaction job answers (:mod:`memnet.services.compaction.service`): one
document's :class:`Status` with what each step did (:class:`Reshaped`,
:class:`Refreshed`), and a timer run's :class:`TimerReport`. Frozen values; the
:meth:`as_json` of each is the one form the command line and the worker's log show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memnet.domain.compaction import Removed
from memnet.domain.envelope import Json
from memnet.domain.freshness import Downgrade
from memnet.services.compaction.digest import JOB
from memnet.services.governance.walker import WalkReport


@dataclass(frozen=True)
class Reshaped:
    """Item shapes (step 0): the paths rewritten to their one shape (a dry run: to be,
    with the ``ops``); ``yielded`` when it lost every race to live writers."""

    changed: bool = False
    paths: tuple[str, ...] = ()
    ops: tuple[Json, ...] = ()
    yielded: bool = False

    def as_json(self) -> Json:
        found: Json = {"changed": self.changed, "paths": list(self.paths)}
        return {**found, **_some(ops=list(self.ops), yielded=self.yielded)}


@dataclass(frozen=True)
class Refreshed:
    """Freshness (step 1): the stale facts found (``planned``; None: none, or no rules),
    whether they became proposals (``change_id``: that change), and on a dry run the ops
    that would."""

    changed: bool = False
    change_id: str | None = None
    planned: Downgrade | None = None
    dry_run: bool = False
    yielded: bool = False

    def as_json(self) -> Json:
        found: Json = {"changed": self.changed}
        if self.changed:
            found["change_id"] = self.change_id
        found["downgraded"] = [] if self.planned is None else list(self.planned.paths)
        if self.planned is not None:
            found["why"] = dict(self.planned.why)
            found.update(_some(ops=list(self.planned.ops) if self.dry_run else []))
        return {**found, **_some(yielded=self.yielded)}


@dataclass(frozen=True)
class Status:
    """One document's compaction: whether it changed (and the change and the digest
    event), whether it is within its targets (else ``why_not``). ``removed`` and
    ``base_change_id`` once a plan was made; ``dry_run`` and ``ops`` when the plan was
    not written; ``reshaped`` and ``freshness`` once the steps ran; ``name``, the
    document's blob, in a scan."""

    name: str | None = None
    changed: bool = False
    change_id: str | None = None
    reason_codes: tuple[str, ...] = ()
    within_targets: bool = True
    why_not: tuple[str, ...] = ()
    event_id: str | None = None
    removed: tuple[Removed, ...] | None = None
    base_change_id: str | None = None
    dry_run: bool | None = None
    ops: tuple[Json, ...] = ()
    yielded: bool = False
    reshaped: Reshaped | None = None
    freshness: Refreshed | None = None

    def as_json(self) -> Json:
        found: Json = {} if self.name is None else {"name": self.name}
        found.update(
            changed=self.changed,
            change_id=self.change_id,
            reason_codes=list(self.reason_codes),
            within_targets=self.within_targets,
            why_not=list(self.why_not),
            event_id=self.event_id,
        )
        if self.removed is not None:
            found["removed"] = [{"path": r.path, "reason": r.reason} for r in self.removed]
            found["base_change_id"] = self.base_change_id
        if self.dry_run is not None:
            found.update(dry_run=self.dry_run, ops=list(self.ops))
        found.update(_some(yielded=self.yielded))
        if self.reshaped is not None and self.freshness is not None:
            found.update(reshaped=self.reshaped.as_json(), freshness=self.freshness.as_json())
        return found


def refused(why: str, **steps: Any) -> Status:
    """A document not compacted, and why."""
    return Status(within_targets=False, why_not=(why,), **steps)


@dataclass(frozen=True)
class TimerReport:
    """One timer run: the walk's report and the documents it changed (blob names)."""

    walk: WalkReport
    changed: tuple[str, ...]

    def as_json(self) -> Json:
        return {"job": JOB, **self.walk.as_json(), "changed": list(self.changed)}


def _some(**values: Any) -> Json:
    """The values that say something (an empty list or False goes unsaid)."""
    return {k: v for k, v in values.items() if v}
