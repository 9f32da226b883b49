"""What only the embedded index promises about ranking (memnet.adapters.local.search and
.search_postings): a ranked search returns what scoring every event of the user would,
filters included; the per-user counts BM25 uses stay true through replacements and
deletes; the postings budget bounds the work; a file of the former FTS5 layout is
re-derived on first use."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memnet.adapters.local import search_rank
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.adapters.local.search_postings import analyse, prepare
from memnet.adapters.local.search_terms import micros, utc
from memnet.domain.search_words import query_words
from memnet.ports import EventQuery, IndexedEvent

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta", "memory"]


def events(seed: int, count: int, user: str = "u1") -> list[IndexedEvent]:
    rng = random.Random(seed)
    return [
        IndexedEvent(
            tenant_id="t1",
            user_id=user,
            event_id=f"e{rng.randrange(10**6):06d}-{i}",
            timestamp=f"2026-01-0{1 + rng.randrange(3)}T00:00:0{rng.randrange(3)}Z",  # ties
            service_id=rng.choice(["svc-a", "svc-b"]),
            source_type="chat",
            digest=" ".join(rng.choices(WORDS, weights=range(9, 0, -1), k=rng.randint(2, 8))),
            keywords=tuple(rng.sample(WORDS, rng.randint(0, 2))),
        )
        for i in range(count)
    ]


def full_scan(path: Path, query: EventQuery) -> list[str]:
    """Every event of the user scored from its stored terms, filtered and sorted here."""
    db = sqlite3.connect(path)
    scope, total = db.execute(
        "SELECT scope_id, docs FROM scopes WHERE tenant_id = ? AND user_id = ?",
        (query.tenant_id, query.user_id),
    ).fetchone()
    prepare(db)
    terms = set(analyse(db, [(" ".join(query_words(query.text)), "")])[0][0])
    holding = dict(
        db.execute("SELECT term, docs FROM term_docs WHERE scope_id = ?", (scope,)).fetchall()
    )
    weights = {t: search_rank.weight(total, holding[t]) for t in terms if t in holding}
    rows = db.execute(
        "SELECT event_id, ts_us, service_id, terms FROM events WHERE scope_id = ?", (scope,)
    )
    ranked = []
    for event_id, ts_us, service, stored in rows:
        impacts = json.loads(stored)
        score = sum(w * impacts[t] for t, w in weights.items() if t in impacts)
        if query.service_ids and service not in query.service_ids:
            continue
        if query.since and ts_us < micros(utc(query.since)):
            continue
        if score > 0:
            ranked.append((-score, -ts_us, event_id))
    db.close()
    return [event_id for *_, event_id in sorted(ranked)[: query.top_k]]


@pytest.mark.parametrize("seed", range(12))
def test_ranked_search_equals_scoring_every_event(tmp_path: Path, seed: int) -> None:
    path = tmp_path / "search.sqlite3"
    index = SqliteSearchIndex(path, max_postings=10**9)
    corpus = events(seed, 400)
    index.upsert(corpus[:300])
    index.upsert(corpus[250:])  # replaces 50
    rng = random.Random(seed)
    for _ in range(15):
        filters: dict[str, Any] = rng.choice(
            [{}, {"service_ids": ("svc-b",)}, {"since": "2026-01-02T00:00:00Z"}]
        )
        text = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        query = EventQuery(tenant_id="t1", user_id="u1", text=text, top_k=10, **filters)
        hits, stats = index.search_with_stats(query)
        assert stats.exact
        assert [h.event_id for h in hits] == full_scan(path, query), (text, filters)


def test_counts_follow_replacements_and_deletes(tmp_path: Path) -> None:
    path = tmp_path / "search.sqlite3"
    index = SqliteSearchIndex(path)
    corpus = events(3, 200) + events(4, 50, user="u2")
    index.upsert(corpus)
    index.upsert(events(5, 80))  # new ids, same user
    index.upsert([corpus[0], corpus[0], corpus[1]])  # replaced, duplicated in a batch
    index.delete("t1", "u1", [e.event_id for e in corpus[10:60]] + ["missing"])
    db = sqlite3.connect(path)
    counted = db.execute(
        "SELECT scope_id, term, count(*) FROM postings GROUP BY scope_id, term ORDER BY 1, 2"
    ).fetchall()
    kept = db.execute("SELECT scope_id, term, docs FROM term_docs ORDER BY 1, 2").fetchall()
    assert kept == counted
    per_user = db.execute("SELECT scope_id, count(*) FROM events GROUP BY scope_id").fetchall()
    assert sorted(per_user) == sorted(db.execute("SELECT scope_id, docs FROM scopes").fetchall())
    impacts = db.execute("SELECT terms FROM events").fetchall()
    assert sum(len(json.loads(t)) for (t,) in impacts) == sum(n for *_, n in counted)


def test_the_postings_budget_bounds_a_search(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "search.sqlite3", max_postings=20)
    index.upsert(events(9, 500))
    query = EventQuery(tenant_id="t1", user_id="u1", text="alpha beta gamma", top_k=10)
    hits, stats = index.search_with_stats(query)
    assert not stats.exact and stats.postings <= 20
    assert len(hits) == 10 and hits == sorted(hits, key=lambda h: -h.score)
    unbounded = SqliteSearchIndex(tmp_path / "search.sqlite3", max_postings=10**9)
    exact, how = unbounded.search_with_stats(query)
    assert how.exact and how.postings > 20 and exact[0].score >= hits[0].score


def test_a_small_filtered_set_is_scored_directly(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "search.sqlite3", max_postings=1)
    corpus = events(11, 300)
    index.upsert(corpus)
    query = EventQuery(
        tenant_id="t1", user_id="u1", text="memory", top_k=5, project_ids=("none-such",)
    )
    assert index.search_with_stats(query) == ([], index.search_with_stats(query)[1])
    assert index.search_with_stats(query)[1].exact


def test_a_file_of_the_fts5_layout_is_rederived(tmp_path: Path) -> None:
    """The layout before this one: FTS5 held the terms; no ``terms`` or ``docs`` columns."""
    path = tmp_path / "search.sqlite3"
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('terms', '2/old');
        CREATE TABLE scopes (scope_id INTEGER PRIMARY KEY, tenant_id TEXT NOT NULL,
            user_id TEXT NOT NULL, UNIQUE (tenant_id, user_id));
        INSERT INTO scopes VALUES (1, 't1', 'u1');
        CREATE TABLE events (doc_id INTEGER PRIMARY KEY, scope_id INTEGER NOT NULL,
            event_id TEXT NOT NULL, ts_us INTEGER NOT NULL, timestamp TEXT NOT NULL,
            service_id TEXT NOT NULL, source_type TEXT NOT NULL, digest TEXT NOT NULL,
            keywords TEXT NOT NULL, project_ids TEXT NOT NULL, snapshot_uri TEXT,
            evidence TEXT, UNIQUE (scope_id, event_id));
        INSERT INTO events VALUES (1, 1, 'old-1', 1767225600000000, '2026-01-01T00:00:00Z',
            'svc', 'chat', 'remembering the café', '["Paris"]', '[]', NULL, NULL);
        INSERT INTO events VALUES (2, 1, 'old-2', 1767225600000001, '2026-01-01T00:00:00.000001Z',
            'svc', 'chat', 'lunch notes', '[]', '[]', NULL, NULL);
        CREATE VIRTUAL TABLE events_fts USING fts5 (digest, keywords, content='');
        """
    )
    db.close()
    index = SqliteSearchIndex(path)
    found = index.search(EventQuery(tenant_id="t1", user_id="u1", text="cafe paris memory"))
    assert [h.event_id for h in found] == ["old-1"]
    db = sqlite3.connect(path)
    tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
    assert "events_fts" not in tables
    assert db.execute("SELECT docs FROM scopes").fetchone() == (2,)


