"""The embedded :class:`~memnet.ports.SearchIndex`: SQLite FTS5 (ARCHITECTURE.md "Events",
spec 10.6). Derived data: the reindex job rebuilds it from the event blobs.

Tables: ``scopes`` maps (tenant, user) to a small ``scope_id``; ``events`` holds every
field, unique on (scope_id, event_id), ``ts_us`` = UTC microseconds (exact comparisons
whatever the writer's offset), indexed on (scope_id[, service_id | source_type], ts_us);
``event_tags`` holds project ids and keywords keyed (scope_id, kind, value, doc_id), so a
collection filter is an index range of one user.

Per-user terms: a plain FTS5 MATCH is global (a common term walks and scores every user's
postings before a join drops them), so each token is indexed with its scope as a prefix
(``s42_memory``) and a query asks only for ``"s42_..."`` terms. FTS5 then reads this
user's postings alone: a search costs what the user's own events cost, however many other
users there are (``bench/search.py``, 1M events over 1,000 users). The SQL checks the scope
too. BM25 thus counts document frequencies per user (N stays the table size).

Cost: FTS5 has no top-k pruning, so a ranked search scores every event of the user that
holds any query term; a query with a word common in this user's digests costs time linear
in the user's events (docs/performance.md, "Event search"). Without filters, FTS5 ranks
alone and only the best rows are joined with ``events``.

Contentless FTS (``content=''``), not external content: the indexed text is the prefixed
token stream, which no ``events`` column holds; storing it as one would double the digest
storage. Deleting a contentless row needs its text, recomputed from ``events`` by the same
pure function; its version (tokenizer, Unicode data) is kept in ``meta`` and a change
rebuilds the FTS table.

Query text never reaches MATCH raw: it is split into runs of letters, digits and marks
(NFKC), each quoted as an FTS5 string, the first :data:`MAX_QUERY_TOKENS` distinct ones
OR-ed; BM25 (digest 1, keywords 1.5) ranks more and rarer matches first. No token: newest
first. Tokenizer ``porter unicode61 remove_diacritics 2``: ``café`` ~ ``cafe`` (Latin
script), porter stems ``memories`` ~ ``memory``; marks stay inside words (Indic scripts).

Concurrency: a connection per thread and process, WAL, busy timeout, ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from memnet.adapters.local.search_terms import (
    filters,
    fts_row,
    iso,
    match_expression,
    micros,
    utc,
)
from memnet.adapters.local.sqlite_wal import use_wal
from memnet.ports import EventHit, EventQuery, IndexedEvent, StorageError, StorageUnavailable

DIGEST_WEIGHT, KEYWORDS_WEIGHT = 1.0, 1.5
BUSY_TIMEOUT_SECONDS = 10.0
LIST_PAGE = 1000
TIE_MARGIN = 8  # rows ranked past top_k to see whether a tie crosses the cut
TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co M*' tokenchars '_'"
TERMS_VERSION = f"2/{TOKENIZER}/{unicodedata.unidata_version}"  # bump when terms() changes
_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED (primary result codes)

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS scopes (scope_id INTEGER PRIMARY KEY,
        tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, UNIQUE (tenant_id, user_id))""",
    """CREATE TABLE IF NOT EXISTS events (
        doc_id INTEGER PRIMARY KEY, scope_id INTEGER NOT NULL, event_id TEXT NOT NULL,
        ts_us INTEGER NOT NULL, timestamp TEXT NOT NULL, service_id TEXT NOT NULL,
        source_type TEXT NOT NULL, digest TEXT NOT NULL, keywords TEXT NOT NULL,
        project_ids TEXT NOT NULL, snapshot_uri TEXT, evidence TEXT,
        UNIQUE (scope_id, event_id))""",
    "CREATE INDEX IF NOT EXISTS events_by_time ON events (scope_id, ts_us)",
    "CREATE INDEX IF NOT EXISTS events_by_service ON events (scope_id, service_id, ts_us)",
    "CREATE INDEX IF NOT EXISTS events_by_source ON events (scope_id, source_type, ts_us)",
    """CREATE TABLE IF NOT EXISTS event_tags (scope_id INTEGER NOT NULL, kind TEXT NOT NULL,
        value TEXT NOT NULL, doc_id INTEGER NOT NULL,
        PRIMARY KEY (scope_id, kind, value, doc_id)) WITHOUT ROWID""",
)
_FTS_TABLE = f"""CREATE VIRTUAL TABLE events_fts USING fts5 (digest, keywords, content='',
    tokenize="{TOKENIZER}")"""
