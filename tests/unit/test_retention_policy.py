"""Retention rules (memnet.domain.retention): the stricter rule wins, the audit floor
beats ceilings, unset kinds are kept forever, and a bad retention file stops startup."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memnet.domain.errors import ConfigError
from memnet.domain.retention import Ceilings, RetentionPolicy, parse_ceilings
from memnet.ports import BlobInfo
from memnet.services.governance.retention import classify, load_ceilings, retention_policy
from memnet.services.profiles.registry import load_registry
from tests.conftest import REPO

CEILINGS = parse_ceilings(
    {
        "organisation": {"events_days": 200, "audit_days": 100},
        "tenants": {"strict": {"snapshots_days": 7, "events_days": 30}},
    },
    "test",
)


def policy(*profiles: dict[str, int], ceilings: Ceilings = CEILINGS) -> RetentionPolicy:
    return RetentionPolicy.of(profiles, ceilings, 365)


def test_the_smallest_of_profiles_organisation_and_tenant_wins() -> None:
    rules = policy({"events_days": 365, "snapshots_days": 60}, {"events_days": 300})
    assert rules.days("t1", "events") == 200  # organisation ceiling under both profiles
    assert rules.days("strict", "events") == 30  # the tenant ceiling is stricter still
    assert rules.days("t1", "snapshots") == 60
    assert rules.days("strict", "snapshots") == 7


def test_the_strictest_profile_applies_to_every_users_data() -> None:
    rules = policy({"snapshots_days": 60}, {"snapshots_days": 10}, ceilings=Ceilings())
    assert rules.days("any", "snapshots") == 10


def test_audit_is_never_kept_less_than_the_floor_even_under_a_stricter_ceiling() -> None:
    assert policy({"audit_days": 30}).days("t1", "audit") == 365
    assert policy({"audit_days": 900}, ceilings=Ceilings()).days("t1", "audit") == 900


def test_a_kind_nobody_sets_is_kept_forever() -> None:
    rules = policy({"events_days": 10}, ceilings=Ceilings())
    assert rules.table("t1") == {
        "snapshots": None,
        "events": 10,
        "audit": None,
        "replays": None,
    }


def test_replay_records_follow_the_snapshot_rule_unless_set() -> None:
    assert policy({"snapshots_days": 60}, ceilings=Ceilings()).days("t", "replays") == 60
    rules = policy({"snapshots_days": 60, "replays_days": 5}, ceilings=Ceilings())
    assert rules.days("t", "replays") == 5
    assert policy({"replays_days": 90}).days("strict", "replays") == 7  # tenant snapshots


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ([], "/"),
        ({"organization": {}}, "/organization"),
        ({"organisation": {"events_days": -1}}, "/organisation/events_days"),
        ({"organisation": {"events_days": 1.5}}, "/organisation/events_days"),
        ({"organisation": {"events_days": True}}, "/organisation/events_days"),
        ({"organisation": {"documents_days": 3}}, "/organisation/documents_days"),
        ({"tenants": {"t1": {"audit": 3}}}, "/tenants/t1/audit"),
        ({"tenants": []}, "/tenants"),
        ({"tenants": {"acme ": {"events_days": 3}}}, "/tenants/acme "),  # no route names it
        ({"tenants": {"*": {"events_days": 3}}}, "/tenants/*"),
    ],
)
def test_a_bad_retention_file_names_the_field(raw: object, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_ceilings(raw, "retention.json")
    assert caught.value.field == field


def test_an_unreadable_retention_file_stops_startup(tmp_path: Path) -> None:
    path = tmp_path / "retention.json"
    path.write_text("{not json")
    with pytest.raises(ConfigError):
        load_ceilings(path)
    path.write_text(json.dumps({"organisation": {"snapshots_days": 3}}))
    assert load_ceilings(path).organisation == {"snapshots_days": 3}
    assert load_ceilings(None) == Ceilings()


def test_the_shipped_profile_rules_are_loaded() -> None:
    rules = retention_policy(load_registry(REPO / "profiles"), None, 365)
    assert rules.table("t1") == {"snapshots": 60, "events": 365, "audit": 365, "replays": 60}


def test_the_profile_meta_schema_refuses_unknown_retention_rules(tmp_path: Path) -> None:
    profile = json.loads((REPO / "profiles" / "project-copilot-v1.json").read_text())
    profile["retention_rules"] = {"documents_days": 3}
    (tmp_path / "schemas").symlink_to(REPO / "profiles" / "schemas")
    (tmp_path / "project-copilot-v1.json").write_text(json.dumps(profile))
    with pytest.raises(ConfigError) as caught:
        load_registry(tmp_path)
    assert caught.value.field == "/retention_rules"


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("tenants/t/users/u/events/evt_1.json", "events"),
        ("tenants/t/users/u/snapshots/c/s.json", "snapshots"),
        ("tenants/t/users/u/replays/c/s.json", "replays"),
        ("tenants/t/users/u/idempotency/ab.json", "idempotency"),
        (f"tenants/t/users/u/audit/chg_{'0' * 28}.json", "audit"),
        ("tenants/t/users/u/audit/not-a-change-id.json", None),
        ("tenants/t/users/u/documents/user/user_dynamic.json", None),
        ("tenants/t/users/u/audit_horizon.json", None),
        ("tenants/t/_policy.json", None),
        ("tenants/t/_governance/receipts/r.json", None),
        ("tenants/t/users/u/events/nested/evt.json", None),
        ("tenants/t/users/u/events/evt_1.txt", None),
        ("tenants/t/users/u/other/x.json", None),
    ],
)
def test_the_sweep_touches_only_the_kinds_it_governs(name: str, kind: str | None) -> None:
    found = classify(BlobInfo(name, datetime.now(UTC)))
    assert (found.kind if found else None) == kind
