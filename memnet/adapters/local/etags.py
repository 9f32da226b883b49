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
import random
import secrets
import stat
import time
from collections.abc import Callable
from typing import Protocol

from memnet.adapters.local.exchange import exchange
from memnet.adapters.local.spares import ATTR, WRITING, SparePool, attr_value, tag

TEMP_PREFIX = ".memnet-tmp-"
_DIRECTORY_RETRIES = 40


class EtagKeeper(Protocol):
    needs_read_lock: bool

    def current(self, path: str) -> str | None: ...
    def read(self, path: str, locked: bool = False) -> tuple[bytes, str] | None: ...
    def replace(self, path: str, data: bytes, etag: str, existing: bool) -> None: ...
    def remove(self, path: str) -> None: ...


class Busy(Exception):
    """An unlocked read kept meeting a write in progress: read under the stripe lock."""


class XattrEtags:
    """ETags as an attribute of the content file, and displaced files reused (see
    :mod:`.spares` for why, and for the attribute protocol that keeps reads consistent)."""

    needs_read_lock = False

    def __init__(self, content_root: str, spare_dir: str) -> None:
        self._skip = len(content_root)  # paths are content_root + "/" + name
        self._pool = SparePool(spare_dir)

    def current(self, path: str) -> str | None:
        try:
            value = os.getxattr(path, ATTR)
        except OSError as exc:
            return _missing_attr(exc, lambda: os.stat(path))
        return _etag(value, lambda: os.stat(path))

    def read(self, path: str, locked: bool = False) -> tuple[bytes, str] | None:
        """The blob's bytes and ETag. Unlocked, a read that overlapped a write of the
        inode it opened is retried, and after a few tries :class:`Busy` is raised; under
        the stripe lock the inode at ``path`` cannot change (``WRITING`` there means a
        writer died after placing complete content: the ETag then comes from its stat)."""
        expected = tag(path[self._skip :])
        for _ in range(1 if locked else _UNLOCKED_READS):
            found = _read_once(path, expected, locked)
            if found is not _TORN:
                return found
        raise Busy(path)

    def replace(self, path: str, data: bytes, etag: str, existing: bool) -> None:
        value = attr_value(etag, path[self._skip :])
        taken = self._pool.take()
        if taken is None:
            write_atomically(path, data, value, existing, self._pool)
            return
        fd, spare = taken
        try:
            _write_all(fd, data)
            os.ftruncate(fd, len(data))  # cut what the spare held beyond the new content
            try:
                swapped = _place(spare, path, existing, make_directory=False)
            except FileNotFoundError as exc:  # a new directory, or .spare/ was removed:
                if not isinstance(exc, _SpareGone):  # a new file pins the directory
                    self._pool.give_back(spare)
                write_atomically(path, data, value, existing, self._pool)
                return
            except BaseException:
                self._pool.give_back(spare)
                raise
            os.setxattr(fd, ATTR, value)  # only in place: see .spares
        finally:
            os.close(fd)
        if swapped:
            self._pool.keep(spare, pooled=True)

    def remove(self, path: str) -> None:
        try:
            spare = self._pool.new_name()
            os.rename(path, spare)
        except OSError:  # the blob is gone already, or .spare/ is: delete outright
            unlink(path)
            return
        self._pool.keep(spare, pooled=True)


_UNLOCKED_READS = 3
_READ_SIZE = 1 << 16
_TORN = (b"", "")  # a read that overlapped a write of its inode (never a real result)


def _read_once(path: str, expected: bytes, locked: bool) -> tuple[bytes, str] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        before, data, after = _attr(fd), _read_all(fd), _attr(fd)
        if not locked and (before != after or not _settled(before, expected)):
            return _TORN
        return data, _etag(before, lambda: os.fstat(fd))
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    """Read to the end; on a regular file a short read is the end (a concurrent change is
    caught by the attribute check, or excluded by the lock)."""
    chunks = []
    while True:
        chunk = os.read(fd, _READ_SIZE)
        chunks.append(chunk)
        if len(chunk) < _READ_SIZE:
            return b"".join(chunks)


def _attr(fd: int) -> bytes | None:
    try:
        return os.getxattr(fd, ATTR)
    except OSError as exc:
        if exc.errno == errno.ENODATA:
            return None
        raise


def _settled(value: bytes | None, expected: bytes) -> bool:
    """Not mid-write, and (if tagged) this path's content."""
    if value is None:
        return True
    if value == WRITING:
        return False
    _, _, found = value.partition(b" ")
    return not found or found == expected