_RANKED = f"""SELECT e.event_id, e.timestamp, -bm25(events_fts, {DIGEST_WEIGHT}, {KEYWORDS_WEIGHT})
    AS score FROM events_fts CROSS JOIN events AS e ON e.doc_id = events_fts.rowid
    WHERE events_fts MATCH ? AND e.scope_id = ? {{}}
    ORDER BY score DESC, e.ts_us DESC, e.event_id LIMIT ?"""
_BEST = f"""SELECT rowid, -bm25(events_fts, {DIGEST_WEIGHT}, {KEYWORDS_WEIGHT}) AS score
    FROM events_fts WHERE events_fts MATCH ? ORDER BY score DESC LIMIT ?"""
_ROWS = (
    "SELECT doc_id, event_id, timestamp, ts_us FROM events WHERE scope_id = ? AND doc_id IN ({})"
)
_NEWEST = """SELECT e.event_id, e.timestamp, 0.0 FROM events AS e WHERE e.scope_id = ? {}
    ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""
_PAGE = f"""SELECT event_id FROM events WHERE scope_id = ? AND event_id > ?
    ORDER BY event_id LIMIT {LIST_PAGE}"""
_SCOPE = "SELECT scope_id FROM scopes WHERE tenant_id = ? AND user_id = ?"
_FTS_ROW = "INSERT INTO events_fts (rowid, digest, keywords) VALUES (?, ?, ?)"
_FTS_DELETE = (
    "INSERT INTO events_fts (events_fts, rowid, digest, keywords) VALUES ('delete', ?, ?, ?)"
)


class SqliteSearchIndex:
    """BM25 search over event digests in one SQLite file; safe across threads and processes.
    The constructor does no I/O: the file and schema are created on first use."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._local = threading.local()
        self._ready_pid: int | None = None
        self._ready_lock = threading.Lock()

    def describe(self) -> str:
        return f"sqlite fts5 search index {self._path}"

    def upsert(self, events: list[IndexedEvent]) -> None:
        """Insert or replace by (tenant, user, event_id), all in one transaction."""
        rows = [(event, utc(event.timestamp)) for event in events]  # validate before locking
        with self._write() as db:
            scopes: dict[tuple[str, str], int] = {}  # a batch is mostly one user's events
            for event, moment in rows:
                owner = (event.tenant_id, event.user_id)
                scope = scopes.get(owner)
                if scope is None:
                    scope = scopes[owner] = _ensure_scope(db, *owner)
                _remove(db, scope, event.event_id)
                _insert(db, scope, event, moment)

    def delete(self, tenant_id: str, user_id: str, event_ids: list[str]) -> None:
        """Remove entries; missing ones are ignored."""
        with self._write() as db:
            scope = _find_scope(db, tenant_id, user_id)
            if scope is None:
                return
            for event_id in event_ids:
                _remove(db, scope, event_id)

    def search(self, query: EventQuery) -> list[EventHit]:
        """Best first: BM25 when the text has tokens, else newest first; one user only."""
        if query.top_k <= 0:
            return []
        with _mapped():
            db = self._db()
            scope = _find_scope(db, query.tenant_id, query.user_id)
            if scope is None:
                return []
            where, params = filters(query, scope)
            match = match_expression(scope, query.text)
            rows: Iterable[tuple[str, str, float]] | None = None
            if match is None:
                rows = db.execute(_NEWEST.format(where), (scope, *params, query.top_k))
            elif not where:
                rows = _best_unfiltered(db, match, scope, query.top_k)
            if rows is None:
                rows = db.execute(_RANKED.format(where), (match, scope, *params, query.top_k))
            return [EventHit(event_id=r[0], score=float(r[2]), timestamp=r[1]) for r in rows]

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

    def _db(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None or getattr(self._local, "pid", None) != os.getpid():
            self._path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None)
            use_wal(db, BUSY_TIMEOUT_SECONDS)
            db.execute("PRAGMA synchronous = NORMAL")
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
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    db.execute("BEGIN IMMEDIATE")
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
        for statement in _SCHEMA:
            db.execute(statement)
        stored = db.execute("SELECT value FROM meta WHERE key = 'terms'").fetchone()
        if stored is None or stored[0] != TERMS_VERSION:
            _rebuild_fts(db)


