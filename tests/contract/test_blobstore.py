"""The BlobStore contract (memnet.ports.BlobStore; docs/architecture.md, "Blob semantics
everywhere"): one suite that the file store and the Azure store (on Azurite) both pass,
then what only the file store promises, then the Azure SDK error mapping."""

from __future__ import annotations

import errno
import multiprocessing
import os
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)

from memnet.adapters.azure.blobstore import map_azure_errors
from memnet.adapters.local import durable
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.etags import ATTR, etag_from_stat
from memnet.adapters.memory.blobstore import MemoryBlobStore
from memnet.adapters.memory.queue import MemoryQueue
from memnet.domain.errors import ConfigError
from memnet.ports import (
    Blob,
    BlobNotFound,
    BlobStore,
    Condition,
    PreconditionFailed,
    StorageError,
    StorageUnavailable,
)
from memnet.settings import Settings
from memnet.wiring import blob_store, message_queue
from tests.contract.sdk_errors import http_error, with_code

STALE = '"0x0000000000000000"'


def increment(store: BlobStore, name: str, times: int) -> None:
    """Read-modify-write ``times`` increments of a decimal counter, retrying on 412."""
    for _ in range(times):
        while True:
            blob = store.read(name)
            try:
                store.write(name, b"%d" % (int(blob.data) + 1), Condition.match(blob.etag))
                break
            except PreconditionFailed:
                time.sleep(random.uniform(0, 0.002))


# --- the contract, for every adapter ------------------------------------------------------


def test_read_missing_blob_raises_blob_not_found(blob_store: BlobStore) -> None:
    with pytest.raises(BlobNotFound):
        blob_store.read("missing/doc.json")


def test_read_returns_data_and_the_etag_the_write_returned(blob_store: BlobStore) -> None:
    etag = blob_store.write("a/doc.json", b'{"v":1}', Condition.create_only())
    blob = blob_store.read("a/doc.json")
    assert (blob.name, blob.data, blob.etag) == ("a/doc.json", b'{"v":1}', etag)
    assert etag.startswith('"0x')
    assert etag.endswith('"')


def test_second_create_only_write_raises_precondition_failed(blob_store: BlobStore) -> None:
    blob_store.write("doc.json", b"first", Condition.create_only())
    with pytest.raises(PreconditionFailed):
        blob_store.write("doc.json", b"second", Condition.create_only())
    assert blob_store.read("doc.json").data == b"first"


def test_write_with_matching_etag_succeeds_and_changes_etag(blob_store: BlobStore) -> None:
    first = blob_store.write("doc.json", b"1", Condition.create_only())
    second = blob_store.write("doc.json", b"2", Condition.match(first))
    assert second != first
    assert blob_store.read("doc.json").data == b"2"


def test_etag_changes_even_when_content_is_identical(blob_store: BlobStore) -> None:
    first = blob_store.write("doc.json", b"same", Condition.create_only())
    second = blob_store.write("doc.json", b"same", Condition.match(first))
    assert second != first
    assert blob_store.read("doc.json").etag == second


def test_write_with_stale_etag_raises_precondition_failed(blob_store: BlobStore) -> None:
    first = blob_store.write("doc.json", b"1", Condition.create_only())
    blob_store.write("doc.json", b"2", Condition.match(first))
    with pytest.raises(PreconditionFailed):
        blob_store.write("doc.json", b"3", Condition.match(first))
    assert blob_store.read("doc.json").data == b"2"


def test_if_match_on_missing_blob_raises_precondition_failed(blob_store: BlobStore) -> None:
    with pytest.raises(PreconditionFailed):
        blob_store.write("doc.json", b"1", Condition.match(STALE))
    with pytest.raises(BlobNotFound):
        blob_store.read("doc.json")


def test_unconditional_write_creates_and_overwrites(blob_store: BlobStore) -> None:
    first = blob_store.write("doc.json", b"1", Condition.unconditional())
    second = blob_store.write("doc.json", b"2", Condition.unconditional())
    assert second != first
    assert blob_store.read("doc.json").data == b"2"


NAMES = [
    "a.json",
    "a-b.json",
    "a0.json",
    "a/b.json",
    "a/bc.json",
    "a/b/c.json",
    "a/b/d/e.json",
    "ab/x.json",
    "b/x.json",
]


