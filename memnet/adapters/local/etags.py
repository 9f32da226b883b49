"""Where the embedded blob store keeps each blob's ETag.

``XattrEtags`` (the default where the filesystem supports user extended attributes,
e.g. ext4, xfs, btrfs): the ETag is the attribute ``user.memnet.etag`` of the content
file itself, set on the temp file before it is fsynced and renamed into place, so content
and ETag change together in one ``os.replace``. A file in place is never written again
(the next version is a new file), so a reader that opens it reads one consistent pair
without a lock.

``SidecarEtags`` (fallback, e.g. macOS or tmpfs without user xattrs): the ETag lives in
``.meta/<container>/<name>``; readers take the shared stripe lock, and a write replaces
the ETag *before* the content, each durably (a crash in between leaves a changed ETag
over old content: clients get 412 and refetch; never new content under an ETag a client
holds).

A file put in place by hand has no stored ETag; it gets a stable one from its inode,
size and mtime until the store first writes it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from typing import Protocol, TypeVar

from memnet.adapters.local import durable

ATTR = "user.memnet.etag"
_READ_SIZE = 1 << 16
T = TypeVar("T")


class EtagKeeper(Protocol):
    needs_read_lock: bool

    def current(self, path: str) -> str | None: ...
    def read(self, path: str, max_bytes: int | None) -> tuple[bytes, str] | None: ...
    def replace(self, path: str, data: bytes, etag: str) -> None: ...
    def remove(self, path: str) -> None: ...


class XattrEtags:
    needs_read_lock = False

    def __init__(self, sync: bool) -> None:
        self._sync = sync

    def current(self, path: str) -> str | None:
        try:
            value = os.getxattr(path, ATTR)
        except OSError as exc:
            return _missing_attr(exc, lambda: os.stat(path))
        return _etag(value, lambda: os.stat(path))

    def read(self, path: str, max_bytes: int | None) -> tuple[bytes, str] | None:
        def pair(fd: int) -> tuple[bytes, str]:
            value = _attr(fd)
            return read_content(fd, max_bytes), _etag(value, lambda: os.fstat(fd))

        return _with_file(path, pair)

    def replace(self, path: str, data: bytes, etag: str) -> None:
        durable.replace(path, data, (ATTR, etag.encode("ascii")), self._sync)

    def remove(self, path: str) -> None:
        durable.remove(path, self._sync)


class TooLarge(Exception):
    """Internal: the file holds more than the read's bound ``max_bytes`` (the store names
    the blob); ``size``: its size as far as it was learnt."""

    def __init__(self, size: int, max_bytes: int) -> None:
        super().__init__(f"{size} bytes, more than {max_bytes}")
        self.size, self.max_bytes = size, max_bytes


def _with_file(path: str, use: Callable[[int], T]) -> T | None:
    """``use`` applied to the open file; None when there is no file (a directory
    included: reading one raises :class:`IsADirectoryError`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        return use(fd)
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)


def read_content(fd: int, max_bytes: int | None) -> bytes:
    """The file's bytes. With ``max_bytes``, :class:`TooLarge` when it holds more: a
    regular file's size is checked before any byte is read, and no more than
    ``max_bytes + 1`` bytes are read even from a file that grows meanwhile (one placed
    by hand can be appended to) or that has no size to check."""
    if max_bytes is None:
        return _read_up_to(fd, None)
    info = os.fstat(fd)
    if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
        raise TooLarge(info.st_size, max_bytes)
    data = _read_up_to(fd, max_bytes + 1)
    if len(data) > max_bytes:
        raise TooLarge(len(data), max_bytes)
    return data


def _read_up_to(fd: int, limit: int | None) -> bytes:
    """Read to the end, or ``limit`` bytes; on a regular file a short read is the end."""
    chunks = []
    left = limit
    while left is None or left > 0:
        wanted = _READ_SIZE if left is None else min(_READ_SIZE, left)
        chunk = os.read(fd, wanted)
        chunks.append(chunk)
        if left is not None:
            left -= len(chunk)
        if len(chunk) < wanted:
            break
    return b"".join(chunks)


def _attr(fd: int) -> bytes | None:
    try:
        return os.getxattr(fd, ATTR)
    except OSError as exc:
        if exc.errno == errno.ENODATA:
            return None
        raise


def _etag(value: bytes | None, stat_of: Callable[[], os.stat_result]) -> str:
    """The stored ETag; from the file's stat when there is none, or when the value is not
    an ETag (left by an interrupted write of an older version of this store)."""
    if value is None or not value.startswith(b'"'):
        return etag_from_stat(stat_of())
    return value.partition(b" ")[0].decode("ascii")  # older versions appended a tag


def _missing_attr(exc: OSError, stat_of: Callable[[], os.stat_result]) -> str | None:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return None
    if exc.errno != errno.ENODATA:
        raise exc
    info = stat_of()
    return etag_from_stat(info) if stat.S_ISREG(info.st_mode) else None


class SidecarEtags:
    needs_read_lock = True

    def __init__(self, content_root: str, meta_root: str, sync: bool) -> None:
        self._content, self._meta, self._sync = content_root, meta_root, sync

    def _sidecar(self, path: str) -> str:
        return os.path.join(self._meta, os.path.relpath(path, self._content))

    def current(self, path: str) -> str | None:
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        sidecar = durable.read_file(self._sidecar(path))
        return sidecar.decode("ascii") if sidecar else etag_from_stat(info)

    def read(self, path: str, max_bytes: int | None) -> tuple[bytes, str] | None:
        etag = self.current(path)
        if etag is None:
            return None
        data = _with_file(path, lambda fd: read_content(fd, max_bytes))
        return None if data is None else (data, etag)

    def replace(self, path: str, data: bytes, etag: str) -> None:
        durable.replace(self._sidecar(path), etag.encode("ascii"), None, self._sync)
        durable.replace(path, data, None, self._sync)

    def remove(self, path: str) -> None:
        durable.remove(path, self._sync)
        # A sidecar without its blob is never read, and the next create replaces it.
        durable.unlink(self._sidecar(path))
        durable.prune_empty_parents(self._sidecar(path), stop=self._meta)


def keeper_for(content_root: str, meta_root: str, mode: str, sync: bool) -> EtagKeeper:
    """``mode`` is ``xattr``, ``sidecar`` or ``auto`` (xattr if the filesystem allows)."""
    if mode == "auto":
        mode = "xattr" if xattrs_supported(content_root) else "sidecar"
    if mode == "xattr":
        return XattrEtags(sync)
    if mode == "sidecar":
        return SidecarEtags(content_root, meta_root, sync)
    raise ValueError(f"unknown ETag mode {mode!r}")


def xattrs_supported(directory: str) -> bool:
    probe = os.path.join(directory, f"{durable.TEMP_PREFIX}probe-{secrets.token_hex(4)}")
    try:
        with open(probe, "wb") as file:
            os.setxattr(file.fileno(), ATTR, b"probe")
        return True
    except (OSError, AttributeError):  # AttributeError: no os.setxattr on this platform
        return False
    finally:
        durable.unlink(probe)


def new_etag() -> str:
    return f'"0x{secrets.token_hex(8).upper()}"'


def etag_from_stat(info: os.stat_result) -> str:
    key = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}".encode("ascii")
    return f'"0x{hashlib.sha256(key).hexdigest()[:16].upper()}"'
