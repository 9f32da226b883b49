"""The snapshot key-encryption keys in a local file (spec 16.2): the default
:class:`~memnet.ports.KeyProvider`.

The file is JSON, ``{"current": key_id, "keys": {key_id: <base64 32-byte key>}}``, key ids
``local-<16 hex>``. Data keys are wrapped with the current key by AES key wrap (RFC 3394,
``A256KW``); each wrapped key records its key id, so unwrapping uses the key it was
wrapped with.

Creation: the first use creates the file with one key, mode 0600, durably (a temp file
written and fsynced, then hard-linked to the name, then the directory fsynced). The link
is create-only, so two processes racing to create the file end up with one key, the
first link's, which both use; and no reader ever sees a partly written file.

Rotation: :meth:`LocalKeyFile.rotate` adds a new key and makes it current; the old keys
stay in the file, so snapshots sealed before still open. A key is never removed here:
removing one makes every snapshot wrapped with it unreadable, so that is a manual step
after those snapshots are re-sealed or deleted. Rotations are serialized by an ``flock``
on ``<file>.lock`` and replace the file atomically (temp file, fsync, rename).

Lose the file and no snapshot can be read: back it up with the data. The file is read
on every wrap and unwrap (a few tens of microseconds, once per snapshot), so a rotation
by another process is seen at once.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import fcntl
import json
import os
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.keywrap import (
    InvalidUnwrap,
    aes_key_unwrap,
    aes_key_wrap,
)

from memnet.adapters.local import durable
from memnet.ports import KeyProviderError, WrappedKey

PROVIDER = "local-file"
ALGORITHM = "A256KW"
KEY_BYTES = 32
KEY_ID = re.compile(r"local-[0-9a-f]{16}")


@dataclass(frozen=True)
class _Keys:
    current: str
    keys: dict[str, bytes]


class LocalKeyFile:
    """Key-encryption keys in the JSON file at ``path`` (created on first use)."""

    def __init__(self, path: Path) -> None:
        self._path = Path(path)

    def wrap(self, data_key: bytes) -> WrappedKey:
        keys = self._load_or_create()
        wrapped = aes_key_wrap(keys.keys[keys.current], data_key)
        return WrappedKey(PROVIDER, keys.current, ALGORITHM, wrapped)

    def unwrap(self, wrapped: WrappedKey) -> bytes:
        if (wrapped.provider, wrapped.algorithm) != (PROVIDER, ALGORITHM):
            message = f"a {wrapped.provider}/{wrapped.algorithm} key is not a local key file's"
            raise KeyProviderError(message, transient=False)
        data = self._read()  # never created here: a missing file is a wrong path, not a new key
        if data is None:
            message = f"there is no key file at {self._path} (MEMNET_KEY_FILE, MEMNET_DATA_DIR?)"
            raise KeyProviderError(message, transient=False)
        kek = _parse(data, self._path).keys.get(wrapped.key_id)
        if kek is None:
            message = f"the key file {self._path} has no key {wrapped.key_id}"
            raise KeyProviderError(message, transient=False)
        try:
            return aes_key_unwrap(kek, wrapped.wrapped)
        except (InvalidUnwrap, ValueError):
            message = f"key {wrapped.key_id} of {self._path} does not unwrap this data key"
            raise KeyProviderError(message, transient=False) from None

    def rotate(self) -> str:
        """Add a new key and make it current; the old ones stay. Returns the new key id."""
        with self._rotation_lock():
            keys = self._load_or_create()
            key_id = _new_key_id()
            rotated = _Keys(key_id, {**keys.keys, key_id: secrets.token_bytes(KEY_BYTES)})
            self._write(_dump(rotated), create_only=False)
        return key_id

    def describe(self) -> str:
        return PROVIDER

    def _load_or_create(self) -> _Keys:
        data = self._read()
        if data is None:
            key_id = _new_key_id()
            self._write(_dump(_Keys(key_id, {key_id: secrets.token_bytes(KEY_BYTES)})), True)
            data = self._read()  # ours, or the racing creator's that linked first
            if data is None:
                raise KeyProviderError(f"the key file {self._path} vanished", transient=True)
        return _parse(data, self._path)

    def _read(self) -> bytes | None:
        try:
            return self._path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            message = f"the key file {self._path} cannot be read ({type(error).__name__})"
            raise KeyProviderError(message, transient=False) from error

    def _write(self, data: bytes, create_only: bool) -> None:
        """Give the file ``data`` durably, mode 0600; ``create_only``: leave an existing
        file as it is (a racing creator won)."""
        directory = self._path.parent
        durable.make_directories(str(directory), sync=True)
        temp = directory / f"{durable.TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            _write_synced(fd, data)
            if create_only:
                with contextlib.suppress(FileExistsError):
                    os.link(temp, self._path)
            else:
                os.replace(temp, self._path)
        finally:
            durable.unlink(str(temp))
        durable.fsync_directory(str(directory))

    @contextlib.contextmanager
    def _rotation_lock(self) -> Iterator[None]:
        durable.make_directories(str(self._path.parent), sync=True)
        lock = self._path.with_name(self._path.name + ".lock")
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the flock


def _write_synced(fd: int, data: bytes) -> None:
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _new_key_id() -> str:
    return f"local-{secrets.token_hex(8)}"


def _dump(keys: _Keys) -> bytes:
    encoded = {key_id: base64.b64encode(key).decode("ascii") for key_id, key in keys.keys.items()}
    return json.dumps({"current": keys.current, "keys": encoded}, indent=2).encode() + b"\n"


def _parse(data: bytes, path: Path) -> _Keys:
    """The keys in the file, every one checked; a malformed file names what is wrong (and
    never a key)."""
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _malformed(path, "not UTF-8 JSON") from None
    if not isinstance(document, dict) or not isinstance(document.get("keys"), dict):
        raise _malformed(path, 'no "keys" object')
    keys = {key_id: _key(key_id, value, path) for key_id, value in document["keys"].items()}
    current = document.get("current")
    if not isinstance(current, str) or current not in keys:
        raise _malformed(path, '"current" does not name one of its keys')
    return _Keys(current, keys)


def _key(key_id: str, value: Any, path: Path) -> bytes:
    if not KEY_ID.fullmatch(key_id):
        raise _malformed(path, "a key id is not local-<16 hex digits>")
    try:
        key = base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise _malformed(path, f"key {key_id} is not {KEY_BYTES} bytes of base64")
    return key


def _malformed(path: Path, why: str) -> KeyProviderError:
    return KeyProviderError(f"the snapshot key file {path} is malformed: {why}", transient=False)
