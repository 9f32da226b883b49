"""Where the embedded blob store keeps each blob's ETag.

``XattrEtags`` (the default where the filesystem supports user extended attributes,
e.g. ext4, xfs, btrfs): the ETag is an attribute of the content file itself, set on the
temp file before the atomic rename, so content and ETag change together in one
``os.replace`` and a reader that opens the file sees a consistent pair without a lock.

``SidecarEtags`` (fallback, e.g. macOS or tmpfs without user xattrs): the ETag lives in
``.meta/<container>/<name>``; readers take the shared stripe lock, and a write replaces
the ETag *before* the content (a crash in between leaves a changed ETag over old
content: clients get 412 and refetch; never new content under an ETag a client holds).

A file put in place by hand has no stored ETag; it gets a stable one from its inode,
size and mtime until the store first writes it.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Callable
from typing import Protocol

TEMP_PREFIX = ".memnet-tmp-"
ATTR = "user.memnet.etag"
_DIRECTORY_RETRIES = 20


class EtagKeeper(Protocol):
    needs_read_lock: bool

    def current(self, path: str) -> str | None: ...
    def read(self, path: str) -> tuple[bytes, str] | None: ...
    def replace(self, path: str, data: bytes, etag: str) -> None: ...
    def remove(self, path: str) -> None: ...


class XattrEtags:
    needs_read_lock = False

    def current(self, path: str) -> str | None:
        try:
            return os.getxattr(path, ATTR).decode("ascii")
        except OSError as exc:
            return _missing_attr(exc, lambda: os.stat(path))

    def read(self, path: str) -> tuple[bytes, str] | None:
        try:
            with open(path, "rb") as file:
                return file.read(), self._attr(file.fileno())
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def _attr(self, fd: int) -> str:
        try:
            return os.getxattr(fd, ATTR).decode("ascii")
        except OSError as exc:
            found = _missing_attr(exc, lambda: os.fstat(fd))
            assert found is not None  # an open regular file always has a stat
            return found

    def replace(self, path: str, data: bytes, etag: str) -> None:
        write_atomically(path, data, etag)

    def remove(self, path: str) -> None:
        unlink(path)


class SidecarEtags:
    needs_read_lock = True

    def __init__(self, content_root: str, meta_root: str) -> None:
        self._content, self._meta = content_root, meta_root

    def _sidecar(self, path: str) -> str:
        return os.path.join(self._meta, os.path.relpath(path, self._content))

    def current(self, path: str) -> str | None:
        try:
            info = os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        sidecar = read_file(self._sidecar(path))
        return sidecar.decode("ascii") if sidecar else etag_from_stat(info)

    def read(self, path: str) -> tuple[bytes, str] | None:
        etag = self.current(path)
        data = read_file(path) if etag is not None else None
        return None if data is None or etag is None else (data, etag)

    def replace(self, path: str, data: bytes, etag: str) -> None:
        write_atomically(self._sidecar(path), etag.encode("ascii"))
        write_atomically(path, data)

    def remove(self, path: str) -> None:
        unlink(path)
        unlink(self._sidecar(path))
        prune_empty_parents(self._sidecar(path), stop=self._meta)


def keeper_for(content_root: str, meta_root: str, mode: str) -> EtagKeeper:
    """``mode`` is ``xattr``, ``sidecar`` or ``auto`` (xattr if the filesystem allows)."""
    if mode == "auto":
        mode = "xattr" if xattrs_supported(content_root) else "sidecar"
    if mode == "xattr":
        return XattrEtags()
    if mode == "sidecar":
        return SidecarEtags(content_root, meta_root)
    raise ValueError(f"unknown ETag mode {mode!r}")


def xattrs_supported(directory: str) -> bool:
    os.makedirs(directory, exist_ok=True)
    probe = os.path.join(directory, f"{TEMP_PREFIX}probe-{secrets.token_hex(4)}")
    try:
        with open(probe, "wb") as file:
            os.setxattr(file.fileno(), ATTR, b"probe")
        return True
    except (OSError, AttributeError):  # AttributeError: no os.setxattr on this platform
        return False
    finally:
        unlink(probe)


def _missing_attr(exc: OSError, stat_of: Callable[[], os.stat_result]) -> str | None:
    if isinstance(exc, FileNotFoundError | NotADirectoryError):
        return None
    if exc.errno != errno.ENODATA:
        raise exc
    info = stat_of()
    return etag_from_stat(info) if stat.S_ISREG(info.st_mode) else None


def new_etag() -> str:
    return f'"0x{secrets.token_hex(8).upper()}"'


def etag_from_stat(info: os.stat_result) -> str:
    key = f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}".encode("ascii")
    return f'"0x{hashlib.sha256(key).hexdigest()[:16].upper()}"'


def read_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return file.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def write_atomically(path: str, data: bytes, etag: str | None = None) -> None:
    """Give ``path`` the content ``data`` (and ETag attribute) in one ``os.replace``."""
    fd, temp = _create_temp(os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            if etag is not None:
                os.setxattr(file.fileno(), ATTR, etag.encode("ascii"))
        os.replace(temp, path)
    except IsADirectoryError as exc:
        unlink(temp)
        raise ValueError(f"{path} clashes with existing blob names below it") from exc
    except BaseException:
        unlink(temp)
        raise


def _create_temp(directory: str) -> tuple[int, str]:
    """Create a temp file in ``directory`` (made as needed); retries because a concurrent
    delete may prune a directory just created."""
    for _ in range(_DIRECTORY_RETRIES):
        temp = os.path.join(directory, f"{TEMP_PREFIX}{secrets.token_hex(8)}")
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), temp
        except FileNotFoundError:
            _make_directory(directory)
        except (NotADirectoryError, FileExistsError) as exc:
            raise ValueError(f"{directory} clashes with an existing blob name") from exc
    raise OSError(f"could not create a file in {directory}")


def _make_directory(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except FileNotFoundError:
        pass  # a concurrent delete pruned a parent meanwhile: the caller retries
    except FileExistsError as exc:  # makedirs also says this when a prune raced it
        if os.path.lexists(directory) and not os.path.isdir(directory):
            raise ValueError(f"{directory} clashes with an existing blob name") from exc
    except NotADirectoryError as exc:
        raise ValueError(f"{directory} clashes with an existing blob name") from exc


def unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(path)


def prune_empty_parents(path: str, stop: str) -> None:
    """Remove directories emptied by a delete, best effort (another writer may race)."""
    parent = os.path.dirname(path)
    while parent != stop and parent.startswith(stop + os.sep):
        try:
            os.rmdir(parent)
        except OSError:
            return
        parent = os.path.dirname(parent)
