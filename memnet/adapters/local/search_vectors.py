"""Event vectors beside the embedded search index (:mod:`.search`; issue 16, hybrid
retrieval): one row per (user, event) in the same SQLite file, so a delete removes an
event's terms and vector in one transaction, and a reindex rebuilds both.

A row keeps the embedding model's name (the :class:`~memnet.ports.Embedder`'s ``model``,
which names its vector size too) and a hash of the text embedded: a vector of another
model or text is stale, and :func:`stale` lists it for the index worker to embed again
(a changed model re-embeds through the reindex path). Vectors are stored as unit-length
little-endian float32, so a dot product is the cosine.

Dense search (:func:`nearest`) is exact and per user: the user's newest ``limit`` vectors
of the model, as one matrix (:class:`Block`), are scored with one matrix product (numpy);
a filter picks the rows that pass it among them. Reading a block costs a read of every
row (36 ms at 10,000 vectors), so blocks are kept in memory (:class:`VectorCache`,
256 MiB per index object, least recently used out) and reused while the user's
``vectors_version`` is the one they were read at: every change of a user's vectors sets
a new random version in the same transaction, so any process sees a change at once.
No approximate index: a user's memory is thousands of events, not millions, and
the bound keeps the work of one search fixed (docs/decisions.md). ``sqlite-vec`` was the
alternative; it is a loadable extension, and Python builds without
``enable_load_extension`` (this one, and not every host's) cannot load it.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memnet.adapters.local.search_terms import filters
from memnet.ports import EventHit, EventQuery

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS vectors (scope_id INTEGER NOT NULL, event_id TEXT NOT NULL,
        model TEXT NOT NULL, text_hash TEXT NOT NULL, vec BLOB NOT NULL,
        PRIMARY KEY (scope_id, event_id))""",
)
VERSION_COLUMN = ("scopes", "vectors_version", "INTEGER NOT NULL DEFAULT 0")
CACHE_BYTES = 256 << 20  # vectors kept in memory per index object, least recently used out

# CROSS JOIN: the user's events newest first drive the loop (SQLite keeps the order);
# otherwise the planner may read every vector of the user, then sort them.
_NEWEST_VECTORS = """SELECT e.event_id, e.timestamp, e.ts_us, v.vec FROM events AS e
    CROSS JOIN vectors AS v ON v.scope_id = e.scope_id AND v.event_id = e.event_id
    WHERE e.scope_id = ? AND v.model = ? ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""
# The events passing a filter within the block's time span, newest first. Not joined with
# the vectors (a lookup per event doubled p95 at 1M): events without a vector of the model
# are dropped in memory, and the span bounds the list. SPAN_SLACK more rows than the block
# holds are read, so events without vectors (a model change being re-embedded) do not
# crowd out the block's own.
_PASSING = """SELECT e.event_id FROM events AS e WHERE e.scope_id = ? AND e.ts_us >= ? {}
    ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""
SPAN_SLACK = 4
# When the span holds more events than that (a model change being re-embedded), the list
# is read again joined with the vectors, so that none of the block's rows is cut off.
_PASSING_WITH_VECTORS = """SELECT e.event_id FROM events AS e
    CROSS JOIN vectors AS v ON v.scope_id = e.scope_id AND v.event_id = e.event_id
    WHERE e.scope_id = ? AND e.ts_us >= ? AND v.model = ? {}
    ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""


@dataclass(frozen=True)
class Block:
    """A user's newest vectors of one model, newest first, as one matrix."""

    version: int
    ids: list[str]
    timestamps: list[str]
    oldest_us: int
    matrix: np.ndarray[Any, np.dtype[np.float32]]
    positions: dict[str, int] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return int(self.matrix.nbytes) + 120 * len(self.ids)


class VectorCache:
    """Blocks by (scope, model), each valid for the ``vectors_version`` it was read at:
    every change of a user's vectors gives the user a new random version in the same
    transaction, so a block is used only while the file still holds exactly what it was
    built from, in any process. Least recently used blocks leave beyond ``max_bytes``."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        self._max, self._used = max_bytes, 0
        self._blocks: OrderedDict[tuple[int, str], Block] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str], version: int) -> Block | None:
        with self._lock:
            block = self._blocks.get(key)
            if block is None or block.version != version:
                return None
            self._blocks.move_to_end(key)
            return block

    @property
    def used(self) -> int:
        """Bytes of the blocks kept."""
        return self._used

    def drop(self, scope: int) -> None:
        """Forget a user's blocks in this process (after their vectors were deleted): no
        use could reach them (their version is gone), but they should not linger."""
        with self._lock:
            for key in [k for k in self._blocks if k[0] == scope]:
                self._used -= self._blocks.pop(key).bytes

    def put(self, key: tuple[int, str], block: Block) -> None:
        with self._lock:
            old = self._blocks.pop(key, None)
            self._used -= old.bytes if old is not None else 0
            if block.bytes > self._max:
                return
            self._blocks[key] = block
            self._used += block.bytes
            while self._used > self._max:
                _, dropped = self._blocks.popitem(last=False)
                self._used -= dropped.bytes


def touched(db: sqlite3.Connection, scope: int) -> None:
    """Mark a user's vectors changed (inside the writing transaction)."""
    version = secrets.randbits(62) + 1
    db.execute("UPDATE scopes SET vectors_version = ? WHERE scope_id = ?", (version, scope))


