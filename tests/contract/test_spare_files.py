"""What only the file store with xattr ETags must keep while it reuses displaced files
(memnet.adapters.local.spares): a lock-free read returns one complete version of its own
blob with that version's ETag, however files move between blobs meanwhile."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.spares import sweep
from memnet.ports import BlobNotFound, Condition

NAMES = ("a/doc.json", "b/doc.json", "c/audit.json")


def test_reads_racing_writes_of_other_blobs_see_only_their_own_versions(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "data", etags="xattr")
    written: dict[str, bytes] = {}  # etag -> content, as each write returned it
    stop, problems = threading.Event(), list[str]()

    def write(name: str) -> None:
        for n in range(400):
            data = f"{name}:{n}:".encode() + b"x" * (n % 7 * 300)
            written[store.write(name, data, Condition.unconditional())] = data
            if n % 50 == 49:
                store.delete(name)
        stop.set()

    def read(name: str) -> None:
        while not stop.is_set():
            try:
                blob = store.read(name)
            except BlobNotFound:
                continue
            if not blob.data.startswith(f"{name}:".encode()):
                problems.append(f"{name} read {blob.data[:20]!r}")
            elif blob.etag in written and written[blob.etag] != blob.data:
                problems.append(f"{name} content does not match its ETag {blob.etag}")

    threads = [threading.Thread(target=write, args=(n,)) for n in NAMES]
    threads += [threading.Thread(target=read, args=(n,)) for n in NAMES for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []


def test_displaced_files_are_emptied_and_reused(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "data", etags="xattr")
    etag = store.write("doc.json", b"first secret", Condition.create_only())
    for n in range(5):
        etag = store.write("doc.json", b"version %d" % n, Condition.match(etag))
    store.delete("doc.json")
    spares = list((tmp_path / "data" / ".spare").iterdir())
    assert spares and all(os.path.getsize(p) <= 1 for p in spares)
    assert len(spares) <= 2  # reused, not one per write


def test_writes_and_deletes_work_after_the_spare_directory_is_removed(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "data", etags="xattr")
    etag = store.write("doc.json", b"one", Condition.create_only())
    etag = store.write("doc.json", b"two", Condition.match(etag))  # pools the old file
    for spare in (tmp_path / "data" / ".spare").iterdir():
        spare.unlink()
    (tmp_path / "data" / ".spare").rmdir()
    etag = store.write("doc.json", b"three", Condition.match(etag))
    store.write("other.json", b"x", Condition.create_only())
    assert store.read("doc.json").data == b"three"
    store.delete("doc.json", Condition.match(etag))
    store.delete("other.json")
    assert list(store.list_names("")) == []


def test_stores_spelling_the_root_differently_read_each_other_without_the_lock(
    tmp_path: Path,
) -> None:
    (tmp_path / "x").mkdir()
    writer = FileBlobStore(tmp_path / "data", etags="xattr")
    reader = FileBlobStore(tmp_path / "x" / ".." / "data", etags="xattr")
    etag = writer.write("d/doc.json", b"v1", Condition.create_only())
    etag = writer.write("d/doc.json", b"v2", Condition.match(etag))
    path = os.path.join(str(tmp_path / "x" / ".." / "data"), "memnet", "d", "doc.json")
    assert reader.etags.read(path) == (b"v2", etag)  # unlocked: Busy if the tag differed


# --- ownership: forks, hard links, leftovers (review findings) ----------------------------


def _fork_writer(store: FileBlobStore, name: str, barrier: Any, results: Any) -> None:
    data = f"{name}-new-content|".encode() * 20
    barrier.wait()
    results.put((name, store.write(name, data, Condition.unconditional()), data))


def test_a_forked_child_never_fills_the_parents_spares(tmp_path: Path) -> None:
    """Parent and child both write right after a fork; each must keep its own write.
    Before the pool was reset in the child, about one trial in seven lost both writes."""
    context = multiprocessing.get_context("fork")
    for trial in range(30):
        store = FileBlobStore(tmp_path / f"t{trial}", etags="xattr")
        for name in ("p", "c"):
            store.write(name, f"{name}-old|".encode(), Condition.create_only())
        store.write("warm", b"w0", Condition.create_only())
        store.write("warm", b"w1", Condition.unconditional())  # the pool now holds a spare
        results, barrier = context.Queue(), context.Barrier(2)
        child = context.Process(target=_fork_writer, args=(store, "c", barrier, results))
        child.start()
        _fork_writer(store, "p", barrier, results)
        child.join(timeout=30)
        acked = [results.get(timeout=10) for _ in range(2)]
        fresh = FileBlobStore(tmp_path / f"t{trial}", etags="xattr")
        for name, etag, data in acked:
            assert (fresh.read(name).data, fresh.read(name).etag) == (data, etag), trial


def test_a_hard_linked_copy_keeps_its_content_through_later_writes(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "data", etags="xattr")
    store.write("a/doc.json", b"precious v1", Condition.create_only())
    backup = tmp_path / "backup.json"
    os.link(tmp_path / "data" / "memnet" / "a" / "doc.json", backup)  # as cp -al would
    store.write("a/doc.json", b"v2", Condition.unconditional())
    for n in range(20):  # other blobs' writes would reuse the displaced file, if pooled
        store.write(f"b/{n}.json", b"other" * n, Condition.unconditional())
    assert backup.read_bytes() == b"precious v1"
    assert store.read("a/doc.json").data == b"v2"


def test_spares_of_processes_that_are_gone_are_swept(tmp_path: Path) -> None:
    spare_dir = tmp_path / "data" / ".spare"
    spare_dir.mkdir(parents=True)
    dead_pid = _a_dead_pid()
    (spare_dir / f"{dead_pid}-0123456789abcdef").write_bytes(b"deleted user data")
    (spare_dir / f"{os.getpid()}-fedcba9876543210").write_bytes(b"x")  # a live owner's
    store = FileBlobStore(tmp_path / "data", etags="xattr")
    store.write("a.json", b"1", Condition.create_only())
    store.write("a.json", b"2", Condition.unconditional())  # first use of .spare/: sweep
    left = sorted(p.name.split("-")[0] for p in spare_dir.iterdir())
    assert str(dead_pid) not in left and str(os.getpid()) in left
    assert sweep(str(spare_dir)) == 0


def _a_dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid
