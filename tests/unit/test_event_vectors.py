"""The service side of hybrid retrieval (memnet/services/search/vectors.py and the vector
part of memnet/services/search/index.py) on the embedded adapters: a search's deadline,
a batch the model refuses one text of, and one reindex per model change however many
workers see it at once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.queue import SqliteQueue
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.domain.layout import vector_model_name
from memnet.ports import Condition, EmbedderError, EventQuery, IndexedEvent, StorageUnavailable
from memnet.services.search.index import INDEX_QUEUE, IndexJobs
from memnet.services.search.vectors import QUERY_CALLS, EventVectors, embedding_text, text_hash

T = "2026-01-01T00:00:00Z"


class Embedder:
    """Length-and-letter vectors; refuses texts holding ``refuse``; sleeps ``delay``."""

    model, dimensions = "letters@3", 3

    def __init__(
        self, refuse: str = "\0", delay: float = 0.0, gate: threading.Event | None = None
    ) -> None:
        self.refuse, self.delay, self.calls, self.gate = refuse, delay, 0, gate

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        time.sleep(self.delay)
        if self.gate is not None:
            self.gate.wait(10)
        if any(self.refuse in text for text in texts):
            raise EmbedderError("400 from the model", transient=False)
        return [[float(len(t)), float(t.count("a")) + 1.0, 1.0] for t in texts]

    def describe(self) -> str:
        return self.model


def event(event_id: str, digest: str) -> IndexedEvent:
    return IndexedEvent("t1", "u1", event_id, T, "s1", "chat", digest)


@pytest.fixture
def index(tmp_path: Path) -> SqliteSearchIndex:
    return SqliteSearchIndex(tmp_path / "search.sqlite3")


def test_a_text_the_model_refuses_is_skipped_alone(index: SqliteSearchIndex) -> None:
    events = [event(f"e{i}", "bad apple" if i == 5 else f"text {i}") for i in range(9)]
    index.upsert(events)
    vectors = EventVectors(index, Embedder(refuse="bad"))
    assert vectors.refresh("t1", "u1", events) == 8
    wanted = [(e.event_id, text_hash(embedding_text(e))) for e in events]
    assert index.stale_vectors("t1", "u1", "letters@3", wanted) == ["e5"]


def test_a_search_waits_for_the_model_no_longer_than_its_deadline(
    index: SqliteSearchIndex,
) -> None:
    index.upsert([event("a", "alpha")])
    vectors = EventVectors(index, Embedder(), queries=Embedder(delay=1.0), deadline_seconds=0.2)
    started = time.monotonic()
    assert vectors.dense(EventQuery("t1", "u1", "alpha")) is None
    assert time.monotonic() - started < 1.0


def test_one_reindex_per_model_change_however_many_workers_see_it(tmp_path: Path) -> None:
    blobs = FileBlobStore(tmp_path / "blobs", "memnet")
    index = SqliteSearchIndex(tmp_path / "search.sqlite3")
    workers = [
        IndexJobs(
            blobs, index, SqliteQueue(tmp_path / "queue.sqlite3"), INDEX_QUEUE,
            vectors=EventVectors(index, Embedder()),
        )
        for _ in range(8)
    ]  # fmt: skip
    start, claimed = threading.Barrier(8), []

    def check(worker: IndexJobs) -> None:
        start.wait()
        claimed.append(worker.check_vector_model())

    threads = [threading.Thread(target=check, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == [False] * 7 + [True]
    assert not any(w.check_vector_model() for w in workers)  # once per process


def test_a_worker_that_cannot_ask_the_model_tries_again_later(tmp_path: Path) -> None:
    class Unsized(Embedder):
        @property
        def model(self) -> str:  # type: ignore[override]
            raise EmbedderError("probe failed", transient=True)

    blobs = FileBlobStore(tmp_path / "blobs", "memnet")
    index = SqliteSearchIndex(tmp_path / "search.sqlite3")
    queue = SqliteQueue(tmp_path / "queue.sqlite3")
    worker = IndexJobs(blobs, index, queue, INDEX_QUEUE, vectors=EventVectors(index, Unsized()))
    assert worker.check_vector_model() is False  # logged, not raised
    fixed = IndexJobs(blobs, index, queue, INDEX_QUEUE, vectors=EventVectors(index, Embedder()))
    assert fixed.check_vector_model() is True


def test_a_batch_the_model_refuses_whole_fails_the_job(index: SqliteSearchIndex) -> None:
    """A wrong key or model refuses every text: not one text's fault, so the job fails
    (and is retried) instead of succeeding with nothing stored."""
    events = [event(f"e{i}", f"bad {i}") for i in range(4)]
    index.upsert(events)
    with pytest.raises(EmbedderError):
        EventVectors(index, Embedder(refuse="bad")).refresh("t1", "u1", events)


def test_searches_do_not_queue_behind_slow_model_calls(index: SqliteSearchIndex) -> None:
    index.upsert([event("a", "alpha")])
    gate = threading.Event()  # the slow model answers when the test says so
    slow = EventVectors(index, Embedder(), queries=Embedder(gate=gate), deadline_seconds=0.1)
    waiting = [threading.Thread(target=slow.dense, args=(EventQuery("t1", "u1", "alpha"),))
               for _ in range(QUERY_CALLS)]  # fmt: skip
    for thread in waiting:
        thread.start()
    for thread in waiting:
        thread.join()
    fast = EventVectors(index, Embedder(), queries=Embedder(), deadline_seconds=0.5)
    started = time.monotonic()
    assert fast.dense(EventQuery("t1", "u1", "alpha")) is None  # every slot still held
    assert time.monotonic() - started < 0.4  # without waiting out its 0.5 s deadline
    gate.set()  # the slow calls end and give their slots back
    deadline = time.monotonic() + 10
    while (found := fast.dense(EventQuery("t1", "u1", "alpha"))) is None:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert found == []  # no vectors stored: none near


def jobs(tmp_path: Path, queue: SqliteQueue | None = None) -> IndexJobs:
    blobs = FileBlobStore(tmp_path / "blobs", "memnet")
    index = SqliteSearchIndex(tmp_path / "search.sqlite3")
    queue = queue or SqliteQueue(tmp_path / "queue.sqlite3")
    return IndexJobs(blobs, index, queue, INDEX_QUEUE, vectors=EventVectors(index, Embedder()))


def test_a_change_whose_reindex_failed_is_taken_up_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = jobs(tmp_path)

    def failing(*_: object) -> dict[str, int]:
        raise StorageUnavailable("queue down")

    monkeypatch.setattr(worker, "reindex", failing)
    assert worker.check_vector_model() is False  # logged; the claim withdrawn
    monkeypatch.undo()
    assert jobs(tmp_path).check_vector_model() is True


def test_a_claim_left_pending_is_taken_up_after_a_while(tmp_path: Path) -> None:
    blobs = FileBlobStore(tmp_path / "blobs", "memnet")
    stale = {"model": "letters@3", "pending": True, "claimed_at": time.time() - 3600}
    blobs.write(vector_model_name(), json.dumps(stale).encode(), Condition.create_only())
    assert jobs(tmp_path).check_vector_model() is True
    fresh = {"model": "letters@3", "pending": True, "claimed_at": time.time()}
    held = blobs.read(vector_model_name())
    blobs.write(vector_model_name(), json.dumps(fresh).encode(), Condition.match(held.etag))
    assert jobs(tmp_path).check_vector_model() is False  # under way elsewhere
