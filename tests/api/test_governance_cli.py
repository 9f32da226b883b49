"""``memnet sweep|compact|forget|hold``: the operator commands run the same jobs
as the functions, over the configured (here: embedded) backends, with a dry run and a
JSON summary at the end."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.cli import main
from memnet.domain.layout import user_prefix
from memnet.services.governance.holds import HOLD_KINDS
from tests.api.compacting import PROJECT, content, history, notes, project, put
from tests.api.forgetting import index_ids, names, seed
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, REPO, make_settings
from tests.unit.test_command_line import usage

ENV = {
    "MEMNET_FORGET_GRACE_SECONDS": "0",
    "MEMNET_FORGET_QUIET_SECONDS": "0",
    "MEMNET_IDEMPOTENCY_TTL_SECONDS": "0",
    "MEMNET_IDEMPOTENCY_LEASE_SECONDS": "0",
}


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    data = tmp_path / "data"
    for name, value in {
        "MEMNET_DATA_DIR": str(data),
        "MEMNET_PROFILES_DIR": str(REPO / "profiles"),
        "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
        **ENV,
    }.items():
        monkeypatch.setenv(name, value)
    built = bootstrap.build(
        make_settings(
            data,
            forget_grace_seconds=0,
            forget_quiet_seconds=0,
            idempotency_ttl_seconds=0,
            idempotency_lease_seconds=0,
        )
    )
    bootstrap.install(built)
    yield built
    bootstrap.install(None)


def run(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    assert main([*argv, "--settings", "/nonexistent"]) == code
    out = capsys.readouterr().out
    return json.loads(out) if out else None


def test_forget_dry_run_counts_by_kind_and_deletes_nothing(services, capsys):
    seed(DirectClient(AGENT_KEY), services)
    before = names(services)
    shown = run(capsys, "forget", "t1/u1", "--dry-run")
    assert shown["dry_run"] is True
    assert shown["blobs"]["events"] == 4 and shown["blobs"]["documents"] == 1
    assert shown["index_entries"] == 4 and shown["kept_by_hold"] == {}
    assert names(services) == before


def test_forget_runs_the_job_to_the_end_and_prints_the_receipt(services, capsys):
    seed(DirectClient(AGENT_KEY), services)
    seed(DirectClient(AGENT_KEY), services, user="u2")
    receipt = run(capsys, "forget", "t1/u1", "--actor", "privacy-officer")
    assert receipt["requested_by"] == "privacy-officer"
    assert receipt["deleted"]["events"]["count"] == 4
    assert receipt["verification"]["blobs_remaining"] == 0
    assert names(services) == [] and index_ids(services) == []
    assert names(services, user="u2") != []  # another user untouched
    assert "Event 0 of u1" not in json.dumps(receipt)  # no content in the receipt


def test_forget_one_conversation_from_the_command_line(services, capsys):
    seed(DirectClient(AGENT_KEY), services)
    receipt = run(capsys, "forget", "t1/u1", "--conversation", "conv-1")
    assert receipt["conversation_id"] == "conv-1"
    left = names(services)
    assert not [n for n in left if "/snapshots/conv-1/" in n or "/replays/conv-1/" in n]
    assert any("/documents/" in n for n in left)  # the rest of the user stays


def test_holds_are_set_listed_and_cleared_and_forget_keeps_what_they_hold(services, capsys):
    seed(DirectClient(AGENT_KEY), services)
    hold = run(capsys, "hold", "set", "t1/u1", "--reason", "case 114", "--kinds", "audit")
    assert hold["kinds"] == ["audit"] and hold["set_by"] == "memnet-operator"
    assert run(capsys, "hold", "list", "t1")["users"]["u1"]["hold_id"] == hold["hold_id"]
    receipt = run(capsys, "forget", "t1/u1")
    assert receipt["kept"]["audit"]["hold_id"] == hold["hold_id"]
    assert {n.split("/")[4] for n in names(services)} == {"audit", "audit_horizon.json"}
    assert run(capsys, "hold", "clear", "t1/u1")["hold_id"] == hold["hold_id"]
    assert run(capsys, "hold", "list", "t1")["users"] == {}


def test_bad_arguments_are_refused_with_exit_code_2(services, capsys):
    run(capsys, "hold", "set", "t1", "--reason", "x", "--kinds", "everything", code=2)
    run(capsys, "hold", "set", "t1", code=2)
    run(capsys, "forget", "t1", code=2)
    run(capsys, "compact", "t1/u1", code=2)
    run(capsys, "forget", "t1/../u1", code=2)
    run(capsys, "hold", "list", "t1/u 1", code=2)
    cleared = run(capsys, "hold", "clear", "t1/u1", code=1)  # there is none
    assert cleared["error"]["code"] == "HOLD_NOT_FOUND"


def test_sweep_dry_run_lists_and_the_sweep_deletes_expired_idempotency_records(services, capsys):
    seed(DirectClient(AGENT_KEY), services)  # TTL and lease 0: its keys expired at once
    keys = [n for n in names(services) if "/idempotency/" in n]
    assert keys
    shown = run(capsys, "sweep", "--dry-run")
    assert set(keys) <= set(shown["would_delete_names"])
    assert [n for n in names(services) if "/idempotency/" in n] == keys
    summary = run(capsys, "sweep")
    assert summary["pass_complete"] is True
    assert summary["counts"]["idempotency"]["deleted"] == len(keys)
    assert not [n for n in names(services) if "/idempotency/" in n]
    assert any(n.startswith(user_prefix("t1", "u1") + "documents/") for n in names(services))


def test_compact_one_document_and_every_document(services, capsys):
    put(services, PROJECT, project(notes(45)))  # the profile keeps 30 recent notes
    shown = run(capsys, "compact", "t1/u1/projects/apollo.json", "--dry-run")
    assert shown["dry_run"] is True and shown["changed"] is False
    assert sum(op["op"] == "remove" for op in shown["ops"]) == 15  # the plan, not applied
    assert len(content(services, PROJECT)["recent_notes"]) == 45
    status = run(capsys, "compact", "t1/u1/projects/apollo.json")
    assert status["changed"] is True and status["within_targets"] is True
    assert len(content(services, PROJECT)["recent_notes"]) == 30
    assert history(services, PROJECT)[0]["reason"] == "compaction"
    summary = run(capsys, "compact", "--all")
    assert summary["pass_complete"] is True and summary["changed"] == []


def store(services: Services) -> dict[str, str]:
    """Every blob of the store with its ETag (the tenant's hold policy included)."""
    return {n: services.blobs.read(n).etag for n in services.blobs.list_names("tenants/")}


def test_every_governance_command_takes_a_dry_run_that_writes_nothing(services, capsys):
    """The README says sweep, compact, forget and hold all take ``--dry-run``."""
    for command in ("sweep", "compact", "forget", "hold"):
        assert "--dry-run" in usage(capsys, command)
    seed(DirectClient(AGENT_KEY), services)
    run(capsys, "hold", "set", "t1", "--reason", "case 7", "--kinds", "audit")
    before = store(services)
    run(capsys, "sweep", "--dry-run")
    run(capsys, "compact", "t1/u1/user/user_dynamic.json", "--dry-run")
    run(capsys, "compact", "--all", "--dry-run", code=2)  # the scan saves its place: refused
    run(capsys, "forget", "t1/u1", "--dry-run")
    shown = run(capsys, "hold", "set", "t1/u1", "--reason", "case 8", "--dry-run")
    assert shown["dry_run"] is True and shown["current"] is None
    assert shown["would_set"] == {"reason": "case 8", "kinds": list(HOLD_KINDS)}
    shown = run(capsys, "hold", "clear", "t1", "--dry-run")
    assert shown["current"]["reason"] == "case 7" and "would_set" not in shown
    missing = run(capsys, "hold", "clear", "t1/u1", "--dry-run", code=1)  # none to clear
    assert missing["error"]["code"] == "HOLD_NOT_FOUND"
    assert store(services) == before


def test_forget_says_on_stderr_what_it_has_done_and_what_it_waits_for(
    services, capsys, monkeypatch
):
    """Off a terminal (here), a line per step; stdout stays the JSON receipt alone."""
    monkeypatch.setenv("MEMNET_FORGET_GRACE_SECONDS", "2")
    seed(DirectClient(AGENT_KEY), services)
    assert main(["forget", "t1/u1", "--settings", "/nonexistent"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["verification"]["blobs_remaining"] == 0
    lines = err.splitlines()
    assert any(line.startswith("forget: 0 deleted; phase ") for line in lines)
    waiting = [line for line in lines if "grace period (MEMNET_FORGET_GRACE_SECONDS)" in line]
    assert len(waiting) == 1  # a line when the wait begins, not one per second
    assert re.fullmatch(r"forget: \d+ deleted; verifying in [12] s: the 2 s grace .*", waiting[0])
    assert lines[-1].endswith("; done")
