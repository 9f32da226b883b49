"""The embedded :class:`~memnet.ports.SearchIndex`: SQLite, with BM25 over impact-ordered
postings (docs/decisions.md, "Events and search"; spec 10.6). Derived data: the reindex
job rebuilds it from the event blobs.

Tables: ``scopes`` maps (tenant, user) to a small ``scope_id`` and counts the user's
events; ``events`` holds every field, unique on (scope_id, event_id), ``ts_us`` = UTC
microseconds (exact comparisons whatever the writer's offset), indexed on (scope_id[,
service_id | source_type], ts_us), and ``terms``, the event's terms with their impacts
(JSON); ``event_tags`` holds project ids and keywords keyed (scope_id, kind, value,
doc_id), so a collection filter is an index range of one user; ``postings`` holds one row
per (user, term, event), keyed in ranking order: highest impact first, then newest
(``rank`` = -impact, ``age`` = -ts_us); ``term_docs`` counts a user's events per term.

Everything is per user: a search reads this user's postings and counts alone, however
many other users there are, and BM25's statistics are the user's own.

Ranking (:mod:`.search_rank`): the threshold algorithm reads each query term's postings
from the top and stops as soon as no unread event can enter the top k; the answer is
exact. Cost grows with how deep the lists must be read, not with the user's events; a
query whose words are all common in this user's events can still need deep reads, so a
search reads at most ``max_postings`` postings (setting ``MEMNET_SEARCH_MAX_POSTINGS``)
and then returns the best events met (docs/performance.md, "Event search", measures
how often that differs from the exact answer). When one filtered field alone selects at
most :data:`~.search_postings.FILTER_FIRST` events, those are scored directly (exact).

Terms: SQLite FTS5's tokenizer (``porter unicode61 remove_diacritics 2``), run through a
per-connection temporary FTS5 table and read back with ``fts5vocab``: ``café`` ~ ``cafe``
(Latin script), porter stems ``memories`` ~ ``memory``; marks stay inside words (Indic
scripts). FTS5 never sees a query: no MATCH runs, query text is split into words
(NFKC) before it is analysed, and terms reach SQL only as bound parameters. The
analyser's version is kept in ``meta``; a change re-derives every event's terms.

Concurrency: a connection per thread and process, WAL, busy timeout, ``BEGIN IMMEDIATE``;
a search's reads share one read transaction, so they see one state of the file.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import threading
import unicodedata
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memnet.adapters.local import search_rank, search_vectors
from memnet.adapters.local.search_postings import (
    TOKENIZER,
    Counts,
    Ranking,
    SearchStats,
    analyse,
    prepare,
)
from memnet.adapters.local.search_terms import field_counts, filters, utc
from memnet.adapters.local.search_writes import (
    COLUMNS,
    SCHEMA,
    insert_event,
    rederive_terms,
    remove_event,
)
from memnet.adapters.local.sqlite_wal import erase_deleted, use_wal
from memnet.domain.search_words import query_words
from memnet.domain.timestamps import format_timestamp
from memnet.ports import EventHit, EventQuery, IndexedEvent, StorageError, StorageUnavailable

BUSY_TIMEOUT_SECONDS = 10.0
LIST_PAGE = 1000
MAX_POSTINGS = 512
MAX_VECTORS = 20_000  # a dense search scores at most the user's newest this many vectors
TAG_LIST = 4096  # newest first: a project/keyword filter selecting more is probed per event
CACHE_KIB = 65_536  # page cache per connection, at most
MMAP_BYTES = 1 << 30  # reads map the file: a ranked search reads pages at random
TERMS_VERSION = (  # bump when terms or impacts change: every event's terms are re-derived
    f"3/{TOKENIZER}/{unicodedata.unidata_version}"
    f"/{search_rank.AVERAGE_LENGTH}/{search_rank.K1}/{search_rank.B}/{search_rank.SCALE}"
)
_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED (primary result codes)

_NEWEST = """SELECT e.event_id, e.timestamp, 0.0 FROM events AS e WHERE e.scope_id = ? {}
    ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""
_PAGE = f"""SELECT event_id FROM events WHERE scope_id = ? AND event_id > ?
    ORDER BY event_id LIMIT {LIST_PAGE}"""
_SCOPE = "SELECT scope_id, docs FROM scopes WHERE tenant_id = ? AND user_id = ?"