@pytest.mark.parametrize(
    "prefix",
    ["", "a", "a/", "a/b", "a/b/", "a/bc", "ab", "b/x.json", "c", "a/b/d/e.json.x"],
)
def test_list_names_yields_names_with_prefix_in_lexical_order(
    blob_store: BlobStore, prefix: str
) -> None:
    for name in reversed(NAMES):
        blob_store.write(name, b"{}", Condition.create_only())
    expected = sorted(name for name in NAMES if name.startswith(prefix))
    assert list(blob_store.list_names(prefix)) == expected


def folder(names: list[str], prefix: str) -> list[str]:
    """What ``list_folder(prefix)`` lists, from the definition: each name under the
    prefix cut after its next ``/``."""
    found = set()
    for name in names:
        if name.startswith(prefix):
            below, slash, _ = name[len(prefix) :].partition("/")
            found.add(prefix + below + slash)
    return sorted(found)


@pytest.mark.parametrize("prefix", ["", "a/", "a/b/", "a/b/d/", "ab/", "nothing/"])
def test_list_folder_yields_one_level_in_lexical_order(blob_store: BlobStore, prefix: str) -> None:
    for name in reversed(NAMES):
        blob_store.write(name, b"{}", Condition.create_only())
    assert list(blob_store.list_folder(prefix)) == folder(NAMES, prefix)


@pytest.mark.parametrize("prefix", ["a", "a/b", "/"])
def test_list_folder_refuses_a_prefix_that_is_no_folder(blob_store: BlobStore, prefix: str) -> None:
    with pytest.raises(ValueError):
        list(blob_store.list_folder(prefix))


def test_list_folder_drops_a_folder_whose_blobs_are_deleted(blob_store: BlobStore) -> None:
    etag = blob_store.write("x/y/z.json", b"{}", Condition.create_only())
    blob_store.write("w.json", b"{}", Condition.create_only())
    assert list(blob_store.list_folder("")) == ["w.json", "x/"]
    blob_store.delete("x/y/z.json", Condition.match(etag))
    assert list(blob_store.list_folder("")) == ["w.json"]


def test_partial_segment_prefix_matches_sibling_names(blob_store: BlobStore) -> None:
    for name in ("a/b/c.json", "a/bc.json", "a/x.json"):
        blob_store.write(name, b"{}", Condition.create_only())
    assert list(blob_store.list_names("a/b")) == ["a/b/c.json", "a/bc.json"]


def test_delete_then_read_raises_blob_not_found(blob_store: BlobStore) -> None:
    etag = blob_store.write("a/b/doc.json", b"1", Condition.create_only())
    blob_store.delete("a/b/doc.json", Condition.match(etag))
    with pytest.raises(BlobNotFound):
        blob_store.read("a/b/doc.json")
    assert list(blob_store.list_names("")) == []


def test_unconditional_delete_removes_blob(blob_store: BlobStore) -> None:
    blob_store.write("doc.json", b"1", Condition.create_only())
    blob_store.delete("doc.json")
    with pytest.raises(BlobNotFound):
        blob_store.read("doc.json")


def test_delete_with_stale_etag_raises_precondition_failed(blob_store: BlobStore) -> None:
    first = blob_store.write("doc.json", b"1", Condition.create_only())
    blob_store.write("doc.json", b"2", Condition.match(first))
    with pytest.raises(PreconditionFailed):
        blob_store.delete("doc.json", Condition.match(first))
    assert blob_store.read("doc.json").data == b"2"


def test_delete_missing_blob_raises_blob_not_found(blob_store: BlobStore) -> None:
    with pytest.raises(BlobNotFound):
        blob_store.delete("missing.json")


def test_delete_with_etag_of_missing_blob_raises_precondition_failed(
    blob_store: BlobStore,
) -> None:
    with pytest.raises(PreconditionFailed):
        blob_store.delete("missing.json", Condition.match(STALE))


def test_delete_rejects_create_only_condition(blob_store: BlobStore) -> None:
    with pytest.raises(ValueError, match="create-only"):
        blob_store.delete("doc.json", Condition.create_only())


