"""The service side of hybrid retrieval (memnet/services/event_vectors.py and the vector
part of memnet/services/event_index.py) on the embedded adapters: a search's deadline,
a batch the model refuses one text of, and one reindex per model change however many
workers see it at once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.queue import SqliteQueue
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.ports import EmbedderError, EventQuery, IndexedEvent
from memnet.services.event_index import INDEX_QUEUE, IndexJobs
from memnet.services.event_vectors import EventVectors, embedding_text, text_hash

T = "2026-01-01T00:00:00Z"


class Embedder:
    """Length-and-letter vectors; refuses texts holding ``refuse``; sleeps ``delay``."""

    model, dimensions = "letters@3", 3

    def __init__(self, refuse: str = "\0", delay: float = 0.0) -> None:
        self.refuse, self.delay, self.calls = refuse, delay, 0

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        time.sleep(self.delay)
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
    vectors = EventVectors(index, Embedder(), queries=Embedder(delay=2.0), deadline_seconds=0.2)
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
