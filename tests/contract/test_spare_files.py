"""What only the file store with xattr ETags must keep while it reuses displaced files
(memnet.adapters.local.spares): a lock-free read returns one complete version of its own
blob with that version's ETag, however files move between blobs meanwhile."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from memnet.adapters.local.blobstore import FileBlobStore
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
