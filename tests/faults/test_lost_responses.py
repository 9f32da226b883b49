"""Storage calls whose response is lost: the write landed, but the caller saw an error.

Seen on Azure when a response is dropped and the SDK retries (a create-only write then
reports "exists", an If-Match write "condition not met"), or when a timeout hides the
outcome. None of these may apply a change twice, lose its audit record, or turn a
retried success into a 412.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.domain.audit_records import AuditRecord, fold
from memnet.ports import PreconditionFailed, StorageUnavailable
from tests.api.test_documents import PREF, create, patch
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, doc_url, make_settings
from tests.faults.test_crash_points import CrashingBlobStore

DOCUMENT = "/documents/"


class LosingBlobStore(CrashingBlobStore):
    """Performs the first write whose name contains ``part``, then raises ``error`` as if
    its response had been lost."""

    def __init__(self, inner: FileBlobStore, part: str, error: Callable[[str], Exception]):
        super().__init__(inner, crash_before=0)
        self.part, self.error, self.armed = part, error, True

    def write(self, name, data, condition):  # type: ignore[no-untyped-def]
        etag = self.inner.write(name, data, condition)
        if self.armed and self.part in name:
            self.armed = False
            raise self.error(name)
        return etag


def start(tmp_path: Path, store: object | None = None, lease: int = 30) -> None:
    settings = replace(make_settings(tmp_path), idempotency_lease_seconds=lease)
    blobs = store or FileBlobStore(tmp_path, settings.blob_container)
    bootstrap.install(bootstrap.build(settings, blobs=blobs))  # type: ignore[arg-type]


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    bootstrap.install(None)


def consistent(client: DirectClient) -> list[str]:
    current = client.request("GET", doc_url()).data
    changes = client.request("GET", doc_url() + ":history").data["changes"]
    assert fold(map(AuditRecord.from_json, reversed(changes))) == current["document"]
    return [item["text"] for item in current["document"]["content"]["preferences"]]


def losing(tmp_path: Path, part: str, error: Callable[[str], Exception]) -> LosingBlobStore:
    return LosingBlobStore(FileBlobStore(tmp_path), part, error)


def test_lost_response_on_document_write_is_a_success_not_a_412(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    start(tmp_path, losing(tmp_path, DOCUMENT, PreconditionFailed))
    reply = patch(client, tag, [{"op": "add", "path": PREF, "value": {"text": "once"}}], "k")
    assert reply.status == 200, reply.data
    assert consistent(client) == ["Be brief.", "once"]


def test_timeout_after_document_write_settles_to_the_stored_response(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    start(tmp_path, losing(tmp_path, DOCUMENT, lambda n: StorageUnavailable(n)))
    reply = patch(client, tag, [{"op": "add", "path": PREF, "value": {"text": "once"}}], "k")
    assert reply.status == 200, reply.data  # settled at once: the change is on the chain
    again = patch(client, tag, [{"op": "add", "path": PREF, "value": {"text": "once"}}], "k")
    assert again.status == 200 and again.headers["idempotent-replayed"] == "true"
    assert consistent(client) == ["Be brief.", "once"]


class Unreachable(CrashingBlobStore):
    """The document write lands, then storage stops answering for a while."""

    def __init__(self, inner: FileBlobStore) -> None:
        super().__init__(inner, crash_before=0)
        self.down = False

    def read(self, name, *, max_bytes=None):  # type: ignore[no-untyped-def]
        if self.down:
            raise StorageUnavailable(name)
        return self.inner.read(name, max_bytes=max_bytes)

    def write(self, name, data, condition):  # type: ignore[no-untyped-def]
        if self.down:
            raise StorageUnavailable(name)
        etag = self.inner.write(name, data, condition)
        self.down = DOCUMENT in name
        if self.down:
            raise StorageUnavailable(name)
        return etag


def test_unknown_outcome_keeps_the_key_so_the_retry_is_never_a_412(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    store = Unreachable(FileBlobStore(tmp_path))
    start(tmp_path, store)
    ops = [{"op": "add", "path": PREF, "value": {"text": "once"}}]
    assert patch(client, tag, ops, "k").status == 503
    store.down = False
    retried = patch(client, tag, ops, "k")
    assert retried.status == 200 and retried.headers["idempotent-replayed"] == "true"
    assert consistent(client) == ["Be brief.", "once"]


def test_lost_response_on_the_idempotency_claim_is_recognised(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    start(tmp_path, losing(tmp_path, "/idempotency/", PreconditionFailed))
    reply = patch(client, tag, [{"op": "add", "path": PREF, "value": {"text": "once"}}], "k")
    assert reply.status == 200, reply.data
    assert consistent(client) == ["Be brief.", "once"]


def test_lost_response_on_the_audit_write_is_recognised(tmp_path: Path):
    client = DirectClient(AGENT_KEY)
    start(tmp_path)
    tag = create(client).data["etag"]
    start(tmp_path, losing(tmp_path, "/audit/", PreconditionFailed))
    reply = patch(client, tag, [{"op": "add", "path": PREF, "value": {"text": "once"}}], "k")
    assert reply.status == 200, reply.data
    assert consistent(client) == ["Be brief.", "once"]