def _etag(value: bytes | None, stat_of: Callable[[], os.stat_result]) -> str:
    if value is None or value == WRITING:
        return etag_from_stat(stat_of())
    return value.partition(b" ")[0].decode("ascii")


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

    def read(self, path: str, locked: bool = True) -> tuple[bytes, str] | None:
        etag = self.current(path)
        data = read_file(path) if etag is not None else None
        return None if data is None or etag is None else (data, etag)

    def replace(self, path: str, data: bytes, etag: str, existing: bool) -> None:
        write_atomically(self._sidecar(path), etag.encode("ascii"), existing=existing)
        write_atomically(path, data, existing=existing)

    def remove(self, path: str) -> None:
        unlink(path)
        unlink(self._sidecar(path))
        prune_empty_parents(self._sidecar(path), stop=self._meta)


def keeper_for(content_root: str, meta_root: str, spare_dir: str, mode: str) -> EtagKeeper:
    """``mode`` is ``xattr``, ``sidecar`` or ``auto`` (xattr if the filesystem allows)."""
    if mode == "auto":
        mode = "xattr" if xattrs_supported(content_root) else "sidecar"
    if mode == "xattr":
        return XattrEtags(content_root, spare_dir)
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


def write_atomically(
    path: str,
    data: bytes,
    attr: bytes | None = None,
    existing: bool = False,
    pool: SparePool | None = None,
) -> None:
    """Give ``path`` the content ``data`` (and ETag attribute) in one atomic rename of a
    new file: a swap when ``path`` is known to be an ``existing`` file (see
    :mod:`.exchange`), after which the old file goes to ``pool`` or is deleted."""
    fd, temp = _create_temp(os.path.dirname(path))
    try:
        try:  # the descriptor itself: a file object would cost an fstat and objects
            _write_all(fd, data)
            if attr is not None:
                os.setxattr(fd, ATTR, attr)
        finally:
            os.close(fd)
        swapped = _place(temp, path, existing)
    except BaseException:
        unlink(temp)
        raise
    if swapped and pool is not None:
        pool.keep(temp, pooled=False)
    elif swapped:
        unlink(temp)


def _place(temp: str, path: str, existing: bool, make_directory: bool = True) -> bool:
    """Move ``temp`` to ``path``; True if it was a swap (``temp`` now holds the old file).
    A missing directory of ``path`` is made (``make_directory``) or raises
    FileNotFoundError; a missing ``temp`` raises :class:`_SpareGone`."""
    for attempt in range(_DIRECTORY_RETRIES):
        try:
            if existing and exchange(temp, path):
                return True
            os.replace(temp, path)
            return False
        except FileNotFoundError as exc:
            if not os.path.lexists(temp):
                raise _SpareGone(temp) from exc
            if not make_directory:
                raise
            _back_off(attempt)
            _make_directory(os.path.dirname(path))
        except (IsADirectoryError, NotADirectoryError) as exc:
            raise ValueError(f"{path} clashes with existing blob names") from exc
    raise OSError(f"could not place a file in {os.path.dirname(path)}")


class _SpareGone(FileNotFoundError):
    """The file to be placed no longer exists (its directory was removed)."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _create_temp(directory: str) -> tuple[int, str]:
    """Create a temp file in ``directory`` (made as needed); retries because a concurrent
    delete may prune a directory just created."""
    for attempt in range(_DIRECTORY_RETRIES):
        temp = os.path.join(directory, f"{TEMP_PREFIX}{secrets.token_hex(8)}")
        try:
            return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), temp
        except FileNotFoundError:
            _back_off(attempt)
            _make_directory(directory)
        except (NotADirectoryError, FileExistsError) as exc:
            raise ValueError(f"{directory} clashes with an existing blob name") from exc
    raise OSError(f"could not create a file in {directory}")


def _back_off(attempt: int) -> None:
    """After the first retries, wait a random moment before making the directory again:
    deletes that keep pruning it (each emptied it) cannot then win every round."""
    if attempt >= 2:
        time.sleep(random.uniform(0, min(0.0001 * 2**attempt, 0.01)))


def _make_directory(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except FileNotFoundError:
        pass  # a concurrent delete pruned a parent meanwhile: the caller retries
    except FileExistsError as exc:  # makedirs also says this when a prune raced it
        try:
            mode = os.lstat(directory).st_mode  # one look: a prune may race two
        except FileNotFoundError:
            return  # pruned meanwhile: the caller retries
        except NotADirectoryError:
            mode = 0  # a parent is a blob
        if not stat.S_ISDIR(mode):
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
