"""Bounded reads (``BlobStore.read`` with ``max_bytes``): every store returns a blob of
at most the bound and refuses a larger one with :class:`BlobTooLarge`, having read no
more than the bound of it. A blob written straight to storage (the snapshot trigger's
path) can be any size; the reader, not the writer, decides what it costs."""

from __future__ import annotations

import os
import tracemalloc
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.storage.blob import ContainerClient

from memnet.adapters.azure.blobstore import AzureBlobStore
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.etags import TooLarge, read_content
from memnet.ports import BlobNotFound, BlobStore, BlobTooLarge, Condition
from tests.azurite import Azurite

BOUND = 1000
NAME = "tenants/t1/users/u1/snapshots/c1/s1.json"


def put(store: BlobStore, data: bytes) -> str:
    return store.write(NAME, data, Condition.create_only())


@pytest.mark.parametrize("size", [0, 1, BOUND - 1, BOUND])
def test_a_blob_of_at_most_the_bound_is_read_whole(blob_store: BlobStore, size: int) -> None:
    data = os.urandom(size)
    etag = put(blob_store, data)
    blob = blob_store.read(NAME, max_bytes=BOUND)
    assert (blob.name, blob.data, blob.etag) == (NAME, data, etag)


@pytest.mark.parametrize("size", [BOUND + 1, 5 * BOUND, 300_000])
def test_a_larger_blob_is_refused_with_its_size(blob_store: BlobStore, size: int) -> None:
    put(blob_store, os.urandom(size))
    with pytest.raises(BlobTooLarge) as refused:
        blob_store.read(NAME, max_bytes=BOUND)
    assert (refused.value.name, refused.value.size, refused.value.max_bytes) == (NAME, size, BOUND)
    assert len(blob_store.read(NAME).data) == size  # unbounded reads are unchanged


def test_a_bound_of_zero_reads_only_an_empty_blob(blob_store: BlobStore) -> None:
    etag = put(blob_store, b"")
    assert blob_store.read(NAME, max_bytes=0).etag == etag
    blob_store.write(NAME, b"x", Condition.match(etag))
    with pytest.raises(BlobTooLarge):
        blob_store.read(NAME, max_bytes=0)


def test_a_bounded_read_of_a_missing_blob_raises_not_found(blob_store: BlobStore) -> None:
    with pytest.raises(BlobNotFound):
        blob_store.read(NAME, max_bytes=BOUND)


def test_a_negative_bound_is_a_value_error(blob_store: BlobStore) -> None:
    put(blob_store, b"x")
    with pytest.raises(ValueError, match="max_bytes"):
        blob_store.read(NAME, max_bytes=-1)


# --- what each store reads of a blob it refuses --------------------------------------------


def test_the_file_store_refuses_a_huge_file_without_reading_it(
    local_store: FileBlobStore,
) -> None:
    """A sparse 256 MiB file placed by hand (as a writer straight to storage would): the
    size comes from ``fstat`` on the open file, and no byte of it is read."""
    put(local_store, b"{}")
    path = Path(local_store._content) / NAME
    with path.open("r+b") as file:
        file.truncate(256 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(BlobTooLarge) as refused:
            local_store.read(NAME, max_bytes=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.size == 256 << 20
    assert peak < 64 << 10  # a read of the bound alone would take 1 MiB


def test_a_file_with_no_size_to_check_is_read_no_further_than_the_bound() -> None:
    """A file that grows while it is read, or has no size (a pipe here): the read stops
    one byte past the bound, and what is left stays unread."""
    reader, writer = os.pipe()
    try:
        os.write(writer, os.urandom(5 * BOUND))
        with pytest.raises(TooLarge) as refused:
            read_content(reader, BOUND)
        assert refused.value.size == BOUND + 1
        assert len(os.read(reader, 10 * BOUND)) == 5 * BOUND - (BOUND + 1)
    finally:
        os.close(reader)
        os.close(writer)


@pytest.fixture
def counted(azurite: Azurite) -> Iterator[tuple[AzureBlobStore, list[int]]]:
    """An Azure store on Azurite that records the body length of every response."""
    lengths: list[int] = []
    container = f"bounds-{uuid.uuid4().hex}"

    def record(response: Any) -> None:
        lengths.append(int(response.http_response.headers.get("Content-Length", 0)))

    def factory() -> ContainerClient:
        return ContainerClient.from_connection_string(
            azurite.blob_connection_string, container, raw_response_hook=record
        )

    store = AzureBlobStore(factory)
    store.ensure_container()
    yield store, lengths
    factory().delete_container()


@pytest.mark.azurite
def test_the_azure_store_downloads_no_more_than_the_bound(
    counted: tuple[AzureBlobStore, list[int]],
) -> None:
    store, lengths = counted
    put(store, os.urandom(3 << 20))
    lengths.clear()
    with pytest.raises(BlobTooLarge) as refused:
        store.read(NAME, max_bytes=BOUND)
    assert refused.value.size == 3 << 20
    assert lengths == [BOUND + 1]  # one ranged GET