def test_newest_first_probes_a_large_tag_filter_with_the_same_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memnet.adapters.local import search

    index = SqliteSearchIndex(tmp_path / "search.sqlite3")
    index.upsert(events(13, 300))
    query = EventQuery(tenant_id="t1", user_id="u1", keywords=("alpha", "beta"), top_k=20)
    listed = index.search(query)
    monkeypatch.setattr(search, "TAG_LIST", 0)  # every tag filter is "large": probed
    assert index.search(query) == listed and len(listed) == 20


def test_a_search_reads_one_state_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write landing between a search's reads (the index worker, another process) must
    not reach it: here the event met in the postings is deleted and another user's event
    takes its doc_id, which a search reading the file twice would return."""
    from memnet.adapters.local import search_postings

    def event(user: str, event_id: str, digest: str) -> IndexedEvent:
        return IndexedEvent(
            tenant_id="t1", user_id=user, event_id=event_id,
            timestamp="2026-01-01T00:00:00Z", service_id="svc", source_type="chat",
            digest=digest,
        )  # fmt: skip

    path = tmp_path / "search.sqlite3"
    reader, writer = SqliteSearchIndex(path), SqliteSearchIndex(path)
    writer.upsert([event("u1", "mine", "alpha notes")])
    fetch = search_postings.Ranking._fetch

    def fetch_then_write(self: Any, *args: Any) -> Any:
        rows = fetch(self, *args)
        if rows:
            writer.delete("t1", "u1", ["mine"])
            writer.upsert([event("u2", "theirs", "private beta")])
        return rows

    monkeypatch.setattr(search_postings.Ranking, "_fetch", fetch_then_write)
    hits = reader.search(EventQuery(tenant_id="t1", user_id="u1", text="alpha"))
    assert [h.event_id for h in hits] == ["mine"] and hits[0].score > 0