class SqliteSearchIndex:
    """BM25 search over event digests in one SQLite file; safe across threads and processes.
    The constructor does no I/O: the file and schema are created on first use."""

    def __init__(
        self, path: Path, max_postings: int = MAX_POSTINGS, max_vectors: int = MAX_VECTORS
    ) -> None:
        """``max_postings``: the postings a ranked search reads at most (0: no limit, every
        answer exact); ``max_vectors``: the newest vectors a dense search scores."""
        if max_postings < 0:
            raise ValueError("max_postings must be 0 (no limit) or positive")
        if max_vectors < 1:
            raise ValueError("max_vectors must be positive")
        self._path = path
        self._max_postings = max_postings or sys.maxsize
        self._max_vectors = max_vectors
        self._vectors = search_vectors.VectorCache()
        self._local = threading.local()
        self._ready_pid: int | None = None
        self._ready_lock = threading.Lock()

    def describe(self) -> str:
        return "sqlite search index (impact-ordered BM25)"  # no path (health)

    def upsert(self, events: list[IndexedEvent]) -> None:
        """Insert or replace by (tenant, user, event_id), all in one transaction."""
        rows = [(event, utc(event.timestamp)) for event in events]  # validate before locking
        with self._write() as db:
            analysed = analyse(db, [(e.digest, " ".join(e.keywords)) for e in events])
            counts = Counts()
            scopes: dict[tuple[str, str], int] = {}  # a batch is mostly one user's events
            for (event, moment), terms in zip(rows, analysed, strict=True):
                owner = (event.tenant_id, event.user_id)
                scope = scopes.get(owner)
                if scope is None:
                    scope = scopes[owner] = _ensure_scope(db, *owner)
                held = remove_event(db, scope, event.event_id, counts)
                if held is not None and held != (event.digest, list(event.keywords)):
                    search_vectors.remove(db, scope, [event.event_id])  # made from other text
                insert_event(db, scope, event, moment, search_rank.impacts(*terms), counts)
            counts.apply(db)

    def delete(self, tenant_id: str, user_id: str, event_ids: list[str]) -> None:
        """Remove entries; missing ones are ignored."""
        with self._write() as db:
            found = _find_scope(db, tenant_id, user_id)
            if found is None:
                return
            counts = Counts()
            for event_id in event_ids:
                remove_event(db, found[0], event_id, counts)
            counts.apply(db)
            removed = search_vectors.remove(db, found[0], event_ids)
        if removed:
            self._vectors.drop(found[0])  # in this process; others' copies are outdated

    # -- vectors (hybrid retrieval: .search_vectors) ------------------------------------

    def put_vectors(
        self, tenant_id: str, user_id: str, model: str, rows: list[tuple[str, str, list[float]]]
    ) -> int:
        """Store (event_id, text_hash, vector) of ``model`` for events the index holds;
        the number stored (an event deleted meanwhile is skipped)."""
        packed = [(e, h, search_vectors.unit(v)) for e, h, v in rows]  # checked before locking
        with self._write() as db:
            found = _find_scope(db, tenant_id, user_id)
            return 0 if found is None else search_vectors.put(db, found[0], model, packed)

    def stale_vectors(
        self, tenant_id: str, user_id: str, model: str, wanted: list[tuple[str, str]]
    ) -> list[str]:
        """The event ids of (event_id, text_hash) with no vector of this model and text."""
        with _mapped():
            db = self._db()
            found = _find_scope(db, tenant_id, user_id)
            if found is None:
                return [event_id for event_id, _ in wanted]
            return search_vectors.stale(db, found[0], model, wanted)

    def nearest(self, query: EventQuery, model: str, vector: list[float]) -> list[EventHit]:
        """Best first by cosine among the user's newest ``max_vectors`` of ``model``
        passing the query's filters (its text is not used)."""
        probe = search_vectors.unit(vector)
        with _mapped():
            db = self._db()
            with _transaction(db, "DEFERRED"):
                found = _find_scope(db, query.tenant_id, query.user_id)
                if found is None:
                    return []
                return search_vectors.nearest(
                    db, found[0], query, model, probe, self._max_vectors, self._vectors
                )

    def search(self, query: EventQuery) -> list[EventHit]:
        """Best first: BM25 when the text has terms, else newest first; one user only."""
        return self.search_with_stats(query)[0]

    def search_with_stats(self, query: EventQuery) -> tuple[list[EventHit], SearchStats]:
        """:meth:`search`, and how it went (for the benchmark and tests)."""
        if query.top_k <= 0:
            return [], SearchStats(0, True)
        with _mapped():
            db = self._db()
            with _transaction(db, "DEFERRED"):  # one snapshot (WAL) for all its reads: a
                return self._search(db, query)  # write between them could reuse a doc_id

    def _search(
        self, db: sqlite3.Connection, query: EventQuery
    ) -> tuple[list[EventHit], SearchStats]:
        found = _find_scope(db, query.tenant_id, query.user_id)
        if found is None:
            return [], SearchStats(0, True)
        scope, events = found
        words = query_words(query.text)
        terms = list(dict.fromkeys(analyse(db, [(" ".join(words), "")])[0][0]))
        if not terms:
            hits = _newest(db, query, scope)
            return hits, SearchStats(0, True)
        ranking = Ranking(db, scope, events, terms, query)
        ranked, stats = ranking.top(query.top_k, self._max_postings)
        return [
            EventHit(event_id=r[2], score=-r[0] / search_rank.SCALE**2,
                     timestamp=format_timestamp(_moment(-r[1])))
            for r in ranked
        ], stats  # fmt: skip

    def list_event_ids(
        self, tenant_id: str | None, user_id: str | None = None
    ) -> Iterator[tuple[str, str, str]]:
        """Stream (tenant, user, event_id) in pages, holding no transaction between them."""
        with _mapped():
            scopes = _scopes_of(self._db(), tenant_id, user_id)
        for scope, tenant, user in scopes:
            yield from ((tenant, user, event_id) for event_id in self._event_ids(scope))

    def _event_ids(self, scope: int) -> Iterator[str]:
        after = ""
        while True:
            with _mapped():
                page = [str(row[0]) for row in self._db().execute(_PAGE, (scope, after))]
            yield from page
            if len(page) < LIST_PAGE:
                return
            after = page[-1]

    def erase_deleted(self) -> None:
        """Rewrite the file from the live entries and empty the WAL
        (:func:`.sqlite_wal.erase_deleted`); busy: :class:`StorageUnavailable`."""
        with _mapped():
            erase_deleted(self._path, BUSY_TIMEOUT_SECONDS)

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():
            self._path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
            use_wal(db, BUSY_TIMEOUT_SECONDS)
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            db.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            prepare(db)
            self._local.db, self._local.pid = db, os.getpid()
        if self._ready_pid != os.getpid():
            with self._ready_lock:
                if self._ready_pid != os.getpid():
                    _create_schema(db)
                    self._ready_pid = os.getpid()
        return db

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with _mapped():
            db = self._db()
            with _transaction(db):
                yield db


