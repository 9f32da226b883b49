"""Event vectors for hybrid retrieval (issue 16): the index worker embeds what is stale
(:meth:`EventVectors.refresh`, never the write path), a search embeds its text and asks
the index for the nearest events (:meth:`EventVectors.dense`), and
:func:`memnet.services.fusion.fuse` blends that with the lexical ranking.

What is embedded for an event: its digest, then its keywords on a line of their own (the
same text the lexical index scores). A vector is stale when it was made by another model
or from another text; a changed model therefore re-embeds through the reindex path.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from memnet.domain.search_words import query_words
from memnet.ports import Embedder, EmbedderError, EventHit, EventQuery, IndexedEvent, VectorIndex

log = logging.getLogger("memnet.services.events")

EMBED_BATCH = 64  # texts per embedder call from the worker


def embedding_text(entry: IndexedEvent) -> str:
    keywords = ", ".join(entry.keywords)
    return f"{entry.digest}\nKeywords: {keywords}" if keywords else entry.digest


def text_hash(text: str) -> str:
    """What a stored vector was embedded from, to tell when it is stale (not a secret)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class EventVectors:
    """One embedder and the index that keeps its vectors."""

    def __init__(
        self, index: VectorIndex, embedder: Embedder, queries: Embedder | None = None
    ) -> None:
        """``queries``: the same model with a search's tighter time budget (bootstrap:
        a short timeout, no retries), so a slow model delays a search by at most that
        before it answers with words alone; ``embedder`` otherwise."""
        self._index, self._embedder = index, embedder
        self._queries = queries or embedder

    @property
    def model(self) -> str:
        return self._embedder.model

    def refresh(self, tenant_id: str, user_id: str, entries: Sequence[IndexedEvent]) -> int:
        """Embed and store the entries whose vector is missing or stale; the number
        embedded. :class:`EmbedderError` propagates (a transient one fails the job, so
        the queue retries it)."""
        texts = {e.event_id: embedding_text(e) for e in entries}
        wanted = [(event_id, text_hash(text)) for event_id, text in texts.items()]
        stale = set(self._index.stale_vectors(tenant_id, user_id, self.model, wanted))
        todo = [(event_id, digest) for event_id, digest in wanted if event_id in stale]
        done = 0
        for start in range(0, len(todo), EMBED_BATCH):
            batch = todo[start : start + EMBED_BATCH]
            vectors = self._embedder.embed([texts[event_id] for event_id, _ in batch])
            if len(vectors) != len(batch):
                raise EmbedderError("the embedder answered a vector count", transient=False)
            rows = [(e, h, v) for (e, h), v in zip(batch, vectors, strict=True)]
            done += self._index.put_vectors(tenant_id, user_id, self.model, rows)
        return done

    def dense(self, query: EventQuery) -> list[EventHit] | None:
        """The nearest events to the query's text, or None when it has no word to embed
        or the embedder fails (the search is then lexical alone; logged)."""
        if not query_words(query.text):
            return None
        try:
            (vector,) = self._queries.embed([query.text])
        except (EmbedderError, ValueError):
            log.warning("query not embedded; lexical search only", exc_info=True)
            return None
        return self._index.nearest(query, self.model, vector)
