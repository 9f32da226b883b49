"""Event vectors for hybrid retrieval (issue 16): the index worker embeds what is stale
(:meth:`EventVectors.refresh`, never the write path), a search embeds its text and asks
the index for the nearest events (:meth:`EventVectors.dense`), and
:func:`memnet.services.search.fusion.fuse` blends that with the lexical ranking.

What is embedded for an event: its digest, then its keywords on a line of their own (the
same text the lexical index scores). A vector is stale when it was made by another model
or from another text; a changed model therefore re-embeds through the reindex path.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import logging
import threading
from collections.abc import Iterator, Sequence

from memnet.domain.search_words import query_words
from memnet.ports import (
    Embedder,
    EmbedderError,
    EventHit,
    EventQuery,
    IndexedEvent,
    StorageError,
    VectorIndex,
)

log = logging.getLogger("memnet.services.events.service")

EMBED_BATCH = 64  # texts per embedder call from the worker


def embedding_text(entry: IndexedEvent) -> str:
    keywords = ", ".join(entry.keywords)
    return f"{entry.digest}\nKeywords: {keywords}" if keywords else entry.digest


def text_hash(text: str) -> str:
    """What a stored vector was embedded from, to tell when it is stale (not a secret)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


QUERY_DEADLINE_SECONDS = 5.0  # a search waits at most this for its text's vector
QUERY_CALLS = 4  # model calls for searches under way at once, per process
_QUERY_THREADS = concurrent.futures.ThreadPoolExecutor(QUERY_CALLS, "memnet-embed")
_QUERY_SLOTS = threading.BoundedSemaphore(QUERY_CALLS)


class EventVectors:
    """One embedder and the index that keeps its vectors."""

    def __init__(
        self,
        index: VectorIndex,
        embedder: Embedder,
        queries: Embedder | None = None,
        deadline_seconds: float = QUERY_DEADLINE_SECONDS,
    ) -> None:
        """``queries``: the same model for searches, with a tighter budget per request
        (wiring: a short timeout, no retry); ``embedder`` otherwise. A search also waits
        at most ``deadline_seconds`` for it in all (a server that trickles its answer,
        a slow identity token), then answers with words alone."""
        self._index, self._embedder = index, embedder
        self._queries = queries or embedder
        self._deadline = deadline_seconds

    @property
    def model(self) -> str:
        return self._embedder.model

    @property
    def query_embedder(self) -> Embedder:
        """The embedder searches use (the tighter budget)."""
        return self._queries

    def describe(self) -> str:
        return self._embedder.describe()

    def refresh(self, tenant_id: str, user_id: str, entries: Sequence[IndexedEvent]) -> int:
        """Embed and store the entries whose vector is missing or stale; the number
        embedded. A transient :class:`EmbedderError` (or an unavailable index)
        propagates, so the queue retries the job; a text the model refuses is logged and
        skipped alone (its batch is split until only it is left)."""
        texts = {e.event_id: embedding_text(e) for e in entries}
        wanted = [(event_id, text_hash(text)) for event_id, text in texts.items()]
        stale = set(self._index.stale_vectors(tenant_id, user_id, self.model, wanted))
        todo = [(event_id, digest) for event_id, digest in wanted if event_id in stale]
        done = 0
        for start in range(0, len(todo), EMBED_BATCH):
            batch, refused = todo[start : start + EMBED_BATCH], list[EmbedderError]()
            for part, vectors in self._embedded(batch, texts, refused):
                rows = [(e, h, v) for (e, h), v in zip(part, vectors, strict=True)]
                done += self._index.put_vectors(tenant_id, user_id, self.model, rows)
            if len(batch) > 1 and len(refused) == len(batch):  # every text: the model's fault
                raise refused[-1]  # (a wrong key or model): the job fails, loudly, and retries
        return done

    def _embedded(
        self, batch: list[tuple[str, str]], texts: dict[str, str], refused: list[EmbedderError]
    ) -> Iterator[tuple[list[tuple[str, str]], list[list[float]]]]:
        """(part of the batch, its vectors), halving a batch the model refuses; the error
        of each text refused alone goes to ``refused``."""
        try:
            vectors = self._embedder.embed([texts[event_id] for event_id, _ in batch])
            if len(vectors) != len(batch):
                raise EmbedderError("the embedder answered another vector count", transient=False)
        except EmbedderError as e:
            if e.transient:
                raise
            if len(batch) == 1:
                log.warning("event %s not embedded: %s", batch[0][0], e)
                refused.append(e)
                return
            half = len(batch) // 2
            yield from self._embedded(batch[:half], texts, refused)
            yield from self._embedded(batch[half:], texts, refused)
            return
        yield batch, vectors

    def dense(self, query: EventQuery) -> list[EventHit] | None:
        """The nearest events to the query's text, or None (the search is then lexical
        alone; logged) when it has no word to embed, the model fails or takes longer than
        the deadline, or the index cannot answer with vectors. At most
        :data:`QUERY_CALLS` model calls run at once in a process, each until it ends
        (a call given up on still holds its slot): a search that finds none free does not
        wait, so a slow model never queues searches behind it."""
        if not query_words(query.text):
            return None
        if not _QUERY_SLOTS.acquire(blocking=False):  # every slot held by a slow call
            log.warning("model busy (%d calls under way); lexical search only", QUERY_CALLS)
            return None
        asked = _QUERY_THREADS.submit(self._queries.embed, [query.text])
        asked.add_done_callback(lambda _: _QUERY_SLOTS.release())  # when the call ends
        try:
            (vector,) = asked.result(timeout=self._deadline)
            model = self._queries.model  # known from the answer: no request
            return self._index.nearest(query, model, vector)
        except concurrent.futures.TimeoutError:
            log.warning("query not embedded within %.1f s; lexical search only", self._deadline)
        except (EmbedderError, StorageError, ValueError):
            log.warning("no semantic ranking; lexical search only", exc_info=True)
        return None
