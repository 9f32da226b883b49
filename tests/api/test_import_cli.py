"""``memnet import DIR``: the operator command over the configured backends (the
embedded default and Azure Blob on Azurite, set by environment settings as
docs/moving.md does), its JSON summary and its exit codes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.cli import main
from tests import archives
from tests.api.importing import documents, folds, searches, seeded
from tests.conftest import REPO, empty_index_queues


@pytest.fixture
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    yield from seeded(request, tmp_path / "source")


@pytest.fixture(params=["local", "azurite"])
def target_env(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    return configure(request, request.param, tmp_path, monkeypatch)


def configure(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """The target deployment, configured as an operator would: by environment settings."""
    settings = {
        "MEMNET_DATA_DIR": str(tmp_path / "target"),
        "MEMNET_PROFILES_DIR": str(REPO / "profiles"),
        "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
        "MEMNET_LOCAL_FSYNC": "false",
    }
    if backend == "azurite":
        server = request.getfixturevalue("azurite_queue")
        empty_index_queues(server.queue_connection_string)
        settings |= {
            "MEMNET_STORAGE": "azure",
            "MEMNET_BLOB": server.blob_connection_string,
            "MEMNET_QUEUE": server.queue_connection_string,
            "MEMNET_BLOB_CONTAINER": f"import-{uuid.uuid4().hex}",
        }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return settings


def memnet(capsys: pytest.CaptureFixture[str], *argv: str, code: int) -> Any:
    assert main([*argv, "--settings", "/nonexistent"]) == code
    captured = capsys.readouterr()
    return json.loads(captured.out) if captured.out else captured.err


def target() -> Any:
    """The target's services, from the same environment settings."""
    return bootstrap.start()


def test_import_prints_its_summary_and_a_rerun_says_already_imported(
    source, target_env, tmp_path, capsys
):
    archive = archives.write_archive(source, "t1", "u1", tmp_path / "archive")
    summary = memnet(capsys, "import", str(archive), code=0)
    assert summary["status"] == "imported" and summary["conflicts"] == []
    assert summary["written"]["events"] == 12 and summary["source"]["user_id"] == "u1"
    assert memnet(capsys, "import", str(archive), code=0)["status"] == "already_imported"
    imported = target()
    assert documents(imported) == documents(source) and folds(imported) == folds(source)
    assert searches(imported) == searches(source)


def test_import_to_another_user(source, target_env, tmp_path, capsys):
    archive = archives.write_archive(source, "t1", "u1", tmp_path / "archive")
    summary = memnet(capsys, "import", str(archive), "--to", "t2/u9", code=0)
    assert (summary["tenant_id"], summary["user_id"]) == ("t2", "u9")
    assert documents(target(), "t2", "u9") == documents(source)


def test_a_refused_import_exits_3_with_the_error(source, target_env, tmp_path, capsys):
    archive = archives.write_archive(source, "t1", "u1", tmp_path / "archive")
    refused = memnet(capsys, "import", str(archive), "--map-tenant", "t7=t8", code=3)
    assert refused["error"]["code"] == "IMPORT_NOT_MAPPED"
    (archive / "audit-000001.jsonl").write_bytes(b"{}\n")
    assert memnet(capsys, "import", str(archive), code=3)["error"]["code"] == "ARCHIVE_TAMPERED"
    assert memnet(capsys, "import", str(tmp_path), code=3)["error"]["code"] == "ARCHIVE_INVALID"


def test_a_malformed_mapping_is_a_usage_error(tmp_path, capsys):
    said = memnet(capsys, "import", str(tmp_path), "--to", "t1", code=2)
    assert "expected two identifiers joined by '/'" in said


def test_a_storage_failure_partway_exits_4_and_a_rerun_resumes(
    source, request, tmp_path, capsys, monkeypatch
):
    configure(request, "local", tmp_path, monkeypatch)
    from memnet.adapters.local.blobstore import FileBlobStore
    from memnet.ports import StorageUnavailable

    archive = archives.write_archive(source, "t1", "u1", tmp_path / "archive")
    original, seen = FileBlobStore.write, []

    def failing(self: Any, name: str, data: bytes, condition: Any) -> str:
        if "/events/" in name:
            seen.append(name)
            if len(seen) == 3:
                raise StorageUnavailable("the disk went away")
        return str(original(self, name, data, condition))

    monkeypatch.setattr(FileBlobStore, "write", failing)
    stopped = memnet(capsys, "import", str(archive), code=4)
    assert stopped["error"]["code"] == "STORAGE_ERROR"
    summary = memnet(capsys, "import", str(archive), code=0)
    assert summary["status"] == "imported" and summary["resumed"] is True
    assert searches(target()) == searches(source)
