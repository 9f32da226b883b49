"""Many writers at once: no lost update, no double apply (spec 14; docs/decisions.md,
"Idempotency")."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from memnet.domain.audit_records import AuditRecord, fold
from tests.api.test_documents import create, patch
from tests.clients import ApiClient
from tests.conftest import doc_url

URL = doc_url("projects/hot.json")


def _write_until_landed(client: ApiClient, note: str) -> int:
    """Read, patch with If-Match, refetch on 412; returns how many 412s it saw."""
    conflicts = 0
    key = f"w-{uuid.uuid4().hex}"
    while True:
        tag = client.request("GET", URL).data["etag"]
        reply = patch(
            client,
            tag,
            [{"op": "add", "path": "/content/recent_notes/-", "value": {"note": note}}],
            key,
            url=URL,
        )
        if reply.status == 200:
            return conflicts
        assert reply.status == 412, reply.data
        conflicts += 1
        key = f"w-{uuid.uuid4().hex}"


def test_hot_document_racing_writers_lose_nothing(client: ApiClient):
    create(client, URL, [{"op": "replace", "path": "/content/summary", "value": "hot"}])
    notes = [f"n{i}" for i in range(24)]
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda n: _write_until_landed(client, n), notes))
    document = client.request("GET", URL).data["document"]
    assert sorted(n["note"] for n in document["content"]["recent_notes"]) == sorted(notes)
    changes = client.request("GET", URL + ":history?limit=1000").data["changes"]
    pre_etags = [c["pre_etag"] for c in changes]
    assert len(set(pre_etags)) == len(pre_etags) == 25  # exactly one winner per ETag
    assert fold(map(AuditRecord.from_json, reversed(changes))) == document


def test_concurrent_requests_with_one_key_execute_once(client: ApiClient):
    tag = create(client, URL, [{"op": "replace", "path": "/content/summary", "value": "s"}]).data[
        "etag"
    ]
    barrier = threading.Barrier(6)

    def send(_: int) -> tuple[int, str | None]:
        barrier.wait()
        reply = patch(
            client,
            tag,
            [{"op": "add", "path": "/content/recent_notes/-", "value": {"note": "once"}}],
            "same-key",
            url=URL,
        )
        return reply.status, reply.error_code

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(send, range(6)))
    assert all(s == 200 or (s, c) == (409, "IDEMPOTENCY_KEY_IN_PROGRESS") for s, c in results)
    assert results.count((200, None)) >= 1
    notes = client.request("GET", URL).data["document"]["content"]["recent_notes"]
    assert notes == [{"note": "once"}]
