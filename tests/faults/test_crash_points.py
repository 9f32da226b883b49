"""Fault injection: the process dies between any two storage writes of a write request.

A fresh-key PATCH makes four writes: claim the idempotency key, write the audit record,
write the document, complete the key. For every crash point we restart the service over
the same storage and check that nothing is lost or left unaccounted: the document still
folds from its audit chain, a retry with the same key applies the change exactly once,
and any audit record the crash stranded is an orphan that history ignores and the sweep
removes (docs/decisions.md, "Audit and history").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.bootstrap import Services
from memnet.domain.audit_records import AuditRecord, fold
from memnet.ports import (
    Blob,
    BlobPage,
    BlobStore,
    Condition,
    Extractor,
    Residue,
    StorageUnavailable,
)
from tests.api.test_documents import PREF, create, patch
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, doc_url, make_settings

WRITES_PER_PATCH = 4


class SimulatedCrash(BaseException):
    """Not an Exception: nothing in the service may catch and tidy up after it."""


class CrashingBlobStore:
    """A real store that dies just before its ``crash_before``-th write or delete (0:
    never)."""

    def __init__(self, inner: BlobStore, crash_before: int = 0) -> None:
        self.inner, self.crash_before, self.mutations = inner, crash_before, 0

    def _tick(self) -> None:
        self.mutations += 1
        if self.mutations == self.crash_before:
            raise SimulatedCrash(f"crash before mutation {self.mutations}")

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        return self.inner.read(name, max_bytes=max_bytes)

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        return self.inner.read_if_changed(name, etag)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        self._tick()
        return self.inner.write(name, data, condition)

    def delete(self, name: str, condition: Condition = Condition()) -> None:
        self._tick()
        self.inner.delete(name, condition)

    def list_names(self, prefix: str) -> Iterator[str]:
        return self.inner.list_names(prefix)

    def list_folder(self, prefix: str) -> Iterator[str]:
        return self.inner.list_folder(prefix)

    def list_page(self, prefix: str, continuation: str | None, limit: int) -> BlobPage:
        return self.inner.list_page(prefix, continuation, limit)

    def remove_residue(self, prefix: str) -> Residue:
        self._tick()
        return self.inner.remove_residue(prefix)

    def describe(self) -> str:
        return "crashing " + self.inner.describe()


def start(data: Path, crash_before: int = 0, extractor: Extractor | None = None) -> Services:
    # A simulated crash is an exception, not a power loss: no fsync changes what these
    # tests can see (the file store's own tests check its fsync sequence), so none is made.
    settings = replace(make_settings(data), idempotency_lease_seconds=0, local_fsync=False)
    store = FileBlobStore(data, settings.blob_container, fsync=False)
    blobs = CrashingBlobStore(store, crash_before) if crash_before else store
    services = bootstrap.build(settings, blobs=blobs, extractor=extractor)
    bootstrap.install(services)
    return services


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    bootstrap.install(None)


def committed_history_matches_document(client: DirectClient) -> list[dict]:
    current = client.request("GET", doc_url()).data
    changes = client.request("GET", doc_url() + ":history").data["changes"]
    assert fold(map(AuditRecord.from_json, reversed(changes))) == current["document"]
    return changes


@pytest.mark.slow
@pytest.mark.parametrize("crash_before", range(1, WRITES_PER_PATCH + 1))
def test_crash_between_writes_of_a_patch_loses_nothing(tmp_path: Path, crash_before: int):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    start(tmp_path, crash_before)
    ops = [{"op": "add", "path": PREF, "value": {"text": "exactly once"}}]
    with pytest.raises(SimulatedCrash):
        patch(client, tag, ops, "retry-me")

    services = start(tmp_path)  # the restarted process
    committed_history_matches_document(client)
    retried = patch(client, tag, ops, "retry-me")
    assert retried.status == 200, retried.data
    prefs = client.request("GET", doc_url()).data["document"]["content"]["preferences"]
    assert prefs == [{"text": "Be brief."}, {"text": "exactly once"}]
    assert len(committed_history_matches_document(client)) == 2
    swept = services.documents.sweep_orphans("t1", "u1", timedelta(0))
    assert len(swept) == (1 if crash_before == 3 else 0)  # audit written, document not
    assert services.documents.sweep_orphans("t1", "u1", timedelta(0)) == []


@pytest.mark.parametrize("crash_before", range(1, WRITES_PER_PATCH + 1))
def test_crash_during_create_loses_nothing(tmp_path: Path, crash_before: int):
    client = DirectClient(AGENT_KEY)
    start(tmp_path, crash_before)
    with pytest.raises(SimulatedCrash):
        create(client)
    start(tmp_path)
    retried = create(client)
    assert retried.status == 201, retried.data
    assert len(committed_history_matches_document(client)) == 1


def test_recent_orphans_are_kept_for_writes_still_in_flight(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    start(tmp_path, crash_before=3)
    with pytest.raises(SimulatedCrash):
        patch(client, tag, [{"op": "add", "path": PREF, "value": {"text": "x"}}], "k")
    services = start(tmp_path)
    assert services.documents.sweep_orphans("t1", "u1", timedelta(minutes=5)) == []
    assert len(services.documents.sweep_orphans("t1", "u1", timedelta(0))) == 1


class FlakyBlobStore(CrashingBlobStore):
    """Storage that becomes unreachable for writes (a transient dependency failure)."""

    def _tick(self) -> None:
        self.mutations += 1
        if self.mutations == self.crash_before:
            raise StorageUnavailable("connection reset")


def test_storage_outage_is_503_and_the_retry_with_the_same_key_succeeds(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    settings = replace(make_settings(tmp_path), idempotency_lease_seconds=30)
    flaky = FlakyBlobStore(FileBlobStore(tmp_path, settings.blob_container), crash_before=3)
    bootstrap.install(bootstrap.build(settings, blobs=flaky))
    ops = [{"op": "add", "path": PREF, "value": {"text": "after outage"}}]
    reply = patch(client, tag, ops, "k")
    assert reply.status == 503 and reply.error_code == "DEPENDENCY_UNAVAILABLE"
    assert reply.headers["retry-after"] == "1"
    assert client.request("GET", doc_url()).data["etag"] == tag
    assert patch(client, tag, ops, "k").status == 200
