"""The embedded :class:`~memnet.ports.BlobStore`: blobs as plain files (ARCHITECTURE.md 1).

Layout under ``root`` (the same names as in Azure, so a user can ``cat`` a document)::

    <container>/<name>          the blob's bytes, verbatim
    .meta/<container>/<name>    the blob's ETag (sidecar)
    .locks/<NNNN>               1024 striped lock files, created on demand, never deleted

Concurrency: a write or delete holds an exclusive ``fcntl.flock`` on the name's lock
stripe while it checks the condition and replaces the files; a read holds a shared one.
``flock`` locks belong to an open file description, so they exclude threads (each call
opens the lock file itself) and processes alike. POSIX only.

Crash safety: every file is replaced atomically (temp file in the same directory, then
``os.replace``); the new ETag is written *before* the new content and content is deleted
*before* its ETag. A crash in between therefore leaves a changed ETag over old content
(clients get 412 and refetch), never new content under an ETag a client already holds.

Durability: no ``fsync``. A write survives a crash of the process, not necessarily a
power loss or kernel crash, where the last writes may be lost. That is the trade for an
embedded development and single-node store; Azure Blob is the durable deployment.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path

from memnet.ports import Blob, BlobNotFound, Condition, PreconditionFailed

LOCK_STRIPES = 1024
_TEMP_PREFIX = ".memnet-tmp-"
_CONTAINER = re.compile(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]")
_DIRECTORY_RETRIES = 20
_UNCONDITIONAL = Condition()


class FileBlobStore:
    """Blob semantics on the local filesystem: per-blob conditional writes with ETags,
    create-only writes, prefix listing, no multi-blob transactions."""

    def __init__(self, root: Path, container: str = "memnet") -> None:
        if not _CONTAINER.fullmatch(container):
            raise ValueError(f"invalid container name: {container!r}")
        self._root = Path(root)
        self._container = container
        self._content = self._root / container
        self._meta = self._root / ".meta" / container
        self._locks = self._root / ".locks"

    def describe(self) -> str:
        return f"local files at {self._content}"

    def read(self, name: str) -> Blob:
        """Return the blob's bytes and ETag, read consistently; :class:`BlobNotFound`."""
        _check_name(name)
        with self._locked(name, fcntl.LOCK_SH):
            etag = self._current_etag(name)
            data = _read_file(self._content / name) if etag is not None else None
        if etag is None or data is None:
            raise BlobNotFound(name)
        return Blob(name=name, data=data, etag=etag)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        """Write if ``condition`` holds (else :class:`PreconditionFailed`); a fresh ETag."""
        _check_name(name)
        with self._locked(name, fcntl.LOCK_EX):
            _check_condition(name, self._current_etag(name), condition)
            etag = _new_etag()
            _replace_file(self._meta / name, etag.encode("ascii"))
            _replace_file(self._content / name, data)
        return etag

    def delete(self, name: str, condition: Condition = _UNCONDITIONAL) -> None:
        """Delete content, then ETag. :class:`PreconditionFailed` if an ETag condition
        does not hold (a missing blob included, as in Azure), else :class:`BlobNotFound`
        if the blob is absent."""
        _check_name(name)
        if condition.absent:
            raise ValueError("a create-only condition has no meaning for delete")
        with self._locked(name, fcntl.LOCK_EX):
            current = self._current_etag(name)
            _check_condition(name, current, condition)  # If-Match on a missing blob: 412
            if current is None:
                raise BlobNotFound(name)
            _unlink(self._content / name)
            _unlink(self._meta / name)
        _prune_empty_parents(self._content / name, stop=self._content)
        _prune_empty_parents(self._meta / name, stop=self._meta)

    def list_names(self, prefix: str) -> Iterator[str]:
        """Yield the names starting with ``prefix`` in lexical order, walking only the
        directory named by the prefix's directory part."""
        directory, _, leaf = prefix.rpartition("/")
        if "/" in prefix:
            _check_name(directory)
        base = f"{directory}/" if directory else ""
        yield from _walk(self._content / directory, base, leaf)

    def _current_etag(self, name: str) -> str | None:
        """The ETag of an existing blob, or ``None``; call with the stripe locked."""
        try:
            info = os.stat(self._content / name)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        sidecar = _read_file(self._meta / name)
        return sidecar.decode("ascii") if sidecar else _etag_from_stat(info)

    @contextlib.contextmanager
    def _locked(self, name: str, mode: int) -> Iterator[None]:
        fd = self._open_lock(_stripe(f"{self._container}/{name}"))
        try:
            fcntl.flock(fd, mode)
            yield
        finally:
            os.close(fd)  # closing the last descriptor releases the flock

    def _open_lock(self, stripe: int) -> int:
        path = self._locks / f"{stripe:04d}"
        try:
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            self._locks.mkdir(parents=True, exist_ok=True)
            return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _check_name(name: str) -> None:
    """Defence in depth: the service validates identifiers before storage is touched."""
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        raise ValueError(f"invalid blob name: {name!r}")
    for segment in name.split("/"):
        if segment in ("", ".", "..") or segment.startswith(_TEMP_PREFIX):
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


