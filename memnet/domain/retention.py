"""Retention rules (spec 15, 17; issue 11): how long each kind of a user's data is kept.
Pure: no I/O; :mod:`memnet.services.governance.retention` reads the files and applies the result.

Three sources set a number of days per kind: every loaded profile's ``retention_rules``,
the organisation ceiling and the tenant's ceiling (the retention file). The smallest
number wins. Profiles are not per user: a user's data is shared by every agent serving
them, so the strictest profile applies to everyone's data (docs/retention.md). A kind
no source sets is kept forever. Audit records are never kept less than the audit floor,
which beats every ceiling. Replay records follow ``replays_days`` where a source sets
it and that source's ``snapshots_days`` otherwise (a replay record describes its
snapshot). Documents are never swept (spec 17: only forget removes them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain.errors import ConfigError
from memnet.domain.identifiers import SEGMENT

KINDS = ("snapshots", "events", "audit", "replays")
RULE_KEYS = tuple(f"{kind}_days" for kind in KINDS)

Rules = Mapping[str, int]  # rule key -> days, e.g. {"events_days": 365}


@dataclass(frozen=True)
class Ceilings:
    """The retention file: ``{"organisation": {...}, "tenants": {tenant_id: {...}}}``."""

    organisation: Rules = field(default_factory=dict)
    tenants: Mapping[str, Rules] = field(default_factory=dict)


def parse_ceilings(raw: Any, source: str) -> Ceilings:
    """Check the retention file's content; :class:`ConfigError` names the bad field."""
    if not isinstance(raw, dict):
        raise ConfigError(source, "/", "must be a JSON object")
    unknown = sorted(set(raw) - {"organisation", "tenants"})
    if unknown:
        raise ConfigError(source, f"/{unknown[0]}", "unknown field")
    tenants = raw.get("tenants", {})
    if not isinstance(tenants, dict):
        raise ConfigError(source, "/tenants", "must be an object of tenant ids")
    for tenant_id in tenants:  # a key no route can name would cap no tenant, unnoticed
        if not SEGMENT.fullmatch(tenant_id):
            raise ConfigError(source, f"/tenants/{tenant_id}", "is not a tenant id")
    return Ceilings(
        organisation=parse_rules(raw.get("organisation", {}), source, "/organisation"),
        tenants={
            str(t): parse_rules(rules, source, f"/tenants/{t}") for t, rules in tenants.items()
        },
    )


def parse_rules(raw: Any, source: str, where: str) -> dict[str, int]:
    """Known rule keys only, each an integer number of days >= 0."""
    if not isinstance(raw, dict):
        raise ConfigError(source, where, "must be an object")
    for key, days in raw.items():
        if key not in RULE_KEYS:
            raise ConfigError(source, f"{where}/{key}", f"unknown rule; one of {RULE_KEYS}")
        if isinstance(days, bool) or not isinstance(days, int) or days < 0:
            raise ConfigError(source, f"{where}/{key}", "must be an integer >= 0")
    return dict(raw)


@dataclass(frozen=True)
class RetentionPolicy:
    """Effective days per (tenant, kind); None means kept forever."""

    profiles: tuple[Rules, ...]
    ceilings: Ceilings
    audit_floor_days: int

    @classmethod
    def of(cls, profiles: Iterable[Rules], ceilings: Ceilings, floor: int) -> RetentionPolicy:
        return cls(tuple(profiles), ceilings, floor)

    def days(self, tenant_id: str, kind: str) -> int | None:
        """How many days ``kind`` of the tenant's users is kept, or None: forever."""
        sources = (*self.profiles, self.ceilings.organisation, self._tenant(tenant_id))
        found = [d for d in (_rule(source, kind) for source in sources) if d is not None]
        if not found:
            return None
        if kind == "audit":
            return max(min(found), self.audit_floor_days)
        return min(found)

    def table(self, tenant_id: str) -> dict[str, int | None]:
        """Every kind's effective days for one tenant (reports, docs, tests)."""
        return {kind: self.days(tenant_id, kind) for kind in KINDS}

    def _tenant(self, tenant_id: str) -> Rules:
        return self.ceilings.tenants.get(tenant_id, {})


def _rule(source: Rules, kind: str) -> int | None:
    days = source.get(f"{kind}_days")
    if days is None and kind == "replays":
        days = source.get("snapshots_days")
    return days