def unit(vector: Sequence[float]) -> bytes:
    """A vector as stored: float32, unit length (a zero or non-finite vector is refused)."""
    array = np.asarray(vector, dtype=np.float64)
    if array.ndim != 1 or array.size == 0 or not np.isfinite(array).all():
        raise ValueError("a vector must be a non-zero list of finite numbers")
    scaled = array / max(float(np.abs(array).max()), np.finfo(np.float64).tiny)
    norm = float(np.linalg.norm(scaled))  # scaled first: 1e300 squared does not overflow
    if not array.any() or not np.isfinite(norm) or norm == 0.0:
        raise ValueError("a vector must be a non-zero list of finite numbers")
    return (scaled / norm).astype("<f4").tobytes()


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
    if stored:
        touched(db, scope)
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


def remove(db: sqlite3.Connection, scope: int, event_ids: Sequence[str]) -> bool:
    """Delete the events' vectors; whether there were any."""
    before = db.total_changes
    db.executemany(
        "DELETE FROM vectors WHERE scope_id = ? AND event_id = ?",
        ((scope, event_id) for event_id in event_ids),
    )
    if db.total_changes == before:
        return False
    touched(db, scope)
    return True


def nearest(
    db: sqlite3.Connection,
    scope: int,
    query: EventQuery,
    model: str,
    vector: bytes,
    limit: int,
    cache: VectorCache,
) -> list[EventHit]:
    """The query's top k by cosine among the user's newest ``limit`` vectors of ``model``
    that pass its filters; equal scores newer first, then the larger id. The vectors come
    from ``cache`` while the user's are unchanged (one read of the file otherwise)."""
    version = db.execute("SELECT vectors_version FROM scopes WHERE scope_id = ?", (scope,))
    current = int(version.fetchone()[0])
    block = cache.get((scope, model), current)
    if block is None:
        block = _read_block(db, scope, model, limit, current)
        cache.put((scope, model), block)
    probe = np.frombuffer(vector, dtype="<f4")
    if query.top_k <= 0 or not block.ids or block.matrix.shape[1] != probe.size:
        return []
    rows = _passing(db, scope, model, query, block, limit)
    scores = block.matrix @ probe  # all rows: cheaper than copying the passing ones out
    if rows is not None:
        scores = scores[rows]
    order = np.argsort(-scores, kind="stable")[: query.top_k]  # ties keep the rows' order
    picked = order.tolist() if rows is None else [rows[i] for i in order.tolist()]
    return [
        EventHit(event_id=block.ids[row], score=float(score), timestamp=block.timestamps[row])
        for row, score in zip(picked, scores[order].tolist(), strict=True)
    ]


def _read_block(db: sqlite3.Connection, scope: int, model: str, limit: int, version: int) -> Block:
    rows = db.execute(_NEWEST_VECTORS, (scope, model, limit)).fetchall()
    size = len(rows[0][3]) if rows else 0
    rows = [row for row in rows if len(row[3]) == size]  # another size: never scored
    matrix = np.frombuffer(b"".join(row[3] for row in rows), dtype="<f4")
    ids = [str(row[0]) for row in rows]
    return Block(
        version=version,
        ids=ids,
        timestamps=[str(row[1]) for row in rows],
        oldest_us=int(rows[-1][2]) if rows else 0,
        matrix=matrix.reshape(len(rows), size // 4),
        positions={event_id: i for i, event_id in enumerate(ids)},
    )


def _passing(
    db: sqlite3.Connection, scope: int, model: str, query: EventQuery, block: Block, limit: int
) -> list[int] | None:
    """The block's rows that pass the query's filters, newest first (None: no filter)."""
    where, params = filters(query, scope)
    if not where:
        return None
    bound = SPAN_SLACK * max(limit, 1)
    found = db.execute(_PASSING.format(where), (scope, block.oldest_us, *params, bound))
    ids = [str(event_id) for (event_id,) in found]
    if len(ids) == bound:
        joined = _PASSING_WITH_VECTORS.format(where)
        found = db.execute(joined, (scope, block.oldest_us, model, *params, limit))
        ids = [str(event_id) for (event_id,) in found]
    return [row for event_id in ids if (row := block.positions.get(event_id)) is not None]
