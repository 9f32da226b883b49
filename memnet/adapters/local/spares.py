"""Spare inodes: the embedded store reuses the file a write displaces instead of deleting it.

Why: on ext4 without a journal (this project's benchmark VM), the inode allocator skips,
one by one, every inode of the block group that was freed in the last one to five
minutes. A store that replaces a file with a new one frees an inode per write, so each
file it creates gets slower the more it has written (0.1-0.7 ms per creation after a
few thousand PATCHes, each of which replaced two files). Here the inode that a write
displaces (or a delete removes) is marked, truncated to one byte (no content is kept)
and moved under ``.spare/``; a later write, of any blob, fills it and moves it into place.

A reused inode may still be open in a reader that opened it under its former name,
so readers check what they read (:mod:`.etags`): the ETag attribute of a blob's inode is
``<etag> <tag>`` where ``tag`` names the blob, and is set only once the inode is
in place; while an inode is being emptied or refilled its attribute is ``WRITING``. A
read that sees the same attribute before and after reading the bytes, not ``WRITING``
and with its own path's tag, read one complete version of its own blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
import weakref

ATTR = "user.memnet.etag"
WRITING = b"writing"
SPARE_DIR = ".spare"
POOL_LIMIT = 64


def tag(name: str) -> bytes:
    """Which blob an inode's content belongs to: a collision-resistant 64-bit digest of
    its path below the content root (so processes that spell the root differently,
    or a moved data directory, agree)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8)
    return digest.hexdigest().encode("ascii")


def attr_value(etag: str, name: str) -> bytes:
    return etag.encode("ascii") + b" " + tag(name)


class SparePool:
    """This process's spare files: emptied inodes under ``<root>/.spare/``, at most
    ``limit`` of them (beyond that a displaced file is deleted after all).

    A spare belongs to one process: a forked child starts with an empty pool (two
    processes filling one inode would write into each other's blobs). A file with
    another hard link (a backup made with ``cp -al``) is never emptied or reused. Spares
    of processes that are gone (their files are named ``<pid>-...``) are deleted when a
    process first uses the directory, so a crash leaves no old content behind for long."""

    def __init__(self, directory: str, limit: int = POOL_LIMIT) -> None:
        self._directory, self._limit = directory, limit
        self._spares: list[str] = []
        self._lock = threading.Lock()
        self._made = False
        _POOLS.add(self)

    def forget(self) -> None:
        """Drop every spare without touching the files (in a forked child: the parent's)."""
        self._spares, self._lock = [], threading.Lock()

    def take(self) -> tuple[int, str] | None:
        """A write descriptor on a spare (its size is left to the caller) and its path."""
        while True:
            with self._lock:
                if not self._spares:
                    return None
                path = self._spares.pop()
            with contextlib.suppress(FileNotFoundError):  # removed by hand: try the next
                fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
                if os.fstat(fd).st_nlink == 1:
                    return fd, path
                os.close(fd)  # linked from elsewhere since: leave that file alone
                with contextlib.suppress(OSError):
                    os.unlink(path)

    def give_back(self, path: str) -> None:
        """Return a spare that a failed write took (still marked, still under .spare/)."""
        with self._lock:
            self._spares.append(path)

    def keep(self, path: str, pooled: bool) -> None:
        """Empty the displaced file at ``path`` and pool it (``pooled``: it already lies
        under .spare/). Marked before truncation, so a reader still holding it retries.
        Best effort: the write that displaced it has already happened."""
        try:
            if not self._empty(path):  # another hard link holds it: keep its content
                os.unlink(path)
                return
            with self._lock:
                full = len(self._spares) >= self._limit
            if full:
                os.unlink(path)
                return
            if not pooled:
                spare = self.new_name()
                os.rename(path, spare)
                path = spare
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(path)
            return
        with self._lock:
            self._spares.append(path)

    def new_name(self) -> str:
        """A fresh path under .spare/ (the directory is made on first use)."""
        if not self._made:
            os.makedirs(self._directory, exist_ok=True)
            sweep(self._directory)
            self._made = True
        return os.path.join(self._directory, f"{os.getpid()}-{secrets.token_hex(8)}")

    def _empty(self, path: str) -> bool:
        """Keep one byte: truncating to zero makes ext4 (``auto_da_alloc``) flush the
        file's next content when it is closed, and a later truncation wait for that I/O.
        False, untouched, if the file has another hard link."""
        fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            if os.fstat(fd).st_nlink != 1:
                return False
            os.setxattr(fd, ATTR, WRITING)
            os.ftruncate(fd, 1)
            return True
        finally:
            os.close(fd)


def sweep(directory: str) -> int:
    """Delete the spares of processes that no longer run; return how many."""
    removed = 0
    with contextlib.suppress(FileNotFoundError):
        for entry in os.listdir(directory):
            owner = entry.split("-", 1)[0]
            if owner.isdigit() and not _running(int(owner)):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(directory, entry))
                    removed += 1
    return removed


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


_POOLS: weakref.WeakSet[SparePool] = weakref.WeakSet()


def _forget_in_child() -> None:
    for pool in list(_POOLS):
        pool.forget()


os.register_at_fork(after_in_child=_forget_in_child)