def test_write_rejects_a_condition_that_is_both_if_match_and_create_only(
    blob_store: BlobStore,
) -> None:
    etag = blob_store.write("doc.json", b"1", Condition.create_only())
    with pytest.raises(ValueError, match="not both"):
        blob_store.write("doc.json", b"2", Condition(etag=etag, absent=True))
    assert blob_store.read("doc.json").etag == etag


def test_write_after_delete_recreates_blob(blob_store: BlobStore) -> None:
    blob_store.write("a/doc.json", b"1", Condition.create_only())
    blob_store.delete("a/doc.json")
    blob_store.write("a/doc.json", b"2", Condition.create_only())
    assert blob_store.read("a/doc.json").data == b"2"


@pytest.mark.parametrize("data", [b"", bytes(range(256)) * 64, b"\x00\r\n\xff\xfe"])
def test_binary_content_round_trips_unchanged(blob_store: BlobStore, data: bytes) -> None:
    blob_store.write("bin/blob.bin", data, Condition.create_only())
    assert blob_store.read("bin/blob.bin").data == data


@pytest.mark.slow
def test_concurrent_read_modify_write_loses_no_update(blob_store: BlobStore) -> None:
    threads, times = 16, 8
    blob_store.write("counter", b"0", Condition.create_only())
    with ThreadPoolExecutor(threads) as pool:
        futures = [pool.submit(increment, blob_store, "counter", times) for _ in range(threads)]
        for future in futures:
            future.result()
    assert int(blob_store.read("counter").data) == threads * times


def test_exactly_one_concurrent_create_only_write_wins(blob_store: BlobStore) -> None:
    contenders = 16
    barrier = threading.Barrier(contenders)

    def create(i: int) -> str | None:
        barrier.wait()
        try:
            return blob_store.write("winner.json", b"%d" % i, Condition.create_only())
        except PreconditionFailed:
            return None

    with ThreadPoolExecutor(contenders) as pool:
        results = list(pool.map(create, range(contenders)))
    winners = [(i, etag) for i, etag in enumerate(results) if etag is not None]
    assert len(winners) == 1
    blob = blob_store.read("winner.json")
    assert (blob.data, blob.etag) == (b"%d" % winners[0][0], winners[0][1])


def test_describe_names_the_store_without_secrets(blob_store: BlobStore) -> None:
    description = blob_store.describe()
    assert description
    assert "AccountKey" not in description
    assert "Eby8" not in description


# --- paged listing (list_page), for every adapter -----------------------------------------


def all_pages(store: BlobStore, prefix: str, limit: int) -> list[list[str]]:
    """Every page of a listing, following continuations until there are none."""
    pages, continuation = [], None
    while True:
        page = store.list_page(prefix, continuation, limit)
        pages.append([info.name for info in page.items])
        continuation = page.continuation
        if continuation is None:
            return pages


PAGED = ["t/a/1", "t/a/2", "t/a/b/1", "t/ab", "t/b/x/y/z", "t/c", "u/1"]


def test_list_page_walks_every_blob_once_in_lexical_order(blob_store: BlobStore) -> None:
    for name in reversed(PAGED):
        blob_store.write(name, b"x", Condition.create_only())
    pages = all_pages(blob_store, "t/", 2)
    assert [name for page in pages for name in page] == sorted(PAGED[:-1])
    assert all(len(page) <= 2 for page in pages)
    assert [len(page) for page in pages[:3]] == [2, 2, 2]


def test_list_page_of_one_item_per_page_resumes_strictly_after_the_last(
    blob_store: BlobStore,
) -> None:
    for name in PAGED:
        blob_store.write(name, b"x", Condition.create_only())
    pages = all_pages(blob_store, "", 1)
    assert [name for page in pages for name in page] == sorted(PAGED)


def test_list_page_gives_a_recent_timezone_aware_last_modified(blob_store: BlobStore) -> None:
    before = datetime.now(UTC) - timedelta(minutes=5)
    blob_store.write("t/a/1", b"x", Condition.create_only())
    (info,) = blob_store.list_page("t/", None, 10).items
    assert info.name == "t/a/1"
    assert info.last_modified.tzinfo is not None
    assert before <= info.last_modified <= datetime.now(UTC) + timedelta(minutes=5)