def _new_etag() -> str:
    return f'"0x{secrets.token_hex(8).upper()}"'


def _etag_from_stat(info: os.stat_result) -> str:
    """A stable ETag for a file placed without a sidecar (e.g. copied in by hand)."""
    key = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}".encode("ascii")
    return f'"0x{hashlib.sha256(key).hexdigest()[:16].upper()}"'


def _read_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def _replace_file(path: Path, data: bytes) -> None:
    """Atomically give ``path`` the content ``data`` (temp file + ``os.replace``)."""
    temp = _create_temp(path.parent)
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    except IsADirectoryError as e:
        _unlink(temp)
        raise ValueError(f"{path} clashes with existing blob names below it") from e
    except BaseException:
        _unlink(temp)
        raise


def _create_temp(directory: Path) -> Path:
    """Create an empty temp file in ``directory``, creating the directory as needed.

    Retries because a concurrent delete may prune a directory we just created."""
    for _ in range(_DIRECTORY_RETRIES):
        temp = directory / f"{_TEMP_PREFIX}{secrets.token_hex(8)}"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
            return temp
        except FileNotFoundError:
            continue
        except (NotADirectoryError, FileExistsError) as e:
            raise ValueError(f"{directory} clashes with an existing blob name") from e
    raise OSError(f"could not create a file in {directory}")


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _prune_empty_parents(path: Path, stop: Path) -> None:
    """Remove directories emptied by a delete, best effort (another writer may race)."""
    parent = path.parent
    while parent != stop and stop in parent.parents:
        try:
            parent.rmdir()
        except OSError:
            return
        parent = parent.parent


def _walk(directory: Path, base: str, leaf: str) -> Iterator[str]:
    """Yield ``base + relative name`` of every blob under ``directory`` whose first
    segment starts with ``leaf``, in lexical order of the full name."""
    for entry_name, is_dir in _sorted_entries(directory):
        if not entry_name.startswith(leaf):
            continue
        if is_dir:
            yield from _walk(directory / entry_name, f"{base}{entry_name}/", "")
        else:
            yield base + entry_name


def _sorted_entries(directory: Path) -> list[tuple[str, bool]]:
    """Directory entries sorted so that a depth-first walk is in lexical name order.

    A directory ``a`` sorts as ``a/``: every name below it starts with ``a/``."""
    try:
        with os.scandir(directory) as scan:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in scan]
    except (FileNotFoundError, NotADirectoryError):
        return []
    visible = [(n, d) for n, d in entries if not n.startswith(_TEMP_PREFIX)]
    return sorted(visible, key=lambda item: item[0] + "/" if item[1] else item[0])
