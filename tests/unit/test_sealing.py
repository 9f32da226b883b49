"""Sealed snapshot blobs (memnet.services.replay.sealing, spec 16.2): AES-256-GCM under a fresh
data key per snapshot, wrapped by a KeyProvider; the blob name bound as associated data.

The provider here is an in-memory one (RFC 3394 key wrap with a KEK held in the test), so
these tests need no file and no vault."""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography.hazmat.primitives.keywrap import InvalidUnwrap, aes_key_unwrap, aes_key_wrap

from memnet.ports import KeyProviderError, WrappedKey
from memnet.services.replay.sealing import FORMAT, SealedBlobError, open_sealed, seal

AAD = b"tenants/acme/users/alice/snapshots/c1/s1.json"
SECRET = "the launch code is PLUM-7731-ORCHID"
PLAINTEXT = json.dumps({"messages": [{"role": "user", "content": SECRET}]}).encode()


@dataclass
class MemoryKeys:
    """A KeyProvider whose KEK lives in memory; counts calls, can be made to fail."""

    kek: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    failure: KeyProviderError | None = None
    wrapped: list[bytes] = field(default_factory=list)

    def wrap(self, data_key: bytes) -> WrappedKey:
        if self.failure:
            raise self.failure
        self.wrapped.append(data_key)
        return WrappedKey("memory", "memory-1", "A256KW", aes_key_wrap(self.kek, data_key))

    def unwrap(self, wrapped: WrappedKey) -> bytes:
        if self.failure:
            raise self.failure
        try:
            return aes_key_unwrap(self.kek, wrapped.wrapped)
        except InvalidUnwrap:
            raise KeyProviderError("wrong key", transient=False) from None

    def describe(self) -> str:
        return "memory"


@pytest.fixture
def keys() -> MemoryKeys:
    return MemoryKeys()


def fields(blob: bytes) -> dict[str, Any]:
    return json.loads(blob)