def test_list_page_gives_each_blobs_size_in_bytes(blob_store: BlobStore) -> None:
    blob_store.write("t/a/1", b"four", Condition.create_only())
    blob_store.write("t/a/2", b"", Condition.create_only())
    sizes = [info.size for info in blob_store.list_page("t/", None, 10).items]
    assert sizes == [4, 0]


def test_list_page_honours_a_partial_segment_prefix(blob_store: BlobStore) -> None:
    for name in PAGED:
        blob_store.write(name, b"x", Condition.create_only())
    assert all_pages(blob_store, "t/a", 10) == [["t/a/1", "t/a/2", "t/a/b/1", "t/ab"]]


def test_list_page_of_an_empty_prefix_is_one_empty_final_page(blob_store: BlobStore) -> None:
    page = blob_store.list_page("nothing/", None, 5)
    assert (page.items, page.continuation) == ((), None)


def test_list_page_continues_past_blobs_deleted_since_the_last_page(
    blob_store: BlobStore,
) -> None:
    for name in PAGED:
        blob_store.write(name, b"x", Condition.create_only())
    first = blob_store.list_page("t/", None, 2)
    for info in first.items:
        blob_store.delete(info.name)
    blob_store.delete("t/a/b/1")
    rest = all_pages_from(blob_store, "t/", first.continuation, 2)
    assert rest == ["t/ab", "t/b/x/y/z", "t/c"]


def large_directory() -> list[str]:
    """400 blobs in one directory, with subdirectories among them (a directory ``a``
    sorts as ``a/``: after ``a.json``, before ``a0``) and names outside the prefix."""
    names = [f"big/d/e{i:04d}.json" for i in range(400)]
    names += [f"big/d/e{i:04d}/sub/{j}" for i in (0, 7, 199, 399) for j in range(3)]
    names += ["big/d/e0100.jsonx", "big/d/e0100/x", "big/c.json", "big/e/1"]
    return names


@pytest.mark.slow
def test_list_page_of_a_large_directory_is_complete_and_in_order(
    blob_store: BlobStore,
) -> None:
    names = large_directory()
    for name in random.Random(11).sample(names, len(names)):
        blob_store.write(name, b"x", Condition.create_only())
    expected = sorted(n for n in names if n.startswith("big/d/"))
    for limit in (1, 7, 100, 1000):
        pages = all_pages(blob_store, "big/d/", limit)
        assert [name for page in pages for name in page] == expected
        assert all(len(page) == limit for page in pages[:-1])
    assert list(blob_store.list_names("big/d/")) == expected
    assert [n for page in all_pages(blob_store, "big/d/e01", 50) for n in page] == [
        n for n in expected if n.startswith("big/d/e01")
    ]


def all_pages_from(
    store: BlobStore, prefix: str, continuation: str | None, limit: int
) -> list[str]:
    names: list[str] = []
    while continuation is not None:
        page = store.list_page(prefix, continuation, limit)
        names.extend(info.name for info in page.items)
        continuation = page.continuation
    return names


# --- the file store ------------------------------------------------------------------------


def test_file_store_keeps_content_verbatim_in_azure_layout(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, container="memnet")
    store.write("tenants/t1/doc.json", b'{"a": 1}\n', Condition.create_only())
    assert (tmp_path / "memnet" / "tenants" / "t1" / "doc.json").read_bytes() == b'{"a": 1}\n'
    assert store.describe() == "local files"  # no path: /v1/health shows it unauthenticated


def test_embedded_store_etags_look_like_azure(embedded_store: BlobStore) -> None:
    etags = {embedded_store.write("doc.json", b"x", Condition.unconditional()) for _ in range(20)}
    assert len(etags) == 20
    assert all(re.fullmatch(r'"0x[0-9A-F]{16}"', etag) for etag in etags)


def test_embedded_store_precondition_failure_carries_current_etag(
    embedded_store: BlobStore,
) -> None:
    etag = embedded_store.write("doc.json", b"1", Condition.create_only())
    with pytest.raises(PreconditionFailed) as caught:
        embedded_store.write("doc.json", b"2", Condition.match(STALE))
    assert caught.value.current_etag == etag


