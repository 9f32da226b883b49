"""Exporting through the client: queue the job, wait for it, download the archive and
check each part against the manifest."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from memnet_client import MemnetClient, NotFound

from memnet.bootstrap import Services
from tests.api.test_export import drain_exports


def test_an_export_downloads_and_verifies(admin: MemnetClient, services: Services, tmp_path: Path):
    admin.write_event("Prefers tea in the afternoon", source_type="chat")
    job = admin.request_export()
    assert job["status"] == "queued"
    drain_exports(services)
    manifest = admin.download_export(job["export_id"], tmp_path / "archive")
    assert manifest["complete"] is True
    assert {p["kind"] for p in manifest["parts"]} == {"events"}
    events = (tmp_path / "archive" / "events-000001.jsonl").read_text().splitlines()
    assert json.loads(events[0])["digest"] == "Prefers tea in the afternoon"
    assert "Prefers tea" in (tmp_path / "archive" / "memory.md").read_text()
    admin.delete_export(job["export_id"])
    with pytest.raises(NotFound):
        admin.get_export(job["export_id"])
