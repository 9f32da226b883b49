"""Durable file replacement: the write path of the embedded blob store
(docs/architecture.md, "Blob semantics everywhere": lock, temp file, fsync, rename).

:func:`replace` gives a path new content the one way POSIX makes both atomic and durable:
write a temp file in the same directory, ``fsync`` it, ``os.replace`` it over the path,
``fsync`` the directory. A reader, or a process that dies at any instant, sees the old
file or the new one, never a mix; once it returns, the new file survives a power loss
too. A directory a write has to create is made durable the same way: after each
``mkdir`` its parent is fsynced, up the chain as far as directories were created.
:func:`remove` fsyncs the directory after the unlink, so a delete is durable as well.

``sync=False`` skips every fsync (``MEMNET_LOCAL_FSYNC=false``, for tests and
benchmarks): then a write survives a crash of the process, not a power loss.

A temp file is owned: its writer holds an exclusive ``flock`` on it from the moment it
is created until it has been renamed (or removed), so a temp file that nobody holds a
lock on was left by a process that died (:func:`remove_if_orphaned`). A sweep takes the
lock before it unlinks; a writer that gets its lock and finds its file unlinked (a sweep
came between its ``open`` and its ``flock``) makes another.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import secrets
import stat
import time

TEMP_PREFIX = ".memnet-tmp-"
_DIRECTORY_RETRIES = 40
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC


def replace(path: str, data: bytes, attr: tuple[str, bytes] | None, sync: bool) -> None:
    """Give ``path`` the content ``data`` (and the extended attribute ``attr``) in one
    atomic rename of a new file, durably when ``sync``."""
    directory = os.path.dirname(path)
    fd, temp = _create_temp(directory, sync)
    try:
        try:  # the descriptor itself: a file object would cost an fstat and objects
            _write_all(fd, data)
            if attr is not None:
                os.setxattr(fd, *attr)
            if sync:
                os.fsync(fd)
            _rename(temp, path)
        finally:
            os.close(fd)  # releases the temp file's lock, once its name is gone
    except BaseException:
        unlink(temp)
        raise
    if sync:
        fsync_directory(directory)


def remove(path: str, sync: bool) -> None:
    """Delete the file at ``path`` (gone already is fine), durably when ``sync``. The
    directory is opened first: a racing delete may prune it as soon as it is empty, and
    the fsync must still reach the directory the name was removed from."""
    if not sync:
        unlink(path)
        return
    fd = os.open(os.path.dirname(path), _DIRECTORY)
    try:
        unlink(path)
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(directory: str) -> None:
    """Make the directory's entries (names created, renamed or removed in it) durable."""
    fd = os.open(directory, _DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def sync_ancestors(directory: str) -> None:
    """Fsync every directory above ``directory``, so that its own entry, and theirs, are
    durable however they were made (by hand, by another adapter, by an earlier run)."""
    parent = os.path.dirname(os.path.abspath(directory))
    while True:
        with contextlib.suppress(PermissionError):  # not ours to make durable: skip it
            fsync_directory(parent)
        if parent == os.path.dirname(parent):
            return
        parent = os.path.dirname(parent)


def make_directories(directory: str, sync: bool) -> None:
    """Create ``directory`` and its missing parents; when ``sync``, fsync the parent of
    each one this call made or found made by a racing writer (who may not have fsynced
    it yet). A directory pruned meanwhile by a racing delete is left to the caller's retry;
    a blob where a directory should be is a ValueError.

    A writer that finds the directory in place before its maker's fsync of the parent
    returned relies on the filesystem persisting a new directory with the first fsync
    below it: ext4 does, with or without a journal (``ext4_sync_parent``), as does any
    filesystem whose log commits the ``mkdir`` before later changes inside it."""
    parent = os.path.dirname(directory)
    if parent != directory and not os.path.isdir(parent):
        make_directories(parent, sync)
    try:
        os.mkdir(directory)
    except FileExistsError as exc:
        if _is_file(directory):
            raise _clash(directory) from exc
    except FileNotFoundError:
        return  # a racing delete pruned the parent: the caller retries
    except NotADirectoryError as exc:
        raise _clash(directory) from exc
    if sync:
        with contextlib.suppress(FileNotFoundError):  # pruned meanwhile: caller retries
            fsync_directory(parent)


def _is_file(path: str) -> bool:
    """Something other than a directory is at ``path`` (one look: a prune may race two)."""
    try:
        return not stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False
    except NotADirectoryError:
        return True  # a parent is a blob


def _create_temp(directory: str, sync: bool) -> tuple[int, str]:
    """Create a temp file in ``directory`` (made as needed) and lock it (module doc);
    retries because a concurrent delete may prune a directory just created, and a sweep
    may unlink the file before it is locked."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for attempt in range(_DIRECTORY_RETRIES):
        temp = os.path.join(directory, f"{TEMP_PREFIX}{secrets.token_hex(8)}")
        try:
            fd = os.open(temp, flags, 0o644)
        except FileNotFoundError:
            _back_off(attempt)
            make_directories(directory, sync)
            continue
        except NotADirectoryError as exc:
            raise _clash(directory) from exc
        if _owned(fd):
            return fd, temp
        os.close(fd)
    raise OSError(f"could not create a file in {directory}")


def _owned(fd: int) -> bool:
    """Lock a new temp file; False if a sweep unlinked it before the lock was ours."""
    fcntl.flock(fd, fcntl.LOCK_EX)
    return os.fstat(fd).st_nlink > 0


def remove_if_orphaned(path: str) -> int | None:
    """Unlink the temp file at ``path`` if no live writer holds its lock (module doc);
    its size, or None when a writer holds it or it is gone already."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its writer is alive
        size = os.fstat(fd).st_size
        try:
            os.unlink(path)  # a rename before the lock was ours took the name: not ours
        except FileNotFoundError:
            return None
        return size
    finally:
        os.close(fd)


def _rename(temp: str, path: str) -> None:
    try:
        os.replace(temp, path)
    except IsADirectoryError as exc:
        raise _clash(path) from exc


def _clash(path: str) -> ValueError:
    return ValueError(f"{path} clashes with existing blob names")


def _back_off(attempt: int) -> None:
    """After the first retries, wait a random moment before making the directory again:
    deletes that keep pruning it (each emptied it) cannot then win every round."""
    if attempt >= 2:
        time.sleep(random.uniform(0, min(0.0001 * 2**attempt, 0.01)))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def read_file(path: str) -> bytes | None:
    try:
        with open(path, "rb") as file:
            return file.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def unlink(path: str) -> None:
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(path)


def prune_empty_parents(path: str, stop: str) -> None:
    """Remove directories emptied by a delete, best effort (another writer may race).
    Not fsynced: an empty directory that comes back after a power loss is harmless."""
    parent = os.path.dirname(path)
    while parent != stop and parent.startswith(stop + os.sep):
        try:
            os.rmdir(parent)
        except OSError:
            return
        parent = os.path.dirname(parent)