@pytest.mark.parametrize(
    "name",
    ["", "/etc/passwd", "../x", "a/../../x", "a/./b", "a//b", "a/", "a\\..\\b", "a\0b", ".."],
)
def test_embedded_store_rejects_names_escaping_the_root(
    embedded_store: BlobStore, name: str
) -> None:
    with pytest.raises(ValueError, match="invalid blob name"):
        embedded_store.write(name, b"x", Condition.unconditional())
    with pytest.raises(ValueError, match="invalid blob name"):
        embedded_store.read(name)
    with pytest.raises(ValueError, match="invalid blob name"):
        embedded_store.delete(name)


@pytest.mark.parametrize("prefix", ["../", "a/../../", "/etc/", "a//"])
def test_embedded_store_rejects_prefixes_escaping_the_root(
    embedded_store: BlobStore, prefix: str
) -> None:
    with pytest.raises(ValueError, match="invalid blob name"):
        list(embedded_store.list_names(prefix))


def test_file_store_delete_prunes_empty_directories(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    store.write("t/u/keep.json", b"1", Condition.create_only())
    store.write("t/u/v/w/gone.json", b"1", Condition.create_only())
    store.delete("t/u/v/w/gone.json")
    assert not (tmp_path / "memnet" / "t" / "u" / "v").exists()
    assert not (tmp_path / ".meta" / "memnet" / "t" / "u" / "v").exists()
    assert (tmp_path / "memnet" / "t" / "u" / "keep.json").exists()


def test_file_store_lists_no_temp_files(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    store.write("a/doc.json", b"1", Condition.create_only())
    (tmp_path / "memnet" / "a" / ".memnet-tmp-0123456789abcdef").write_bytes(b"partial")
    assert list(store.list_names("a/")) == ["a/doc.json"]
    assert [info.name for info in store.list_page("a/", None, 1).items] == ["a/doc.json"]


def test_file_store_pages_a_large_directory_a_page_at_a_time(tmp_path: Path) -> None:
    """A page keeps ``limit`` entries of a directory, never all of them: temp files
    and the entries before the continuation do not count against the page."""
    store = FileBlobStore(tmp_path, fsync=False)
    for name in large_directory():
        store.write(name, b"x", Condition.create_only())
    for i in range(0, 400, 50):
        (tmp_path / "memnet" / "big" / "d" / f"{durable.TEMP_PREFIX}{i:016x}").write_bytes(b"")
    expected = sorted(n for n in large_directory() if n.startswith("big/d/"))
    pages = all_pages(store, "big/d/", 33)
    assert [name for page in pages for name in page] == expected
    assert all(len(page) == 33 for page in pages[:-1])


def test_file_placed_by_hand_is_readable_and_conditionally_writable(tmp_path: Path) -> None:
    (tmp_path / "memnet" / "a").mkdir(parents=True)
    (tmp_path / "memnet" / "a" / "doc.json").write_bytes(b"by hand")
    store = FileBlobStore(tmp_path)
    blob = store.read("a/doc.json")
    assert blob.data == b"by hand"
    assert store.read("a/doc.json").etag == blob.etag
    store.write("a/doc.json", b"by store", Condition.match(blob.etag))
    assert store.read("a/doc.json").data == b"by store"


def test_embedded_store_rejects_a_name_below_an_existing_blob(embedded_store: BlobStore) -> None:
    embedded_store.write("a.json", b"1", Condition.create_only())
    with pytest.raises(ValueError, match="clashes"):
        embedded_store.write("a.json/b.json", b"2", Condition.create_only())
    assert embedded_store.read("a.json").data == b"1"
    embedded_store.write("d/e.json", b"3", Condition.create_only())
    with pytest.raises(ValueError, match="clashes"):
        embedded_store.write("d", b"4", Condition.unconditional())
    assert list(embedded_store.list_names("")) == ["a.json", "d/e.json"]


def _increment_in_process(root: str, times: int) -> None:
    increment(FileBlobStore(Path(root)), "counter", times)


@pytest.mark.slow
def test_file_store_processes_lose_no_update(tmp_path: Path) -> None:
    processes, times = 4, 25
    FileBlobStore(tmp_path).write("counter", b"0", Condition.create_only())
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_increment_in_process, args=(str(tmp_path), times))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0] * processes
    assert int(FileBlobStore(tmp_path).read("counter").data) == processes * times


