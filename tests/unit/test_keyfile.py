"""The local key file (memnet.adapters.local.keyfile, spec 16.2): created on first use,
mode 0600, one key however many processes race to create it, rotation that keeps old
snapshots readable, and clear refusals for a foreign or malformed file."""

from __future__ import annotations

import base64
import json
import multiprocessing
import os
import re
import secrets
import stat
import threading
from pathlib import Path

import pytest

from memnet.adapters.local.keyfile import LocalKeyFile
from memnet.ports import KeyProviderError, WrappedKey
from memnet.services.replay.sealing import SealedBlobError, open_sealed, seal

AAD = b"tenants/acme/users/alice/snapshots/c1/s1.json"
RACERS = 8


def contents(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def wrap_after_barrier(path: str, barrier: threading.Barrier) -> tuple[str, bytes, bytes]:
    """Wait for every racer, then wrap a fresh data key: (key id, data key, wrapped)."""
    data_key = secrets.token_bytes(32)
    barrier.wait()
    wrapped = LocalKeyFile(Path(path)).wrap(data_key)
    return wrapped.key_id, data_key, wrapped.wrapped


def _process_racer(path: str, barrier: threading.Barrier, results: multiprocessing.Queue) -> None:
    results.put(wrap_after_barrier(path, barrier))


def assert_one_key_for_all(path: Path, results: list[tuple[str, bytes, bytes]]) -> None:
    document = contents(path)
    assert list(document["keys"]) == [document["current"]]
    assert {key_id for key_id, _, _ in results} == {document["current"]}
    keys = LocalKeyFile(path)
    for key_id, data_key, wrapped in results:
        assert keys.unwrap(WrappedKey("local-file", key_id, "A256KW", wrapped)) == data_key


def test_the_constructor_does_no_io(tmp_path):
    LocalKeyFile(tmp_path / "keys" / "kek.json")
    assert not (tmp_path / "keys").exists()


def test_the_file_is_created_on_first_use_with_mode_0600(tmp_path):
    path = tmp_path / "keys" / "kek.json"
    wrapped = LocalKeyFile(path).wrap(secrets.token_bytes(32))
    assert mode(path) == 0o600
    document = contents(path)
    assert document.keys() == {"current", "keys"}
    assert re.fullmatch(r"local-[0-9a-f]{16}", document["current"])
    (key,) = document["keys"].values()
    assert len(base64.b64decode(key)) == 32
    assert (wrapped.provider, wrapped.key_id, wrapped.algorithm) == (
        "local-file",
        document["current"],
        "A256KW",
    )
    assert os.listdir(path.parent) == ["kek.json"]  # no temp file left behind


def test_a_data_key_round_trips_and_the_file_is_reused(tmp_path):
    path = tmp_path / "kek.json"
    data_key = secrets.token_bytes(32)
    wrapped = LocalKeyFile(path).wrap(data_key)
    assert len(wrapped.wrapped) == 40 and data_key not in wrapped.wrapped
    assert LocalKeyFile(path).unwrap(wrapped) == data_key
    assert LocalKeyFile(path).wrap(data_key).key_id == wrapped.key_id


def test_a_snapshot_sealed_with_the_key_file_opens(tmp_path):
    keys = LocalKeyFile(tmp_path / "kek.json")
    assert open_sealed(seal(b"hello", AAD, keys), AAD, keys) == b"hello"


def test_threads_racing_to_create_the_file_share_one_key(tmp_path):
    path = tmp_path / "kek.json"
    barrier = threading.Barrier(RACERS)
    results: list[tuple[str, bytes, bytes]] = []

    def racer() -> None:
        results.append(wrap_after_barrier(str(path), barrier))

    threads = [threading.Thread(target=racer) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == RACERS
    assert_one_key_for_all(path, results)


def test_processes_racing_to_create_the_file_share_one_key(tmp_path):
    context = multiprocessing.get_context("spawn")
    for round_ in range(3):
        path = tmp_path / f"round-{round_}" / "kek.json"
        barrier, queue = context.Barrier(RACERS), context.Queue()
        processes = [
            context.Process(target=_process_racer, args=(str(path), barrier, queue))
            for _ in range(RACERS)
        ]
        for process in processes:
            process.start()
        results = [queue.get(timeout=60) for _ in processes]
        for process in processes:
            process.join(timeout=60)
            assert process.exitcode == 0
        assert_one_key_for_all(path, results)
        assert mode(path) == 0o600


def test_rotation_adds_a_current_key_and_old_snapshots_still_open(tmp_path):
    path = tmp_path / "kek.json"
    keys = LocalKeyFile(path)
    old = seal(b"before rotation", AAD, keys)
    first = contents(path)["current"]
    new_id = keys.rotate()
    assert new_id != first and contents(path)["current"] == new_id
    assert set(contents(path)["keys"]) == {first, new_id}
    new = seal(b"after rotation", AAD, keys)
    assert json.loads(new)["key"]["key_id"] == new_id
    assert json.loads(old)["key"]["key_id"] == first
    assert open_sealed(old, AAD, keys) == b"before rotation"
    assert open_sealed(new, AAD, LocalKeyFile(path)) == b"after rotation"
    assert mode(path) == 0o600


def test_rotation_creates_the_file_when_it_is_missing(tmp_path):
    path = tmp_path / "kek.json"
    new_id = LocalKeyFile(path).rotate()
    assert contents(path)["current"] == new_id and len(contents(path)["keys"]) == 2


def test_concurrent_rotations_lose_no_key(tmp_path):
    path = tmp_path / "kek.json"
    LocalKeyFile(path).wrap(secrets.token_bytes(32))
    barrier = threading.Barrier(RACERS)
    added: list[str] = []

    def rotate() -> None:
        barrier.wait()
        added.append(LocalKeyFile(path).rotate())

    threads = [threading.Thread(target=rotate) for _ in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = contents(path)["keys"]
    assert set(added) <= set(keys) and len(keys) == RACERS + 1
    assert contents(path)["current"] in added


def test_another_key_file_cannot_unwrap(tmp_path):
    wrapped = LocalKeyFile(tmp_path / "a.json").wrap(secrets.token_bytes(32))
    other = LocalKeyFile(tmp_path / "b.json")
    other.wrap(secrets.token_bytes(32))  # creates b.json with its own key
    with pytest.raises(KeyProviderError) as raised:
        other.unwrap(wrapped)
    assert not raised.value.transient and wrapped.key_id in str(raised.value)


def test_unwrap_never_creates_a_key_file(tmp_path):
    """A wrong path (MEMNET_KEY_FILE, data directory) must fail, not mint a new key that
    later uploads would be sealed with."""
    wrapped = LocalKeyFile(tmp_path / "a.json").wrap(secrets.token_bytes(32))
    with pytest.raises(KeyProviderError) as raised:
        LocalKeyFile(tmp_path / "missing.json").unwrap(wrapped)
    assert not raised.value.transient and "no key file" in str(raised.value)
    assert not (tmp_path / "missing.json").exists()


def test_a_wrong_key_under_the_same_id_cannot_unwrap(tmp_path):
    path = tmp_path / "kek.json"
    wrapped = LocalKeyFile(path).wrap(secrets.token_bytes(32))
    document = contents(path)
    document["keys"] = {wrapped.key_id: base64.b64encode(secrets.token_bytes(32)).decode()}
    path.write_text(json.dumps(document))
    with pytest.raises(KeyProviderError) as raised:
        LocalKeyFile(path).unwrap(wrapped)
    assert not raised.value.transient


def test_a_snapshot_sealed_under_another_key_file_fails_to_decrypt(tmp_path):
    sealed = seal(b"hello", AAD, LocalKeyFile(tmp_path / "a.json"))
    with pytest.raises(SealedBlobError) as raised:
        open_sealed(sealed, AAD, LocalKeyFile(tmp_path / "b.json"))
    assert raised.value.code == "SNAPSHOT_DECRYPT_FAILED" and not raised.value.transient


def test_a_key_of_another_provider_is_refused(tmp_path):
    keys = LocalKeyFile(tmp_path / "kek.json")
    wrapped = keys.wrap(secrets.token_bytes(32))
    foreign = WrappedKey("azure-keyvault", wrapped.key_id, "RSA-OAEP-256", wrapped.wrapped)
    with pytest.raises(KeyProviderError) as raised:
        keys.unwrap(foreign)
    assert not raised.value.transient


GOOD_KEY = base64.b64encode(b"k" * 32).decode()


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        "[]",
        json.dumps({"current": "local-0000000000000000"}),
        json.dumps({"current": "local-0000000000000000", "keys": {}}),
        json.dumps(
            {"current": "local-1111111111111111", "keys": {"local-0000000000000000": GOOD_KEY}}
        ),
        json.dumps(
            {"current": "local-0000000000000000", "keys": {"local-0000000000000000": "c2hvcnQ="}}
        ),
        json.dumps({"current": "local-0000000000000000", "keys": {"local-0000000000000000": 7}}),
        json.dumps({"current": "local-0000000000000000", "keys": {"local-0000000000000000": "%%"}}),
        json.dumps({"current": "k", "keys": {"k": GOOD_KEY}}),
    ],
    ids=[
        "not-json",
        "array",
        "no-keys",
        "empty-keys",
        "current-unknown",
        "short-key",
        "key-not-text",
        "key-not-base64",
        "bad-key-id",
    ],
)
def test_a_malformed_file_is_a_clear_permanent_error(tmp_path, content):
    path = tmp_path / "kek.json"
    path.write_text(content)
    with pytest.raises(KeyProviderError) as raised:
        LocalKeyFile(path).wrap(secrets.token_bytes(32))
    message = str(raised.value)
    assert not raised.value.transient
    assert str(path) in message and "malformed" in message
    assert GOOD_KEY not in message
    assert path.read_text() == content  # left for the operator to repair


def test_describe_names_the_provider_only(tmp_path):
    assert LocalKeyFile(tmp_path / "secret-place" / "kek.json").describe() == "local-file"
