"""The embedded :class:`~memnet.ports.BlobStore`: blobs as plain files
(docs/architecture.md, "Blob semantics everywhere").

Layout under ``root`` (the same names as in Azure, so a user can ``cat`` a document)::

    <container>/<name>          the blob's bytes, verbatim
    .meta/<container>/<name>    the blob's ETag, only where the filesystem lacks xattrs
    .locks/<NNNN>               1024 striped lock files, created on demand, never deleted

Where each ETag lives is in :mod:`memnet.adapters.local.etags`; how a file is replaced,
in :mod:`memnet.adapters.local.durable`.

Concurrency: a write or delete holds an exclusive ``fcntl.flock`` on the name's lock
stripe while it checks the condition and replaces the file. ``flock`` locks belong to an
open file description, so they exclude threads (each call opens the lock file itself)
and processes alike. Reads need no lock with xattr ETags (content and ETag are one file,
never changed once in place); with sidecars they take the shared lock. POSIX only.

Durability: with ``fsync`` (the default) every write and delete is durable when it
returns: temp file fsynced, renamed, directory fsynced (new directories too, up the
chain). An acknowledged write survives a crash of the process and a power loss. An I/O
error (``EIO`` from fsync, a full disk, ...) is :class:`StorageUnavailable`: 503, retry.
``fsync=False`` (tests, benchmarks) keeps only the crash-of-the-process guarantee.

Residue (:mod:`memnet.adapters.local.residue`): a process killed mid-write leaves its
temp file, which listings never show. On first use in a process the store removes every
temp file no live writer holds, and ETag sidecars whose blob is gone; a forget removes
everything of the kind under the user's prefix (:meth:`FileBlobStore.remove_residue`).
"""

from __future__ import annotations

import contextlib
import fcntl
import heapq
import logging
import os
import re
import threading
import zlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path

from memnet.adapters.local import durable, residue
from memnet.adapters.local.etags import EtagKeeper, TooLarge, keeper_for, new_etag
from memnet.ports import (
    Blob,
    BlobInfo,
    BlobNotFound,
    BlobPage,
    BlobTooLarge,
    Condition,
    PreconditionFailed,
    Residue,
    StorageUnavailable,
    check_bound,
    check_folder,
)

LOCK_STRIPES = 1024
_CONTAINER = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_UNCONDITIONAL = Condition()
log = logging.getLogger("memnet.adapters.local.blobstore")


