"""The recipe of docs/operations.md, "Azure Storage on Azurite", run as written: the
host started with the documented settings serves a PATCH and a GET from Azurite's blob
store (the session's Azurite listens on ports of its own, so its connection string takes
the place of ``UseDevelopmentStorage=true``, which names the default ports)."""

from __future__ import annotations

import re
import shlex
import uuid
from pathlib import Path

import pytest

from tests.azurite import Azurite
from tests.conftest import REPO
from tests.served import ServedHost, request

DOC = "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json"


def documented_settings() -> dict[str, str]:
    """The ``NAME=value`` assignments before ``scripts/serve`` in the recipe."""
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    section = text.split("### Azure Storage on Azurite\n", 1)[1]
    line = re.search(r"^(MEMNET_STORAGE=azure .*) scripts/serve$", section, re.MULTILINE)
    assert line, "the recipe's serve line is gone"
    return dict(word.split("=", 1) for word in shlex.split(line.group(1)))


@pytest.mark.slow
def test_the_documented_azurite_recipe_serves_from_azurite(
    azurite_queue: Azurite, tmp_path: Path, subprocess_log: Path
) -> None:
    settings = documented_settings()
    assert settings == {
        "MEMNET_STORAGE": "azure",
        "MEMNET_BLOB": "UseDevelopmentStorage=true",
        "MEMNET_QUEUE": "UseDevelopmentStorage=true",
    }
    here = azurite_queue.queue_connection_string  # blob and queue endpoints of this Azurite
    env = {k: v.replace("UseDevelopmentStorage=true", here) for k, v in settings.items()}
    container = f"recipe-{uuid.uuid4().hex[:12]}"
    env["MEMNET_BLOB_CONTAINER"] = container
    # scripts/serve reads local.settings.json, a copy of the example
    example = str(REPO / "local.settings.json.example")
    args = ["--settings", example, "--data-dir", str(tmp_path / "data")]
    host = ServedHost(subprocess_log, args, env)
    host.start()
    try:
        ops = [
            {"op": "add", "path": "/content/preferences/-", "value": {"text": "Prefers Azurite."}}
        ]
        headers = {"If-None-Match": "*", "Idempotency-Key": "recipe"}
        status, etag, body = request(host.port, "PATCH", DOC, {"ops": ops}, **headers)
        assert status == 201, body
        status, read_etag, body = request(host.port, "GET", DOC)
        assert status == 200 and read_etag == etag
        assert body["document"]["content"]["preferences"] == [{"text": "Prefers Azurite."}]
    finally:
        host.stop()
    from azure.storage.blob import ContainerClient

    blobs = ContainerClient.from_connection_string(here, container).list_blob_names()
    assert "tenants/t1/users/u1/documents/user/user_dynamic.json" in set(blobs)
    assert not (tmp_path / "data" / container).exists()  # not the embedded store
