"""The disk fails under the embedded store: ``fsync`` raises EIO (a bad sector, a vanished
device). The request is a 503 DEPENDENCY_UNAVAILABLE and nothing is acknowledged; once the
disk recovers, a retry with the same Idempotency-Key applies the change exactly once.

The fault is injected in-process on ``os.fsync`` as the blob store module calls it, and
stays until cleared (a disk that fails keeps failing), from one chosen call of the PATCH.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.adapters.local import durable
from memnet.domain.audit_records import AuditRecord, fold
from tests.api.test_documents import PREF, create, patch
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, doc_url, make_settings

# A fresh-key PATCH writes four blobs (claim, audit record, document, completed claim),
# each with two fsyncs (the file, then its directory after the rename).
FSYNCS_PER_PATCH = 8
DOCUMENT_RENAMED_AFTER = 5  # fsyncs before the document's new version takes its name
OPS = [{"op": "add", "path": PREF, "value": {"text": "written once"}}]


class FailingDisk:
    """``os.fsync`` that fails with EIO from its ``first_failure``-th call until cleared."""

    def __init__(self, first_failure: int) -> None:
        self.first_failure, self.calls, self.failing = first_failure, 0, True
        self._fsync = os.fsync

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.failing and self.calls >= self.first_failure:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        self._fsync(fd)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[DirectClient]:
    """The service on a fresh data directory, fsync on (the default). The lease is 0: a
    retry takes over a claim the failed request left pending at once, not after 30 s."""
    settings = replace(make_settings(tmp_path), idempotency_lease_seconds=0)
    assert settings.local_fsync
    bootstrap.install(bootstrap.build(settings))
    yield DirectClient(AGENT_KEY)
    bootstrap.install(None)


def state(client: DirectClient) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The document as read (ETag and envelope) and its history, newest first."""
    document = client.request("GET", doc_url()).data
    return document, client.request("GET", doc_url() + ":history").data["changes"]


def fail_fsync(monkeypatch: pytest.MonkeyPatch, first_failure: int) -> FailingDisk:
    disk = FailingDisk(first_failure)
    monkeypatch.setattr(durable.os, "fsync", disk)
    return disk


def test_a_fresh_key_patch_makes_its_writes_durable_with_eight_fsyncs(
    client: DirectClient, monkeypatch: pytest.MonkeyPatch
):
    etag = create(client).data["etag"]
    disk = fail_fsync(monkeypatch, first_failure=FSYNCS_PER_PATCH + 1)
    assert patch(client, etag, OPS, "k").status == 200
    assert disk.calls == FSYNCS_PER_PATCH


def test_failing_fsync_is_503_with_nothing_changed_and_the_retry_applies_once(
    client: DirectClient, monkeypatch: pytest.MonkeyPatch
):
    etag = create(client).data["etag"]
    before = state(client)
    disk = fail_fsync(monkeypatch, first_failure=1)

    failed = patch(client, etag, OPS, "k")
    assert (failed.status, failed.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    assert state(client) == before

    disk.failing = False
    assert patch(client, etag, OPS, "k").status == 200
    assert patch(client, etag, OPS, "k").status == 200  # the same key: replayed
    assert_applied_once(client)


@pytest.mark.parametrize("first_failure", range(1, FSYNCS_PER_PATCH + 1))
def test_fsync_failing_at_any_point_of_a_patch_acknowledges_nothing(
    client: DirectClient, monkeypatch: pytest.MonkeyPatch, first_failure: int
):
    etag = create(client).data["etag"]
    before, _ = state(client)
    disk = fail_fsync(monkeypatch, first_failure)

    failed = patch(client, etag, OPS, "k")
    assert (failed.status, failed.error_code) == (503, "DEPENDENCY_UNAVAILABLE")
    renamed = first_failure > DOCUMENT_RENAMED_AFTER  # visible, but never acknowledged
    assert (state(client)[0] != before) is renamed

    disk.failing = False
    assert patch(client, etag, OPS, "k").status == 200
    assert patch(client, etag, OPS, "k").status == 200
    assert_applied_once(client)


def assert_applied_once(client: DirectClient) -> None:
    document, changes = state(client)
    assert document["document"]["content"]["preferences"] == [
        {"text": "Be brief."},
        {"text": "written once"},
    ]
    assert fold(map(AuditRecord.from_json, reversed(changes))) == document["document"]
    assert len(changes) == 2
