"""``memnet export`` and ``memnet verify-export`` (issue 27; docs/export.md): the archive
directory written with progress, verified, and audited; a tampered part fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memnet.bootstrap import Services
from memnet.cli import main
from memnet.domain.layout import governance_prefix
from tests.api.forgetting import seed
from tests.api.test_governance_cli import run
from tests.api.test_governance_cli import services as services
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY


def verified(capsys: pytest.CaptureFixture[str], archive: Path, code: int = 0) -> Any:
    assert main(["verify-export", str(archive)]) == code
    return json.loads(capsys.readouterr().out)


def test_export_writes_a_complete_archive_that_verifies(
    services: Services, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    seed(DirectClient(AGENT_KEY), services)
    out = tmp_path / "archive"
    summary = run(capsys, "export", "--tenant", "t1", "--user", "u1", "--out", str(out))
    assert summary["verified"] is True and summary["complete"] is True
    assert summary["problems"] == [] and summary["format"] == "memnet-export/1"
    kinds = {p["kind"]: p["count"] for p in summary["parts"]}
    assert kinds["events"] == 4 and kinds["documents"] == 1 and kinds["snapshots"] == 1
    files = sorted(p.name for p in out.iterdir())
    assert files == sorted(["manifest.json", "memory.md", *(p["name"] for p in summary["parts"])])
    assert "Event 3 of u1" in (out / "memory.md").read_text()
    logged = [
        json.loads(services.blobs.read(name).data)["action"]
        for name in services.blobs.list_names(governance_prefix("t1") + "log/")
    ]
    assert {"export_requested", "export_completed"} <= set(logged)
    assert verified(capsys, out) == {
        "archive": str(out),
        "verified": True,
        "problems": [],
    }


def test_verify_export_names_a_tampered_part(
    services: Services, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    seed(DirectClient(AGENT_KEY), services)
    out = tmp_path / "archive"
    run(capsys, "export", "--tenant", "t1", "--user", "u1", "--out", str(out))
    part = out / "events-000001.jsonl"
    part.write_bytes(part.read_bytes().replace(b"Event 1", b"Event 7"))
    found = verified(capsys, out, code=1)
    assert found["problems"] == ["events-000001.jsonl: sha256 does not match the manifest"]


def test_export_refuses_a_directory_that_holds_files(
    services: Services, capsys: pytest.CaptureFixture[str], tmp_path: Path
):
    (tmp_path / "kept.txt").write_text("mine")
    assert (
        run(capsys, "export", "--tenant", "t1", "--user", "u1", "--out", str(tmp_path), code=2)
        is None
    )
    assert [p.name for p in tmp_path.iterdir()] == ["kept.txt"]