@contextmanager
def _transaction(db: sqlite3.Connection, mode: str = "IMMEDIATE") -> Iterator[None]:
    db.execute(f"BEGIN {mode}")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


@contextmanager
def _mapped() -> Iterator[None]:
    """The one error boundary: busy/locked or an unusable file -> StorageUnavailable,
    any other SQLite error -> StorageError."""
    try:
        yield
    except sqlite3.Error as e:
        if getattr(e, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES or "locked" in str(e):
            raise StorageUnavailable(f"search index busy: {e}") from e
        raise StorageError(f"search index error: {type(e).__name__}: {e}") from e
    except OSError as e:
        raise StorageUnavailable(f"search index unavailable: {e.strerror}") from e


def _create_schema(db: sqlite3.Connection) -> None:
    with _transaction(db):
        for statement in (*SCHEMA, *search_vectors.SCHEMA):
            db.execute(statement)
        for table, column, declaration in (*COLUMNS, search_vectors.VERSION_COLUMN):
            if column not in {row[1] for row in db.execute(f"PRAGMA table_info({table})")}:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        stored = db.execute("SELECT value FROM meta WHERE key = 'terms'").fetchone()
        if stored is None or stored[0] != TERMS_VERSION:
            rederive_terms(db, TERMS_VERSION)


def _newest(db: sqlite3.Connection, query: EventQuery, scope: int) -> list[EventHit]:
    """Newest first. A project or keyword filter that selects many events is checked per
    event while the user's events are walked newest first (k matches come soon); one that
    selects few is listed first (SQLite builds the list once per search)."""
    many = any(
        "event_tags" in sql and db.execute(sql, (*params, TAG_LIST + 1)).fetchone()[0] > TAG_LIST
        for sql, params in field_counts(query, scope)
    )
    where, params = filters(query, scope, correlated=many)
    rows = db.execute(_NEWEST.format(where), (scope, *params, query.top_k))
    return [EventHit(event_id=r[0], score=0.0, timestamp=r[1]) for r in rows]


def _moment(ts_us: int) -> datetime:
    return datetime.fromtimestamp(0, UTC) + timedelta(microseconds=ts_us)


def _find_scope(db: sqlite3.Connection, tenant_id: str, user_id: str) -> tuple[int, int] | None:
    row = db.execute(_SCOPE, (tenant_id, user_id)).fetchone()
    return None if row is None else (int(row[0]), int(row[1]))


def _ensure_scope(db: sqlite3.Connection, tenant_id: str, user_id: str) -> int:
    db.execute(
        "INSERT OR IGNORE INTO scopes (tenant_id, user_id) VALUES (?, ?)", (tenant_id, user_id)
    )
    return int(db.execute(_SCOPE, (tenant_id, user_id)).fetchone()[0])


def _scopes_of(
    db: sqlite3.Connection, tenant_id: str | None, user_id: str | None
) -> list[tuple[int, str, str]]:
    """The scopes of one user, one tenant, or (``tenant_id`` None) all of them."""
    sql, params = "SELECT scope_id, tenant_id, user_id FROM scopes WHERE 1", list[str]()
    for column, value in (("tenant_id", tenant_id), ("user_id", user_id)):
        if value is not None:
            sql, params = sql + f" AND {column} = ?", [*params, value]
    rows = db.execute(sql + " ORDER BY tenant_id, user_id", params)
    return [(int(s), str(t), str(u)) for s, t, u in rows]
