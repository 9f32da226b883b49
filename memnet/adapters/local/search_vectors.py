"""Event vectors beside the embedded search index (:mod:`.search`; issue 16, hybrid
retrieval): one row per (user, event) in the same SQLite file, so a delete removes an
event's terms and vector in one transaction, and a reindex rebuilds both.

A row keeps the embedding model's name (the :class:`~memnet.ports.Embedder`'s ``model``,
which names its vector size too) and a hash of the text embedded: a vector of another
model or text is stale, and :func:`stale` lists it for the index worker to embed again
(a changed model re-embeds through the reindex path). Vectors are stored as unit-length
little-endian float32, so a dot product is the cosine.

Dense search (:func:`nearest`) is exact and per user: the user's newest ``limit`` vectors
of the model that pass the query's filters are read and scored with one matrix product
(numpy). No approximate index: a user's memory is thousands of events, not millions, and
the bound keeps the work of one search fixed (docs/decisions.md). ``sqlite-vec`` was the
alternative; it is a loadable extension, and Python builds without
``enable_load_extension`` (this one, and not every host's) cannot load it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import numpy as np

from memnet.adapters.local.search_terms import filters
from memnet.ports import EventHit, EventQuery

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS vectors (scope_id INTEGER NOT NULL, event_id TEXT NOT NULL,
        model TEXT NOT NULL, text_hash TEXT NOT NULL, vec BLOB NOT NULL,
        PRIMARY KEY (scope_id, event_id))""",
)
# CROSS JOIN: the user's events newest first drive the loop (SQLite keeps the order). With a
# project or keyword filter the planner otherwise read every vector of the user, then sorted
# them: ~1.4 s a search at 10k vectors, ~100 s at 100k (bench/search_vectors.py).
_NEWEST_VECTORS = """SELECT e.event_id, e.timestamp, v.vec FROM events AS e
    CROSS JOIN vectors AS v ON v.scope_id = e.scope_id AND v.event_id = e.event_id
    WHERE e.scope_id = ? AND v.model = ? {} ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""


def unit(vector: Sequence[float]) -> bytes:
    """A vector as stored: float32, unit length (a zero or non-finite vector is refused)."""
    array = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(array))
    if array.ndim != 1 or not np.isfinite(array).all() or norm == 0.0:
        raise ValueError("a vector must be a non-zero list of finite numbers")
    return (array / norm).astype("<f4").tobytes()


def put(
    db: sqlite3.Connection, scope: int, model: str, rows: Sequence[tuple[str, str, bytes]]
) -> int:
    """Store (event_id, text_hash, unit vector) rows of events the index holds (one gone
    meanwhile is skipped); the number stored."""
    stored = 0
    for event_id, digest_hash, vec in rows:
        held = db.execute(
            "SELECT 1 FROM events WHERE scope_id = ? AND event_id = ?", (scope, event_id)
        ).fetchone()
        if held is not None:
            db.execute(
                "INSERT OR REPLACE INTO vectors (scope_id, event_id, model, text_hash, vec)"
                " VALUES (?, ?, ?, ?, ?)",
                (scope, event_id, model, digest_hash, vec),
            )
            stored += 1
    return stored


def stale(
    db: sqlite3.Connection, scope: int, model: str, wanted: Sequence[tuple[str, str]]
) -> list[str]:
    """The event ids of (event_id, text_hash) pairs with no vector of this model and text."""
    out = []
    for event_id, digest_hash in wanted:
        row = db.execute(
            "SELECT model, text_hash FROM vectors WHERE scope_id = ? AND event_id = ?",
            (scope, event_id),
        ).fetchone()
        if row is None or tuple(row) != (model, digest_hash):
            out.append(event_id)
    return out


def remove(db: sqlite3.Connection, scope: int, event_ids: Sequence[str]) -> None:
    db.executemany(
        "DELETE FROM vectors WHERE scope_id = ? AND event_id = ?",
        ((scope, event_id) for event_id in event_ids),
    )


def nearest(
    db: sqlite3.Connection,
    scope: int,
    query: EventQuery,
    model: str,
    vector: bytes,
    limit: int,
) -> list[EventHit]:
    """The query's top k by cosine among the user's newest ``limit`` vectors of ``model``
    passing its filters; equal scores newer first (the rows' order), then the larger id."""
    where, params = filters(query, scope)
    rows = db.execute(_NEWEST_VECTORS.format(where), (scope, model, *params, limit)).fetchall()
    probe = np.frombuffer(vector, dtype="<f4")
    usable = [row for row in rows if len(row[2]) == len(vector)]
    if not usable or query.top_k <= 0:
        return []
    matrix = np.frombuffer(b"".join(row[2] for row in usable), dtype="<f4")
    scores = matrix.reshape(len(usable), probe.size) @ probe
    order = np.argsort(-scores, kind="stable")[: query.top_k]  # ties keep the rows' order
    return [
        EventHit(event_id=usable[i][0], score=float(scores[i]), timestamp=usable[i][1])
        for i in order.tolist()
    ]