class FileBlobStore:
    """Blob semantics on the local filesystem: per-blob conditional writes with ETags,
    create-only writes, prefix listing, no multi-blob transactions.

    ``etags`` is ``auto`` (xattrs where supported, else sidecars), ``xattr`` or
    ``sidecar``; ``fsync`` False gives up durability across power loss (see above). Both
    are settled on first use, not in the constructor."""

    def __init__(
        self, root: Path, container: str = "memnet", etags: str = "auto", fsync: bool = True
    ) -> None:
        if not _CONTAINER.fullmatch(container):
            raise ValueError(f"invalid container name: {container!r}")
        self._root = str(root)
        self._container = container
        self._content = os.path.join(self._root, container)
        self._meta = os.path.join(self._root, ".meta", container)
        self._locks = os.path.join(self._root, ".locks")
        self._mode = etags
        self.fsync = fsync
        self._keeper: EtagKeeper | None = None
        self._opening = threading.Lock()

    def describe(self) -> str:
        return "local files"  # no path: health is unauthenticated

    @property
    def etags(self) -> EtagKeeper:
        if self._keeper is None:
            with self._opening, _storage_errors(self._container):
                if self._keeper is None:
                    self._keeper = self._open()
        return self._keeper

    def _open(self) -> EtagKeeper:
        """Make the content directory (and, once, every directory above it) durable,
        then remove what writes of dead processes left (module doc)."""
        durable.make_directories(self._content, self.fsync)
        if self.fsync:
            durable.sync_ancestors(self._content)
        keeper = keeper_for(self._content, self._meta, self._mode, self.fsync)
        self._remove_orphans()
        return keeper

    def _remove_orphans(self) -> None:
        """Best effort: a file that cannot be removed now is left for the next start."""
        try:
            found = residue.orphans(self._content, self._meta, self._blob_lock)
        except OSError as exc:
            log.warning("leftovers of interrupted writes not removed: %s", exc)
            return
        if found.files:
            log.warning("removed %d leftover files of interrupted writes", found.files)

    def remove_residue(self, prefix: str) -> Residue:
        """Every temp file and blobless sidecar under ``prefix``, in flight or not, and
        the directories left empty (the port's contract; :mod:`.residue`)."""
        directory, _, leaf = prefix.rpartition("/")
        if "/" in prefix:
            _check_name(directory)
        with _storage_errors(prefix):
            return residue.everything(self._content, self._meta, directory, leaf, self._blob_lock)

    def _blob_lock(self, name: str) -> AbstractContextManager[None]:
        return self._locked(name, fcntl.LOCK_EX)

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        """Return the blob's bytes and ETag, read consistently; :class:`BlobNotFound`.
        A file larger than ``max_bytes`` is :class:`BlobTooLarge`, found by ``fstat``
        on the open file before any byte is read (:func:`.etags.read_content`)."""
        check_bound(max_bytes)
        path = self._path(name)
        try:
            with _storage_errors(name), self._reading(name):
                found = self.etags.read(path, max_bytes)
        except TooLarge as error:
            raise BlobTooLarge(name, error.size, error.max_bytes) from None
        if found is None:
            raise BlobNotFound(name)
        return Blob(name=name, data=found[0], etag=found[1])

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        """None if the blob still has ``etag``; else as :meth:`read`."""
        path = self._path(name)
        with _storage_errors(name), self._reading(name):
            current = self.etags.current(path)
        return None if current == etag else self.read(name)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        """Write if ``condition`` holds (else :class:`PreconditionFailed`); a fresh ETag."""
        path = self._path(name)
        with _storage_errors(name), self._locked(name, fcntl.LOCK_EX):
            _check_condition(name, self.etags.current(path), condition)
            etag = new_etag()
            self.etags.replace(path, data, etag)
        return etag

    def delete(self, name: str, condition: Condition = _UNCONDITIONAL) -> None:
        """Delete the blob. :class:`PreconditionFailed` if an ETag condition does not hold
        (a missing blob included, as in Azure), else :class:`BlobNotFound` if absent."""
        path = self._path(name)
        if condition.absent:
            raise ValueError("a create-only condition has no meaning for delete")
        with _storage_errors(name), self._locked(name, fcntl.LOCK_EX):
            current = self.etags.current(path)
            _check_condition(name, current, condition)  # If-Match on a missing blob: 412
            if current is None:
                raise BlobNotFound(name)
            self.etags.remove(path)
        durable.prune_empty_parents(path, stop=self._content)

    def list_names(self, prefix: str) -> Iterator[str]:
        """Yield the names starting with ``prefix`` in lexical order, walking only the
        directory named by the prefix's directory part."""
        directory, _, leaf = prefix.rpartition("/")
        if "/" in prefix:
            _check_name(directory)
        base = f"{directory}/" if directory else ""
        with _storage_errors(prefix):
            yield from _walk(os.path.join(self._content, directory), base, leaf)

    def list_folder(self, prefix: str) -> Iterator[str]:
        """The entries of the prefix's directory (one ``scandir``): files as blob names,
        directories as folder names ending in ``/``."""
        check_folder(prefix)
        if prefix:
            _check_name(prefix[:-1])
        with _storage_errors(prefix):
            try:
                with os.scandir(os.path.join(self._content, prefix)) as scan:
                    keys = [
                        entry.name + "/" if entry.is_dir(follow_symlinks=False) else entry.name
                        for entry in scan
                        if not entry.name.startswith(durable.TEMP_PREFIX)
                    ]
            except (FileNotFoundError, NotADirectoryError):
                return
        for key in sorted(keys):  # a directory sorts as its names do: "a/" after "a.json"
            yield prefix + key

    def list_page(self, prefix: str, continuation: str | None, limit: int) -> BlobPage:
        """Up to ``limit`` blobs after the name ``continuation`` (the last name of the
        previous page), with the file's mtime as ``last_modified``. Resuming skips whole
        directories that sort before the continuation, so a page costs the directories
        on its path, not the blobs before it. Memory is bounded by ``limit``: a
        directory's entries are kept ``limit`` at a time (see :func:`_walk`), so a page
        of a directory of ``n`` entries scans it once (``O(n log limit)``) and holds
        ``limit`` names, never ``n``. A blob deleted between the walk and its ``stat``
        is left out."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        directory, _, leaf = prefix.rpartition("/")
        if "/" in prefix:
            _check_name(directory)
        base = f"{directory}/" if directory else ""
        root = os.path.join(self._content, directory)
        with _storage_errors(prefix):
            names = list(islice(_walk(root, base, leaf, continuation, limit), limit))
            items = tuple(info for info in map(self._info, names) if info is not None)
        more = len(names) == limit
        return BlobPage(items, names[-1] if more else None)

    def _info(self, name: str) -> BlobInfo | None:
        try:
            found = os.stat(os.path.join(self._content, name))
        except FileNotFoundError:
            return None
        return BlobInfo(name, datetime.fromtimestamp(found.st_mtime, UTC), found.st_size)

    def _path(self, name: str) -> str:
        _check_name(name)
        return os.path.join(self._content, name)

    def _reading(self, name: str) -> AbstractContextManager[None]:
        if self.etags.needs_read_lock:
            return self._locked(name, fcntl.LOCK_SH)
        return contextlib.nullcontext()

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
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            os.makedirs(self._locks, exist_ok=True)  # lock files need no durability
            return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


@contextlib.contextmanager
def _storage_errors(name: str) -> Iterator[None]:
    """An I/O failure (EIO from fsync, a full or read-only disk, ...) is a dependency
    failure (503, retry), never a 500; the write it interrupted was not acknowledged."""
    try:
        yield
    except OSError as exc:
        raise StorageUnavailable(f"local storage failed on {name}: {exc}") from exc


def _check_name(name: str) -> None:
    """Defence in depth: the service validates identifiers before storage is touched."""
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        raise ValueError(f"invalid blob name: {name!r}")
    for segment in name.split("/"):
        if segment in ("", ".", "..") or segment.startswith(durable.TEMP_PREFIX):
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


def _walk(
    directory: str, base: str, leaf: str, after: str | None = None, chunk: int | None = None
) -> Iterator[str]:
    """Yield ``base + relative name`` of every blob under ``directory`` whose first
    segment starts with ``leaf``, in lexical order of the full name; only names after
    ``after`` when it is given (a subtree wholly before it is not entered).

    ``chunk`` None sorts each directory's entries at once (one scan; memory grows with
    the directory). A ``chunk`` keeps at most that many entries of a directory at a
    time: each scan keeps the ``chunk`` smallest entries after the last one yielded
    (``heapq.nsmallest``), so memory is bounded by ``chunk`` per level and a directory
    of ``n`` entries costs ``n / chunk`` scans."""
    relative = after[len(base) :] if after is not None and after.startswith(base) else None
    last: str | None = None  # sort key of the last entry handled (chunked scans)
    while True:
        entries = _sorted_entries(directory, leaf, relative, last, chunk)
        for _key, entry_name, is_dir in entries:
            full = base + entry_name
            if is_dir:
                yield from _walk(os.path.join(directory, entry_name), full + "/", "", after, chunk)
            else:
                yield full
        if chunk is None or len(entries) < chunk:
            return
        last = entries[-1][0]


def _sorted_entries(
    directory: str, leaf: str, after: str | None, last: str | None, chunk: int | None
) -> list[tuple[str, str, bool]]:
    """``(sort key, name, is_dir)`` of the directory's entries starting with ``leaf``,
    sorted so that a depth-first walk is in lexical name order: a directory ``a`` sorts
    as ``a/`` (every name below it starts with ``a/``). Left out: temp files, files not
    after ``after`` (relative to this directory), directories wholly before it, entries
    not after the key ``last``; only the ``chunk`` smallest when ``chunk`` is given."""
    try:
        with os.scandir(directory) as scan:
            entries = _entries(scan, leaf, after, last)
            if chunk is None:
                return sorted(entries)
            return heapq.nsmallest(chunk, entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _entries(
    scan: Iterator[os.DirEntry[str]], leaf: str, after: str | None, last: str | None
) -> Iterator[tuple[str, str, bool]]:
    for entry in scan:
        name = entry.name
        if not name.startswith(leaf) or name.startswith(durable.TEMP_PREFIX):
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        key = name + "/" if is_dir else name
        if last is not None and key <= last:
            continue
        if after is not None and key <= after and not (is_dir and after.startswith(key)):
            continue
        yield key, name, is_dir
