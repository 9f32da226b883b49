"""The embedded :class:`~memnet.ports.BlobStore`: blobs as plain files (ARCHITECTURE.md 1).

Layout under ``root`` (the same names as in Azure, so a user can ``cat`` a document)::

    <container>/<name>          the blob's bytes, verbatim
    .meta/<container>/<name>    the blob's ETag, only where the filesystem lacks xattrs
    .locks/<NNNN>               1024 striped lock files, created on demand, never deleted
    .spare/<pid>-<random>       emptied files kept for reuse (with xattrs; see .spares)

Where each ETag lives, and why both places are crash-safe, is in
:mod:`memnet.adapters.local.etags`; why displaced files are reused rather than deleted,
in :mod:`memnet.adapters.local.spares`.

Concurrency: a write or delete holds an exclusive ``fcntl.flock`` on the name's lock
stripe while it checks the condition and replaces the file. ``flock`` locks belong to an
open file description, so they exclude threads (each call opens the lock file itself)
and processes alike. Reads need no lock with xattr ETags (content and ETag are one
inode; a read that overlapped a write of its inode is detected and retried, under the
shared lock if need be); with sidecars they take the shared lock. POSIX only.

Durability: no ``fsync``. A write survives a crash of the process, not necessarily a
power loss or kernel crash, where the last writes may be lost. That is the trade for an
embedded development and single-node store; Azure Blob is the durable deployment.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from memnet.adapters.local.etags import (
    TEMP_PREFIX,
    Busy,
    EtagKeeper,
    keeper_for,
    new_etag,
    prune_empty_parents,
)
from memnet.ports import Blob, BlobNotFound, Condition, PreconditionFailed

LOCK_STRIPES = 1024
_CONTAINER = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_UNCONDITIONAL = Condition()


class FileBlobStore:
    """Blob semantics on the local filesystem: per-blob conditional writes with ETags,
    create-only writes, prefix listing, no multi-blob transactions.

    ``etags`` is ``auto`` (xattrs where supported, else sidecars), ``xattr`` or
    ``sidecar``; it is settled on first use, not in the constructor."""

    def __init__(self, root: Path, container: str = "memnet", etags: str = "auto") -> None:
        if not _CONTAINER.fullmatch(container):
            raise ValueError(f"invalid container name: {container!r}")
        self._root = str(root)
        self._container = container
        self._content = os.path.join(self._root, container)
        self._meta = os.path.join(self._root, ".meta", container)
        self._locks = os.path.join(self._root, ".locks")
        self._spares = os.path.join(self._root, ".spare")
        self._mode = etags
        self._keeper: EtagKeeper | None = None

    def describe(self) -> str:
        return "local files"  # no path: health is unauthenticated

    @property
    def etags(self) -> EtagKeeper:
        if self._keeper is None:
            self._keeper = keeper_for(self._content, self._meta, self._spares, self._mode)
        return self._keeper

    def read(self, name: str) -> Blob:
        """Return the blob's bytes and ETag, read consistently; :class:`BlobNotFound`."""
        found = self._read(name, self._path(name))
        if found is None:
            raise BlobNotFound(name)
        return Blob(name=name, data=found[0], etag=found[1])

    def _read(self, name: str, path: str) -> tuple[bytes, str] | None:
        keeper = self.etags
        if not keeper.needs_read_lock:
            with contextlib.suppress(Busy):
                return keeper.read(path)
        with self._locked(name, fcntl.LOCK_SH):
            return keeper.read(path, locked=True)

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        """None if the blob still has ``etag``; else as :meth:`read`."""
        path = self._path(name)
        if self.etags.needs_read_lock:
            with self._locked(name, fcntl.LOCK_SH):
                current = self.etags.current(path)
        else:
            current = self.etags.current(path)
        return None if current == etag else self.read(name)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        """Write if ``condition`` holds (else :class:`PreconditionFailed`); a fresh ETag."""
        path = self._path(name)
        with self._locked(name, fcntl.LOCK_EX):
            current = self.etags.current(path)
            _check_condition(name, current, condition)
            etag = new_etag()
            self.etags.replace(path, data, etag, existing=current is not None)
        return etag

    def delete(self, name: str, condition: Condition = _UNCONDITIONAL) -> None:
        """Delete the blob. :class:`PreconditionFailed` if an ETag condition does not hold
        (a missing blob included, as in Azure), else :class:`BlobNotFound` if absent."""
        path = self._path(name)
        if condition.absent:
            raise ValueError("a create-only condition has no meaning for delete")
        with self._locked(name, fcntl.LOCK_EX):
            current = self.etags.current(path)
            _check_condition(name, current, condition)  # If-Match on a missing blob: 412
            if current is None:
                raise BlobNotFound(name)
            self.etags.remove(path)
        prune_empty_parents(path, stop=self._content)

    def list_names(self, prefix: str) -> Iterator[str]:
        """Yield the names starting with ``prefix`` in lexical order, walking only the
        directory named by the prefix's directory part."""
        directory, _, leaf = prefix.rpartition("/")
        if "/" in prefix:
            _check_name(directory)
        base = f"{directory}/" if directory else ""
        yield from _walk(os.path.join(self._content, directory), base, leaf)

    def _path(self, name: str) -> str:
        _check_name(name)
        return os.path.join(self._content, name)

    @contextlib.contextmanager
    def _locked(self, name: str, mode: int) -> Iterator[None]:
        fd = self._open_lock(_stripe(f"{self._container}/{name}"))
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    def _open_lock(self, stripe: int) -> int:
        path = os.path.join(self._locks, f"{stripe:04d}")
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            os.makedirs(self._locks, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _check_name(name: str) -> None:
    """Defence in depth: the service validates identifiers before storage is touched."""
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        raise ValueError(f"invalid blob name: {name!r}")
    for segment in name.split("/"):
        if segment in ("", ".", "..") or segment.startswith(TEMP_PREFIX):
            raise ValueError(f"invalid blob name: {name!r}")


def _check_condition(name: str, current: str | None, condition: Condition) -> None:
    if condition.absent and condition.etag is not None:
        raise ValueError("a condition is either If-Match or create-only, not both")
    if condition.absent and current is not None:
        raise PreconditionFailed(name, current)
    if condition.etag is not None and condition.etag != current:
        raise PreconditionFailed(name, current)


def _stripe(key: str) -> int:
    return zlib.crc32(key.encode("utf-8")) % LOCK_STRIPES


def _walk(directory: str, base: str, leaf: str) -> Iterator[str]:
    """Yield ``base + relative name`` of every blob under ``directory`` whose first
    segment starts with ``leaf``, in lexical order of the full name."""
    for entry_name, is_dir in _sorted_entries(directory):
        if not entry_name.startswith(leaf):
            continue
        if is_dir:
            yield from _walk(os.path.join(directory, entry_name), f"{base}{entry_name}/", "")
        else:
            yield base + entry_name


def _sorted_entries(directory: str) -> list[tuple[str, bool]]:
    """Directory entries sorted so that a depth-first walk is in lexical name order.

    A directory ``a`` sorts as ``a/``: every name below it starts with ``a/``."""
    try:
        with os.scandir(directory) as scan:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in scan]
    except (FileNotFoundError, NotADirectoryError):
        return []
    visible = [(n, d) for n, d in entries if not n.startswith(TEMP_PREFIX)]
    return sorted(visible, key=lambda item: item[0] + "/" if item[1] else item[0])
