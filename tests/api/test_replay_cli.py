"""``memnet replay SNAPSHOT --dry-run``: what a replay would write now, and
the difference from what it wrote before, writing nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.cli import main
from memnet.cli.replay import parse_snapshot
from memnet.domain.layout import SnapshotRef
from tests.api.test_replay import drain
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, REPO, doc_url, make_settings
from tests.host.test_replay_host import TRANSCRIPT

SNAP = "/v1/tenants/t1/users/u1/snapshots/c1/s1"


@pytest.fixture
def services(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Services]:
    data = tmp_path / "data"
    for name, value in {
        "MEMNET_DATA_DIR": str(data),
        "MEMNET_PROFILES_DIR": str(REPO / "profiles"),
        "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
    }.items():
        monkeypatch.setenv(name, value)
    built = bootstrap.build(make_settings(data))  # the default extractor: rules
    bootstrap.install(built)
    yield built
    bootstrap.install(None)


def dry_run(capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    code = main(["replay", "t1/u1/c1/s1", "--dry-run", "--settings", "/nonexistent", *extra])
    assert code == 0
    return json.loads(capsys.readouterr().out)


def test_a_dry_run_before_the_replay_shows_what_it_would_write_and_writes_nothing(services, capsys):
    api = DirectClient(AGENT_KEY)
    assert api.request("PUT", SNAP, TRANSCRIPT).status == 202
    shown = dry_run(capsys)
    assert shown["extractor"]["name"] == "rules"
    outcomes = sorted(p["outcome"] for p in shown["patches"])
    assert outcomes == ["applied", "redirected"]  # the preference; the fact goes to pending
    assert shown["previous"]["status"] == "queued"
    assert len(shown["diff"]["patches_added"]) == 2
    assert api.request("GET", doc_url()).status == 404  # nothing written
    assert api.request("GET", SNAP + "/replay").data["events"] == []


def test_after_the_replay_the_dry_run_diffs_against_what_it_wrote(services, capsys):
    api = DirectClient(AGENT_KEY)
    api.request("PUT", SNAP, TRANSCRIPT)
    drain(services)
    before = api.request("GET", doc_url()).data
    shown = dry_run(capsys)
    assert shown["previous"]["status"] == "applied"
    assert len(shown["previous"]["changes"]) == 2
    # The rule extractor skips statements the documents already hold: nothing to add now.
    assert shown["patches"] == []
    assert len(shown["diff"]["patches_removed"]) == 2
    assert shown["diff"]["digests_added"] == [] and shown["diff"]["digests_removed"] == []
    assert api.request("GET", doc_url()).data == before


def test_a_replay_without_dry_run_runs_it_here(services, capsys):
    api = DirectClient(AGENT_KEY)
    api.request("PUT", SNAP, TRANSCRIPT)
    assert main(["replay", "t1/u1/c1/s1", "--settings", "/nonexistent"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "applied"


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("t1/u1/c1/s1", SnapshotRef("t1", "u1", "c1", "s1")),
        ("blob://tenants/t1/users/u1/snapshots/c1/s1.json", SnapshotRef("t1", "u1", "c1", "s1")),
        ("t1/u1/c1", None),
        ("t1/../c1/s1", None),
        ("blob://tenants/t1/users/u1/events/e1.json", None),
    ],
)
def test_snapshot_names(text, ref):
    assert parse_snapshot(text) == ref


def test_a_bad_snapshot_name_is_exit_2(capsys):
    assert main(["replay", "nope", "--dry-run"]) == 2