# --- the file store: durability --------------------------------------------------------------


def spy_on_fsync(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The path of every descriptor the store fsyncs, in order (os.fsync as it calls it)."""
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(durable.os, "fsync", fsync)
    return synced


def test_a_write_fsyncs_each_new_directory_then_the_file_then_its_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileBlobStore(tmp_path, etags="xattr")
    store.write("first.json", b"1", Condition.create_only())
    synced = spy_on_fsync(monkeypatch)
    store.write("a/b/doc.json", b"1", Condition.create_only())
    root = tmp_path.resolve() / "memnet"
    assert synced[:2] == [str(root), str(root / "a")]  # where "a" and then "b" were made
    temp = Path(synced[2])  # the new file, before its rename
    assert temp.parent == root / "a" / "b" and temp.name.startswith(durable.TEMP_PREFIX)
    assert synced[3:] == [str(root / "a" / "b")]  # its name, after the rename


def test_a_delete_fsyncs_the_directory_it_removed_the_name_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = FileBlobStore(tmp_path, etags="xattr")
    store.write("a/doc.json", b"1", Condition.create_only())
    store.write("a/other.json", b"1", Condition.create_only())
    synced = spy_on_fsync(monkeypatch)
    store.delete("a/doc.json")
    assert synced == [str(tmp_path.resolve() / "memnet" / "a")]


def test_first_use_makes_the_data_directory_and_every_directory_above_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = spy_on_fsync(monkeypatch)
    FileBlobStore(tmp_path / "data", etags="xattr").write("doc.json", b"1", Condition.create_only())
    data = (tmp_path / "data").resolve()
    before_the_file = synced[: synced.index(str(data / "memnet"))]
    assert {str(data), *map(str, data.parents)} <= set(before_the_file)


@pytest.mark.parametrize("etags", ["xattr", "sidecar"])
def test_without_fsync_nothing_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, etags: str
) -> None:
    synced = spy_on_fsync(monkeypatch)
    store = FileBlobStore(tmp_path, etags=etags, fsync=False)
    etag = store.write("a/b/doc.json", b"1", Condition.create_only())
    store.write("a/b/doc.json", b"2", Condition.match(etag))
    store.delete("a/b/doc.json")
    assert synced == []


def _eio(fd: int) -> None:
    raise OSError(errno.EIO, "Input/output error")


@pytest.mark.parametrize("etags", ["xattr", "sidecar"])
def test_an_fsync_failure_is_storage_unavailable_and_leaves_the_blob_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, etags: str
) -> None:
    store = FileBlobStore(tmp_path, etags=etags)
    etag = store.write("a/doc.json", b"old", Condition.create_only())
    monkeypatch.setattr(durable.os, "fsync", _eio)
    with pytest.raises(StorageUnavailable) as caught:
        store.write("a/doc.json", b"new", Condition.match(etag))
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.EIO
    with pytest.raises(StorageUnavailable):
        store.write("a/new.json", b"new", Condition.create_only())
    monkeypatch.undo()
    assert store.read("a/doc.json") == Blob("a/doc.json", b"old", etag)
    assert os.listdir(tmp_path / "memnet" / "a") == ["doc.json"]  # no temp file left


def test_etags_stored_by_the_former_store_are_still_read(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, etags="xattr")
    store.write("tagged.json", b"1", Condition.create_only())
    store.write("writing.json", b"2", Condition.create_only())
    tagged, writing = tmp_path / "memnet" / "tagged.json", tmp_path / "memnet" / "writing.json"
    os.setxattr(tagged, ATTR, b'"0x00000000000000AB" 0123456789abcdef')  # ETag and blob tag
    os.setxattr(writing, ATTR, b"writing")  # an interrupted refill: ETag from the stat
    assert store.read("tagged.json").etag == '"0x00000000000000AB"'
    assert store.read("writing.json").etag == etag_from_stat(os.stat(writing))


def test_fsync_is_on_unless_memnet_local_fsync_is_false(tmp_path: Path) -> None:
    env = {"MEMNET_CALLERS_FILE": "callers.dev.json", "MEMNET_DATA_DIR": str(tmp_path)}
    stores = [
        blob_store(Settings.from_env({**env, **extra}))
        for extra in ({}, {"MEMNET_LOCAL_FSYNC": "true"}, {"MEMNET_LOCAL_FSYNC": "FALSE"})
    ]
    assert [isinstance(s, FileBlobStore) and s.fsync for s in stores] == [True, True, False]
    with pytest.raises(ConfigError, match="MEMNET_LOCAL_FSYNC"):
        Settings.from_env({**env, "MEMNET_LOCAL_FSYNC": "no"})


def test_memnet_storage_memory_selects_the_memory_blob_store_and_queue(tmp_path: Path) -> None:
    env = {"MEMNET_CALLERS_FILE": "callers.dev.json", "MEMNET_DATA_DIR": str(tmp_path)}
    settings = Settings.from_env({**env, "MEMNET_STORAGE": "memory"})
    assert isinstance(blob_store(settings), MemoryBlobStore)
    assert isinstance(message_queue(settings), MemoryQueue)
    assert list(tmp_path.iterdir()) == []  # no disk: nothing made in the data directory


# --- the Azure SDK error mapping --------------------------------------------------------------


SDK_ERRORS: list[tuple[Callable[[], AzureError], type[StorageError]]] = [
    (lambda: ResourceNotFoundError("boom"), BlobNotFound),
    (lambda: with_code(ResourceNotFoundError("boom"), "BlobNotFound"), BlobNotFound),
    (lambda: http_error(404), BlobNotFound),
    (lambda: ResourceModifiedError("boom"), PreconditionFailed),
    (lambda: ResourceExistsError("boom"), PreconditionFailed),
    (lambda: http_error(412, "ConditionNotMet"), PreconditionFailed),
    (lambda: http_error(409, "BlobAlreadyExists"), PreconditionFailed),
    (lambda: ServiceRequestError("boom"), StorageUnavailable),
    (lambda: ServiceResponseError("boom"), StorageUnavailable),
    (lambda: ClientAuthenticationError("boom"), StorageUnavailable),
    (lambda: http_error(500), StorageUnavailable),
    (lambda: http_error(503, "ServerBusy"), StorageUnavailable),
    (lambda: http_error(429), StorageUnavailable),
    (lambda: with_code(ResourceNotFoundError("boom"), "ContainerNotFound"), StorageUnavailable),
    (lambda: http_error(400, "InvalidBlobOrBlock"), StorageError),
    (lambda: http_error(409, "LeaseIdMissing"), StorageError),
    (lambda: AzureError("boom"), StorageError),
]


@pytest.mark.parametrize(("make_error", "expected"), SDK_ERRORS)
def test_every_azure_sdk_error_is_mapped_and_chained(
    make_error: Callable[[], AzureError], expected: type[StorageError]
) -> None:
    error = make_error()
    with pytest.raises(StorageError) as caught, map_azure_errors("doc.json"):
        raise error
    assert type(caught.value) is expected
    assert caught.value.__cause__ is error


def test_non_sdk_errors_pass_through_the_mapping_unchanged() -> None:
    with pytest.raises(KeyError), map_azure_errors("doc.json"):
        raise KeyError("not ours")


def test_read_if_changed_skips_an_unchanged_blob(blob_store: BlobStore) -> None:
    etag = blob_store.write("doc.json", b"v1", Condition.create_only())
    assert blob_store.read_if_changed("doc.json", etag) is None
    newer = blob_store.write("doc.json", b"v2", Condition.match(etag))
    changed = blob_store.read_if_changed("doc.json", etag)
    assert changed is not None and (changed.data, changed.etag) == (b"v2", newer)


def test_read_if_changed_on_a_missing_blob_raises_not_found(blob_store: BlobStore) -> None:
    with pytest.raises(BlobNotFound):
        blob_store.read_if_changed("missing.json", STALE)


@pytest.mark.slow
def test_embedded_store_survives_writes_racing_deletes_in_one_tree(
    embedded_store: BlobStore,
) -> None:
    errors: list[BaseException] = []

    def churn(worker: int) -> None:
        try:
            for i in range(150):
                name = f"a/b/c{i % 3}/t{worker}.json"
                embedded_store.write(name, b"x", Condition.unconditional())
                embedded_store.delete(name)
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
