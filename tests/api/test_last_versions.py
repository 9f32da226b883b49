"""A write whose If-Match names the version this instance last read or wrote decides on
it without reading the document (memnet.services.documents.last_versions.LastVersions); the
conditional write checks it. Two instances share one store here, so each can make the
other's memory stale: every answer must be the one a fresh read would give."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.adapters.memory.blobstore import MemoryBlobStore
from memnet.container import Services
from memnet.ports import Blob
from memnet.services.documents.last_versions import LastVersions
from tests.clients import DirectClient, Reply
from tests.conftest import AGENT_KEY, make_settings

URL = "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json"


def add(text: str) -> dict[str, Any]:
    return {"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": text}}]}


DOCUMENT = "tenants/t1/users/u1/documents/user/user_dynamic.json"


class Counting(MemoryBlobStore):
    """Counts the reads of the document."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        self.reads += name == DOCUMENT
        return super().read(name, max_bytes=max_bytes)


class Instances:
    """Two instances of the app over one blob store; ``patch(i, ...)`` runs on instance i."""

    def __init__(self, root: Path) -> None:
        store = Counting()
        self.blobs = store
        self.services: list[Services] = [
            bootstrap.build(make_settings(root / str(i)), blobs=store) for i in range(2)
        ]
        self.client = DirectClient(AGENT_KEY)
        self.keys = 0

    def patch(self, i: int, body: dict[str, Any], **headers: str) -> Reply:
        self.keys += 1
        bootstrap.install(self.services[i])
        return self.client.request(
            "PATCH", URL, body, {"Idempotency-Key": f"k{self.keys}", **headers}
        )


@pytest.fixture
def instances(tmp_path: Path) -> Iterator[Instances]:
    found = Instances(tmp_path)
    yield found
    bootstrap.install(None)


def preferences(reply: Reply) -> list[str]:
    return [p["text"] for p in reply.data["document"]["content"]["preferences"]]


def test_a_write_on_the_version_this_instance_wrote_reads_no_document(
    instances: Instances,
) -> None:
    etag = instances.patch(0, add("one"), **{"If-None-Match": "*"}).headers["etag"]
    instances.blobs.reads = 0
    reply = instances.patch(0, add("two"), **{"If-Match": etag})
    assert reply.status == 200, reply.data
    assert instances.blobs.reads == 0
    assert preferences(reply) == ["one", "two"]


def test_a_version_made_stale_by_another_instance_is_412_with_the_latest(
    instances: Instances,
) -> None:
    first = instances.patch(0, add("one"), **{"If-None-Match": "*"}).headers["etag"]
    latest = instances.patch(1, add("two"), **{"If-Match": first}).headers["etag"]
    stale = instances.patch(0, add("three"), **{"If-Match": first})  # 0 remembers `first`
    assert stale.status == 412 and stale.error_code == "ETAG_MISMATCH", stale.data
    assert stale.data["error"]["details"]["latest_etag"] == latest
    fresh = instances.patch(0, add("three"), **{"If-Match": latest})  # not what 0 remembers
    assert fresh.status == 200, fresh.data
    assert preferences(fresh) == ["one", "two", "three"]


def test_a_document_deleted_behind_the_memory_is_not_written_again(
    instances: Instances,
) -> None:
    etag = instances.patch(0, add("one"), **{"If-None-Match": "*"}).headers["etag"]
    instances.blobs.delete(DOCUMENT)
    reply = instances.patch(0, add("two"), **{"If-Match": etag})
    assert reply.status in (404, 412), reply.data
    assert not list(instances.blobs.list_names("tenants/t1/users/u1/documents/"))


def test_last_versions_hold_only_the_named_etag_within_their_bounds() -> None:
    versions = LastVersions(max_documents=2, max_bytes=100)
    versions.put("a", "e1", b"x" * 10)
    assert versions.get("a", "e1") == b"x" * 10 and versions.get("a", "e0") is None
    versions.put("b", "e1", b"y")
    versions.put("c", "e1", b"z")  # over the count: the least recently used (a) goes
    assert versions.get("a", "e1") is None and versions.get("c", "e1") == b"z"
    versions.put("d", "e1", b"w" * 26)  # over a quarter of the bytes: not kept
    assert versions.get("d", "e1") is None
    versions.put("b", "e2", b"v")  # a newer version replaces the older
    assert versions.get("b", "e1") is None and versions.get("b", "e2") == b"v"
