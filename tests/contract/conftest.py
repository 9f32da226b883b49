"""Fixtures of the contract tier: every adapter of a port passes one suite (CONVENTIONS.md 3).

``blob_store`` is parametrized over the embedded file store and the Azure store against a
real Azurite; Azurite starts only when an Azure case (marked ``azurite``) runs.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet.adapters.azure.blobstore import AzureBlobStore
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.ports import BlobStore
from tests.azurite import Azurite  # the ``azurite`` fixture is registered by tests/conftest.py


@pytest.fixture(params=["xattr", "sidecar"])
def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> FileBlobStore:
    return FileBlobStore(tmp_path / "data", etags=request.param)


@pytest.fixture(params=["local", pytest.param("azure", marks=pytest.mark.azurite)])
def blob_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    """Each adapter, empty: a fresh directory, or a fresh Azurite container."""
    if request.param == "local":
        yield FileBlobStore(tmp_path / "data")
        return
    server: Azurite = request.getfixturevalue("azurite")
    container = f"contract-{uuid.uuid4().hex}"
    store = AzureBlobStore.from_connection_string(server.blob_connection_string, container)
    store.ensure_container()
    yield store
    _delete_container(server, container)


def _delete_container(server: Azurite, container: str) -> None:
    from azure.storage.blob import ContainerClient

    client = ContainerClient.from_connection_string(server.blob_connection_string, container)
    with contextlib.suppress(Exception):  # cleanup only; the server is in memory anyway
        client.delete_container()
