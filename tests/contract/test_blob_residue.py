"""What a store keeps besides blobs (``BlobStore.remove_residue``; the file store's
:mod:`memnet.adapters.local.residue`): every store removes nothing that is a blob; the
file store removes what interrupted writes left under a prefix, every byte of it, and on
first use in a process removes the temp files of writers that died, never those of
writers still alive (in this process or another)."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from pathlib import Path

import pytest

from memnet.adapters.local import durable, residue
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.ports import BlobNotFound, BlobStore, Condition, Residue, StorageUnavailable
from tests.canaries import canary, where

USER = "tenants/t1/users/u1/"
OTHER = "tenants/t1/users/u2/"


def tree(root: Path) -> list[str]:
    """Every file and directory below ``root``, relative, sorted."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def temp_file(directory: Path, data: bytes) -> Path:
    """A temp file as a writer killed before its rename leaves it (no lock held)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{durable.TEMP_PREFIX}{os.urandom(8).hex()}"
    path.write_bytes(data)
    return path


def test_remove_residue_removes_no_blob(blob_store: BlobStore) -> None:
    names = [USER + "a.json", USER + "docs/b.json", USER + "docs/deep/c.json", OTHER + "d.json"]
    for name in names:
        blob_store.write(name, b"{}", Condition.create_only())
    assert blob_store.remove_residue(USER) == Residue()
    assert list(blob_store.list_names("tenants/")) == sorted(names)
    assert all(blob_store.read(name).data == b"{}" for name in names)


@pytest.mark.parametrize("etags", ["xattr", "sidecar"])
def test_remove_residue_removes_every_byte_under_the_prefix_that_is_no_blob(
    tmp_path: Path, etags: str
) -> None:
    """Temp files (in the content and the sidecar tree), a sidecar whose blob is gone,
    and the directories they kept: after it, nothing of the prefix is on disk. Another
    user's temp file and a held blob stay."""
    store = FileBlobStore(tmp_path, etags=etags, fsync=False)
    content, meta = tmp_path / "memnet", tmp_path / ".meta" / "memnet"
    secret, theirs = canary(), canary()
    for name in ("events/e1.json", "audit/c1.json", "documents/user/u.json"):
        store.write(USER + name, b"{}", Condition.create_only())
        store.delete(USER + name)
    store.write(USER + "documents/held.json", b"{}", Condition.create_only())
    store.write(OTHER + "events/e.json", b"{}", Condition.create_only())
    planted = [
        temp_file(content / USER / "audit", f'{{"ops":"{secret}"}}'.encode()),
        temp_file(content / USER / "idempotency", b'{"response": 1}'),
        temp_file(content / USER / "snapshots" / "conv-1", b"x" * 5000),
        temp_file(meta / USER / "events", b'"0x01"'),
    ]
    if etags == "sidecar":  # a crash between the blob's unlink and its sidecar's
        orphan = meta / USER / "events" / "e9.json"
        orphan.write_bytes(b'"0x0000000000000009"')
        planted.append(orphan)
    kept = temp_file(content / OTHER / "events", theirs.encode())
    expected = Residue(len(planted), sum(path.stat().st_size for path in planted))

    assert store.remove_residue(USER) == expected
    assert tree(content / USER) == ["documents", "documents/held.json"]
    assert not (meta / USER).exists() or tree(meta / USER) == [
        "documents",
        "documents/held.json",
    ]
    assert where(tmp_path, [secret]) == {} and set(where(tmp_path, [theirs])) == {theirs}
    assert kept.exists() and store.read(USER + "documents/held.json").data == b"{}"
    store.delete(USER + "documents/held.json")
    assert store.remove_residue(USER) == Residue()
    assert not (content / USER).exists() and not (meta / USER).exists()


