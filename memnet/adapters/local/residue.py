"""What the embedded blob store keeps besides blobs, found and removed (the BlobStore
port's :meth:`~memnet.ports.BlobStore.remove_residue`; docs/forgetting.md).

- **Temp files** (:data:`~.durable.TEMP_PREFIX`, beside the blob, or beside its ETag
  sidecar): a write's new content before its rename. A process killed in between
  leaves one, holding the whole record it was writing (an audit record, a stored
  response). Listings never show them. A live writer holds its temp file's lock
  (:mod:`.durable`), so one nobody holds is provably orphaned.
- **Sidecars without their blob** (``.meta/``, the sidecar ETag mode): a crash between
  the blob's unlink and its sidecar's. Judged under the blob's lock stripe, which every
  write and delete of the blob holds, so a create in flight (sidecar first, then the
  blob) is never taken for one.
- **Empty directories** (removed by a forget only): their names are blob names.

Two sweeps: :func:`orphans` (at start, any process: only what no live writer owns) and
:func:`everything` (a forget: the user's writes are refused, so a write still in flight
under the prefix loses its temp file and fails, 503, rather than land after the job).
Walks are depth first with ``os.scandir``, one directory's iterator open per level:
memory does not grow with a directory's size.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from memnet.adapters.local import durable
from memnet.ports import Residue

Locked = Callable[[str], AbstractContextManager[None]]  # the blob name's lock stripe, held


def orphans(content: str, meta: str, locked: Locked) -> Residue:
    """Remove, in the whole store, the temp files no live writer holds and the sidecars
    whose blob is gone."""
    found = Residue()
    for root in (content, meta):
        for entry in _files(root, "", prune=False):
            if entry.name.startswith(durable.TEMP_PREFIX):
                size = durable.remove_if_orphaned(entry.path)
                found += Residue(1, size) if size is not None else Residue()
    return found + _sidecars(content, meta, "", locked)


def everything(content: str, meta: str, directory: str, leaf: str, locked: Locked) -> Residue:
    """Remove every temp file and blobless sidecar under ``directory`` (entries whose
    name starts with ``leaf`` at its first level), and the directories left empty; the
    directory itself too when ``leaf`` is empty (it is the prefix's own)."""
    found = _sidecars(content, meta, directory, locked, leaf)
    for root in (content, meta):
        for entry in _files(os.path.join(root, directory), leaf, prune=True):
            if entry.name.startswith(durable.TEMP_PREFIX):
                found += _unlink(entry.path)
    if directory and not leaf:
        for root in (content, meta):
            with contextlib.suppress(OSError):  # not empty (a held blob), or gone
                os.rmdir(os.path.join(root, directory))
    return found


def _sidecars(content: str, meta: str, directory: str, locked: Locked, leaf: str = "") -> Residue:
    found = Residue()
    for entry in _files(os.path.join(meta, directory), leaf, prune=False):
        if entry.name.startswith(durable.TEMP_PREFIX):
            continue
        name = os.path.relpath(entry.path, meta).replace(os.sep, "/")
        if os.path.lexists(os.path.join(content, name)):
            continue
        with locked(name):  # no write or delete of the blob is halfway now
            if not os.path.lexists(os.path.join(content, name)):
                found += _unlink(entry.path)
    return found


def _unlink(path: str) -> Residue:
    try:
        size = os.lstat(path).st_size
        os.unlink(path)
    except (FileNotFoundError, NotADirectoryError):
        return Residue()
    return Residue(1, size)


def _files(directory: str, leaf: str, prune: bool) -> Iterator[os.DirEntry[str]]:
    """Every file below ``directory`` whose first segment starts with ``leaf``, depth
    first; with ``prune``, each directory below is removed once walked, if empty."""
    try:
        scan = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return
    with scan:
        for entry in scan:
            if not entry.name.startswith(leaf):
                continue
            if entry.is_dir(follow_symlinks=False):
                yield from _files(entry.path, "", prune)
                if prune:
                    with contextlib.suppress(OSError):  # not empty: blobs live there
                        os.rmdir(entry.path)
            else:
                yield entry