def dump(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode()


def flip(text: str, index: int = 0) -> str:
    """The base64 ``text`` with one bit of byte ``index`` flipped."""
    raw = bytearray(base64.b64decode(text))
    raw[index] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def code_of(blob: bytes, keys: MemoryKeys, aad: bytes = AAD) -> str:
    with pytest.raises(SealedBlobError) as raised:
        open_sealed(blob, aad, keys)
    return raised.value.code


def test_a_sealed_blob_opens_to_the_plaintext(keys):
    assert open_sealed(seal(PLAINTEXT, AAD, keys), AAD, keys) == PLAINTEXT


def test_an_empty_plaintext_round_trips(keys):
    assert open_sealed(seal(b"", AAD, keys), AAD, keys) == b""


def test_the_blob_is_compact_json_in_the_v1_format(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    document = fields(blob)
    assert document.keys() == {"format", "cipher", "key", "nonce", "ciphertext"}
    assert document["format"] == FORMAT == "memnet.sealed.v1"
    assert document["cipher"] == "AES-256-GCM"
    assert document["key"].keys() == {"provider", "key_id", "algorithm", "wrapped"}
    assert document["key"]["provider"] == "memory" and document["key"]["key_id"] == "memory-1"
    assert len(base64.b64decode(document["nonce"])) == 12
    assert len(base64.b64decode(document["ciphertext"])) == len(PLAINTEXT) + 16
    assert b" " not in blob


def test_the_blob_holds_no_plaintext(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    assert PLAINTEXT not in blob
    for fragment in (SECRET, "PLUM-7731", "ORCHID", "launch code", "messages", "alice"):
        assert fragment.encode() not in blob
        assert base64.b64encode(fragment.encode())[:8] not in blob
    assert base64.b64encode(PLAINTEXT)[:16] not in blob


def test_every_seal_uses_a_fresh_nonce_and_data_key(keys):
    blobs = [fields(seal(PLAINTEXT, AAD, keys)) for _ in range(20)]
    assert len({blob["nonce"] for blob in blobs}) == 20
    assert len({blob["key"]["wrapped"] for blob in blobs}) == 20
    assert len({blob["ciphertext"] for blob in blobs}) == 20
    assert len(set(keys.wrapped)) == 20 and all(len(k) == 32 for k in keys.wrapped)


def test_a_flipped_ciphertext_byte_fails_to_decrypt(keys):
    document = fields(seal(PLAINTEXT, AAD, keys))
    for index in (0, len(PLAINTEXT) // 2, len(PLAINTEXT) + 15):  # start, middle, tag
        tampered = {**document, "ciphertext": flip(document["ciphertext"], index)}
        assert code_of(dump(tampered), keys) == "SNAPSHOT_DECRYPT_FAILED"


def test_a_changed_nonce_fails_to_decrypt(keys):
    document = fields(seal(PLAINTEXT, AAD, keys))
    tampered = {**document, "nonce": flip(document["nonce"], 5)}
    assert code_of(dump(tampered), keys) == "SNAPSHOT_DECRYPT_FAILED"


def test_a_tampered_wrapped_key_fails_to_decrypt(keys):
    document = fields(seal(PLAINTEXT, AAD, keys))
    key = {**document["key"], "wrapped": flip(document["key"]["wrapped"], 9)}
    assert code_of(dump({**document, "key": key}), keys) == "SNAPSHOT_DECRYPT_FAILED"


def test_a_wrapped_key_from_another_snapshot_fails_to_decrypt(keys):
    document = fields(seal(PLAINTEXT, AAD, keys))
    other = fields(seal(PLAINTEXT, AAD, keys))
    assert code_of(dump({**document, "key": other["key"]}), keys) == "SNAPSHOT_DECRYPT_FAILED"


def test_a_blob_copied_to_another_path_fails_to_decrypt(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    elsewhere = b"tenants/acme/users/mallory/snapshots/c1/s1.json"
    assert code_of(blob, keys, aad=elsewhere) == "SNAPSHOT_DECRYPT_FAILED"


def test_another_kek_fails_to_decrypt(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    assert code_of(blob, MemoryKeys()) == "SNAPSHOT_DECRYPT_FAILED"


@pytest.mark.parametrize(
    "blob",
    [
        b"",
        b"not json",
        b"\xff\xfe{}",
        b"[1, 2]",
        b'"memnet.sealed.v1"',
        b"[" * 100_000,
    ],
    ids=["empty", "text", "not-utf8", "array", "string", "deeply-nested"],
)
def test_a_blob_that_is_not_sealed_json_is_unreadable(keys, blob):
    assert code_of(blob, keys) == "SNAPSHOT_UNREADABLE"


@pytest.mark.parametrize(
    "change",
    [
        {"format": "memnet.sealed.v2"},
        {"format": None},
        {"cipher": "AES-128-CBC"},
        {"nonce": "!!not base64!!"},
        {"nonce": base64.b64encode(b"short").decode()},
        {"ciphertext": base64.b64encode(b"tiny").decode()},
        {"ciphertext": 12},
        {"key": "not an object"},
        {"extra": "field"},
    ],
    ids=lambda change: "-".join(f"{k}={v}"[:24] for k, v in change.items()),
)
def test_a_malformed_or_unknown_format_is_unreadable(keys, change):
    document = {**fields(seal(PLAINTEXT, AAD, keys)), **change}
    assert code_of(dump(document), keys) == "SNAPSHOT_UNREADABLE"


@pytest.mark.parametrize("missing", ["format", "cipher", "key", "nonce", "ciphertext"])
def test_a_missing_field_is_unreadable(keys, missing):
    document = fields(seal(PLAINTEXT, AAD, keys))
    del document[missing]
    assert code_of(dump(document), keys) == "SNAPSHOT_UNREADABLE"


@pytest.mark.parametrize("name", ["provider", "key_id", "algorithm", "wrapped"])
def test_a_missing_or_mistyped_key_field_is_unreadable(keys, name):
    document = fields(seal(PLAINTEXT, AAD, keys))
    for key in (
        {k: v for k, v in document["key"].items() if k != name},
        {**document["key"], name: 7},
    ):
        assert code_of(dump({**document, "key": key}), keys) == "SNAPSHOT_UNREADABLE"


def test_a_transient_key_failure_on_open_is_transient(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    keys.failure = KeyProviderError("vault throttled", transient=True)
    with pytest.raises(SealedBlobError) as raised:
        open_sealed(blob, AAD, keys)
    assert raised.value.code == "SNAPSHOT_KEY_UNAVAILABLE" and raised.value.transient
    assert raised.value.__cause__ is keys.failure


def test_a_permanent_key_failure_on_open_fails_to_decrypt(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    keys.failure = KeyProviderError("key disabled", transient=False)
    with pytest.raises(SealedBlobError) as raised:
        open_sealed(blob, AAD, keys)
    assert raised.value.code == "SNAPSHOT_DECRYPT_FAILED" and not raised.value.transient


@pytest.mark.parametrize("transient", [True, False])
def test_a_key_failure_on_seal_keeps_its_transience(keys, transient):
    keys.failure = KeyProviderError("vault down", transient=transient)
    with pytest.raises(SealedBlobError) as raised:
        seal(PLAINTEXT, AAD, keys)
    assert raised.value.code == "SNAPSHOT_KEY_UNAVAILABLE"
    assert raised.value.transient is transient


def test_no_error_message_reveals_plaintext_or_keys(keys):
    blob = seal(PLAINTEXT, AAD, keys)
    document = fields(blob)
    attempts = [
        (blob, b"elsewhere"),
        (dump({**document, "ciphertext": flip(document["ciphertext"])}), AAD),
        (dump({**document, "format": "x"}), AAD),
    ]
    for sealed, aad in attempts:
        with pytest.raises(SealedBlobError) as raised:
            open_sealed(sealed, aad, keys)
        message = str(raised.value)
        assert SECRET not in message and document["key"]["wrapped"] not in message
        assert base64.b64encode(keys.kek).decode() not in message
        assert all(base64.b64encode(k).decode() not in message for k in keys.wrapped)