def test_remove_residue_takes_a_temp_file_from_a_write_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where it is called (a forget) the prefix's writes are refused: one that passed
    the check just before fails (503, retried, refused) instead of landing after."""
    store = FileBlobStore(tmp_path, fsync=False)
    entered, release = threading.Event(), threading.Event()
    real = os.replace

    def slow_rename(source: str, target: str) -> None:
        entered.set()
        release.wait(10)
        real(source, target)

    outcome: list[BaseException | None] = []

    def write() -> None:
        try:
            store.write(USER + "documents/late.json", b"late", Condition.create_only())
            outcome.append(None)
        except BaseException as exc:  # collected for the assertion below
            outcome.append(exc)

    monkeypatch.setattr(durable.os, "replace", slow_rename)
    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert entered.wait(10)
        assert store.remove_residue(USER) == Residue(1, 4)
    finally:
        release.set()
        writer.join(10)
    assert len(outcome) == 1 and isinstance(outcome[0], StorageUnavailable)
    with pytest.raises(BlobNotFound):
        store.read(USER + "documents/late.json")


# -- on first use: the leftovers of writers that died ------------------------------------------


def _write_and_stop_before_rename(root: str, name: str, die: bool, ready: str) -> None:
    """In a child process: write ``name``, and just before its rename die (as a kill -9
    would leave it) or hang holding the temp file (a live writer, slow)."""

    def stop(source: str, target: str) -> None:
        Path(ready).write_text(source)
        if die:
            os._exit(0)
        time.sleep(120)

    os.replace = stop  # type: ignore[assignment]  # the child's own module
    FileBlobStore(Path(root), fsync=False).write(name, name.encode(), Condition.create_only())


def test_first_use_removes_temp_files_of_dead_writers_and_keeps_live_ones(tmp_path: Path) -> None:
    FileBlobStore(tmp_path).write("kept.json", b"{}", Condition.create_only())
    context = multiprocessing.get_context("spawn")
    children = {}
    for label, die in (("live", False), ("dead", True)):  # the live one first: a child's
        ready = tmp_path / f"{label}.ready"  # own first use must not sweep the dead one's
        process = context.Process(
            target=_write_and_stop_before_rename,
            args=(str(tmp_path), f"{USER}{label}.json", die, str(ready)),
        )
        process.start()
        deadline = time.monotonic() + 30
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        children[label] = (process, ready)
    try:
        live, dead = (Path(ready.read_text()) for _, ready in children.values())
        children["dead"][0].join(10)
        assert dead.exists() and live.exists()

        FileBlobStore(tmp_path).read("kept.json")  # first use in this process
        assert not dead.exists() and live.exists()
    finally:
        children["live"][0].kill()
        children["live"][0].join(10)
    FileBlobStore(tmp_path).read("kept.json")  # its writer is dead now
    assert not live.exists()
    assert tree(tmp_path / "memnet") == ["kept.json", "tenants", "tenants/t1", "tenants/t1/users",
                                         "tenants/t1/users/u1"]  # fmt: skip


def test_first_use_removes_a_sidecar_whose_blob_is_gone(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, etags="sidecar")
    store.write("a/keep.json", b"{}", Condition.create_only())
    orphan = tmp_path / ".meta" / "memnet" / "a" / "gone.json"
    orphan.write_bytes(b'"0x0000000000000001"')
    FileBlobStore(tmp_path, etags="sidecar").read("a/keep.json")
    assert not orphan.exists()
    assert (tmp_path / ".meta" / "memnet" / "a" / "keep.json").exists()


def test_a_sweep_between_a_temp_files_creation_and_its_lock_costs_the_writer_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one moment a live writer's temp file is unlocked: just created. A sweep that
    takes it then is noticed when the writer gets the lock, and the writer starts over."""
    store = FileBlobStore(tmp_path, fsync=False)
    real, swept = durable._owned, list[int | None]()

    def swept_first(fd: int) -> bool:
        if not swept:
            swept.append(durable.remove_if_orphaned(os.readlink(f"/proc/self/fd/{fd}")))
        return real(fd)

    monkeypatch.setattr(durable, "_owned", swept_first)
    store.write("a/doc.json", b"data", Condition.create_only())
    assert swept == [0]
    assert store.read("a/doc.json").data == b"data"
    assert os.listdir(tmp_path / "memnet" / "a") == ["doc.json"]


def test_writes_racing_sweeps_all_land(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, fsync=False)
    content, meta = str(tmp_path / "memnet"), str(tmp_path / ".meta" / "memnet")
    errors: list[BaseException] = []
    done = threading.Event()

    def sweep() -> None:
        while not done.is_set():
            residue.orphans(content, meta, store._blob_lock)

    def write(worker: int) -> None:
        try:
            for i in range(100):
                store.write(f"a/w{worker}/{i}.json", b"x" * i, Condition.create_only())
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    sweeper = threading.Thread(target=sweep)
    sweeper.start()
    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join()
    done.set()
    sweeper.join()
    assert errors == []
    assert len(list(store.list_names("a/"))) == 400
