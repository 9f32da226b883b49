"""Fixtures of the contract tier: every adapter of a port passes one suite
(docs/architecture.md, "Ports with two real adapters").

``blob_store`` is parametrized over the embedded file store (in each ETag and durability
mode), the in-memory store and the Azure store against a real Azurite; Azurite starts only
when an Azure case (marked ``azurite``) runs.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet.adapters.azure.blobstore import AzureBlobStore
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.memory.blobstore import MemoryBlobStore
from memnet.ports import BlobStore
from tests.azurite import Azurite  # the ``azurite`` fixture is registered by tests/conftest.py

# The local store in each ETag mode (xattr, sidecar) and durability mode (fsync on, off).
LOCAL_MODES = {
    f"{etags}-{'fsync' if fsync else 'nofsync'}": (etags, fsync)
    for etags in ("xattr", "sidecar")
    for fsync in (True, False)
}


def _local(mode: str, tmp_path: Path) -> FileBlobStore:
    etags, fsync = LOCAL_MODES[mode]
    return FileBlobStore(tmp_path / "data", etags=etags, fsync=fsync)


@pytest.fixture(params=list(LOCAL_MODES))
def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> FileBlobStore:
    return _local(request.param, tmp_path)


@pytest.fixture(params=[*LOCAL_MODES, "memory"])
def embedded_store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    """The stores that promise the file store's own rules too (names, clashes, ETag
    shape): the file store in each mode, and the in-memory store that mirrors it."""
    if request.param == "memory":
        return MemoryBlobStore()
    return _local(request.param, tmp_path)


@pytest.fixture(params=[*LOCAL_MODES, "memory", pytest.param("azure", marks=pytest.mark.azurite)])
def blob_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BlobStore]:
    """Each adapter, empty: a fresh directory or dict, or a fresh Azurite container."""
    if request.param in LOCAL_MODES:
        yield _local(request.param, tmp_path)
        return
    if request.param == "memory":
        yield MemoryBlobStore()
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