def _rebuild_fts(db: sqlite3.Connection) -> None:
    """(Re)create the FTS table with the current tokenizer and re-derive every row."""
    db.execute("DROP TABLE IF EXISTS events_fts")
    db.execute(_FTS_TABLE)
    rows = db.execute("SELECT doc_id, scope_id, digest, keywords FROM events")
    db.executemany(_FTS_ROW, (fts_row(d, s, text, json.loads(k)) for d, s, text, k in rows))
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('terms', ?)", (TERMS_VERSION,))


def _best_unfiltered(
    db: sqlite3.Connection, match: str, scope: int, top_k: int
) -> list[tuple[str, str, float]] | None:
    """The ranked plan without filters, cheaper: FTS5 ranks alone (every match is still
    scored) and only the best rows are joined with ``events``, not every match. Same
    result: :data:`TIE_MARGIN` rows beyond ``top_k`` are fetched, and when a score tie
    reaches past them this returns None and the full plan orders the tie by time."""
    fetched = db.execute(_BEST, (match, top_k + TIE_MARGIN)).fetchall()
    if len(fetched) == top_k + TIE_MARGIN and fetched[-1][1] == fetched[top_k - 1][1]:
        return None
    scores = {int(doc_id): float(score) for doc_id, score in fetched}
    rows = db.execute(_ROWS.format(",".join("?" * len(scores))), (scope, *scores)).fetchall()
    rows.sort(key=lambda r: (-scores[r[0]], -r[3], r[1]))
    return [
        (event_id, timestamp, scores[doc_id]) for doc_id, event_id, timestamp, _ in rows[:top_k]
    ]


def _find_scope(db: sqlite3.Connection, tenant_id: str, user_id: str) -> int | None:
    row = db.execute(_SCOPE, (tenant_id, user_id)).fetchone()
    return None if row is None else int(row[0])


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


def _insert(db: sqlite3.Connection, scope: int, event: IndexedEvent, moment: datetime) -> None:
    cursor = db.execute(
        "INSERT INTO events (scope_id, event_id, ts_us, timestamp, service_id, source_type,"
        " digest, keywords, project_ids, snapshot_uri, evidence)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (scope, event.event_id, micros(moment), iso(moment), event.service_id,
         event.source_type, event.digest, json.dumps(list(event.keywords)),
         json.dumps(list(event.project_ids)), event.snapshot_uri, event.evidence),
    )  # fmt: skip
    doc_id = int(cursor.lastrowid or 0)
    db.execute(_FTS_ROW, fts_row(doc_id, scope, event.digest, event.keywords))
    db.executemany(
        "INSERT OR IGNORE INTO event_tags (scope_id, kind, value, doc_id) VALUES (?, ?, ?, ?)",
        _tags(scope, doc_id, event.project_ids, event.keywords),
    )


def _remove(db: sqlite3.Connection, scope: int, event_id: str) -> None:
    """Delete one event's row, its FTS entry (from the recomputed terms) and its tags."""
    select = "SELECT doc_id, digest, keywords, project_ids FROM events"
    row = db.execute(f"{select} WHERE scope_id = ? AND event_id = ?", (scope, event_id)).fetchone()
    if row is None:
        return
    doc_id, keywords = int(row[0]), json.loads(row[2])
    db.execute(_FTS_DELETE, fts_row(doc_id, scope, row[1], keywords))
    db.executemany(
        "DELETE FROM event_tags WHERE scope_id = ? AND kind = ? AND value = ? AND doc_id = ?",
        _tags(scope, doc_id, json.loads(row[3]), keywords),
    )
    db.execute("DELETE FROM events WHERE doc_id = ?", (doc_id,))


def _tags(
    scope: int, doc_id: int, project_ids: Iterable[str], keywords: Iterable[str]
) -> Iterator[tuple[int, str, str, int]]:
    yield from ((scope, "p", value, doc_id) for value in project_ids)
    yield from ((scope, "k", value, doc_id) for value in keywords)
