"""An event's rows in the embedded search index (:mod:`.search`): the tables, the
``events`` row, its postings, tags and counts, written and removed together inside the
caller's transaction, and the re-derivation of every event's terms when the analyser
changes."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from datetime import datetime

from memnet.adapters.local import search_rank
from memnet.adapters.local.search_postings import Counts, analyse, post, to_json
from memnet.adapters.local.search_terms import micros
from memnet.domain.timestamps import format_timestamp
from memnet.ports import IndexedEvent

SCHEMA = (  # the tables (docstring of .search)
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS scopes (scope_id INTEGER PRIMARY KEY,
        tenant_id TEXT NOT NULL, user_id TEXT NOT NULL, UNIQUE (tenant_id, user_id))""",
    """CREATE TABLE IF NOT EXISTS events (
        doc_id INTEGER PRIMARY KEY, scope_id INTEGER NOT NULL, event_id TEXT NOT NULL,
        ts_us INTEGER NOT NULL, timestamp TEXT NOT NULL, service_id TEXT NOT NULL,
        source_type TEXT NOT NULL, digest TEXT NOT NULL, keywords TEXT NOT NULL,
        project_ids TEXT NOT NULL, snapshot_uri TEXT, evidence TEXT, sensitivity TEXT,
        UNIQUE (scope_id, event_id))""",
    "CREATE INDEX IF NOT EXISTS events_by_time ON events (scope_id, ts_us)",
    "CREATE INDEX IF NOT EXISTS events_by_service ON events (scope_id, service_id, ts_us)",
    "CREATE INDEX IF NOT EXISTS events_by_source ON events (scope_id, source_type, ts_us)",
    """CREATE TABLE IF NOT EXISTS event_tags (scope_id INTEGER NOT NULL, kind TEXT NOT NULL,
        value TEXT NOT NULL, doc_id INTEGER NOT NULL,
        PRIMARY KEY (scope_id, kind, value, doc_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS postings (scope_id INTEGER NOT NULL, term TEXT NOT NULL,
        rank INTEGER NOT NULL, age INTEGER NOT NULL, doc_id INTEGER NOT NULL,
        PRIMARY KEY (scope_id, term, rank, age, doc_id)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS term_docs (scope_id INTEGER NOT NULL, term TEXT NOT NULL,
        docs INTEGER NOT NULL, PRIMARY KEY (scope_id, term)) WITHOUT ROWID""",
)
COLUMNS = (  # added to files written before the column existed
    ("scopes", "docs", "INTEGER NOT NULL DEFAULT 0"),
    ("events", "terms", "TEXT NOT NULL DEFAULT '{}'"),
    ("events", "sensitivity", "TEXT"),  # events indexed before classes: none (NULL)
)


def rederive_terms(db: sqlite3.Connection, version: str) -> None:
    """Re-derive every event's terms, postings and counts with the current analyser (a
    file of an older version holds an FTS5 table instead, dropped here)."""
    db.execute("DROP TABLE IF EXISTS events_fts")
    db.execute("DELETE FROM postings")
    db.execute("DELETE FROM term_docs")
    db.execute("UPDATE scopes SET docs = 0")
    counts, after = Counts(), -1
    while True:
        page = db.execute(
            "SELECT doc_id, scope_id, ts_us, digest, keywords FROM events WHERE doc_id > ?"
            " ORDER BY doc_id LIMIT 500",
            (after,),
        ).fetchall()
        if not page:
            break
        analysed = analyse(db, [(digest, " ".join(json.loads(k))) for *_, digest, k in page])
        for (doc_id, scope, ts_us, _, _), terms in zip(page, analysed, strict=True):
            weighted = search_rank.impacts(*terms)
            db.execute("UPDATE events SET terms = ? WHERE doc_id = ?", (to_json(weighted), doc_id))
            post(db, scope, doc_id, ts_us, weighted)
            counts.add(scope, weighted, +1)
        after = page[-1][0]
    counts.apply(db)
    db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('terms', ?)", (version,))


def insert_event(
    db: sqlite3.Connection,
    scope: int,
    event: IndexedEvent,
    moment: datetime,
    weighted: dict[str, int],
    counts: Counts,
) -> None:
    ts_us = micros(moment)
    cursor = db.execute(
        "INSERT INTO events (scope_id, event_id, ts_us, timestamp, service_id, source_type,"
        " digest, keywords, project_ids, snapshot_uri, evidence, terms, sensitivity)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (scope, event.event_id, ts_us, format_timestamp(moment), event.service_id,
         event.source_type, event.digest, json.dumps(list(event.keywords)),
         json.dumps(list(event.project_ids)), event.snapshot_uri, event.evidence,
         to_json(weighted), event.sensitivity),
    )  # fmt: skip
    doc_id = int(cursor.lastrowid or 0)
    post(db, scope, doc_id, ts_us, weighted)
    counts.add(scope, weighted, +1)
    db.executemany(
        "INSERT OR IGNORE INTO event_tags (scope_id, kind, value, doc_id) VALUES (?, ?, ?, ?)",
        tags(scope, doc_id, event.project_ids, event.keywords),
    )


def remove_event(
    db: sqlite3.Connection, scope: int, event_id: str, counts: Counts
) -> tuple[str, list[str]] | None:
    """Delete one event's row, its postings (from its stored terms) and its tags; the
    digest and keywords it held (None if there was no row)."""
    select = "SELECT doc_id, ts_us, terms, keywords, project_ids, digest FROM events"
    row = db.execute(f"{select} WHERE scope_id = ? AND event_id = ?", (scope, event_id)).fetchone()
    if row is None:
        return None
    doc_id, ts_us, weighted = int(row[0]), int(row[1]), json.loads(row[2])
    db.executemany(
        "DELETE FROM postings WHERE scope_id = ? AND term = ? AND rank = ? AND age = ?"
        " AND doc_id = ?",
        ((scope, term, -value, -ts_us, doc_id) for term, value in weighted.items()),
    )
    counts.add(scope, weighted, -1)
    db.executemany(
        "DELETE FROM event_tags WHERE scope_id = ? AND kind = ? AND value = ? AND doc_id = ?",
        tags(scope, doc_id, json.loads(row[4]), json.loads(row[3])),
    )
    db.execute("DELETE FROM events WHERE doc_id = ?", (doc_id,))
    return str(row[5]), list(json.loads(row[3]))


def tags(
    scope: int, doc_id: int, project_ids: Iterable[str], keywords: Iterable[str]
) -> Iterator[tuple[int, str, str, int]]:
    yield from ((scope, "p", value, doc_id) for value in project_ids)
    yield from ((scope, "k", value, doc_id) for value in keywords)
