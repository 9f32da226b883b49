"""The SearchIndex contract (memnet.ports.SearchIndex; docs/decisions.md "Events and
search"; spec 9.2, 10.6): one suite every adapter must pass. It runs on the embedded
SQLite index; Azure AI Search has no emulator, so its adapter is tested on the wire instead
(``test_azure_search_transport.py``). Then what only the SQLite index promises."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from memnet.adapters.local.search import SqliteSearchIndex
from memnet.adapters.local.search_terms import field_counts, filters
from memnet.ports import EventQuery, IndexedEvent, SearchIndex

T0 = "2026-01-01T00:00:00Z"


@pytest.fixture(params=["sqlite"])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> SearchIndex:
    """Each adapter, empty."""
    return SqliteSearchIndex(tmp_path / "search.sqlite3")


def event(event_id: str, digest: str = "", **fields: Any) -> IndexedEvent:
    base: dict[str, Any] = {
        "tenant_id": "t1",
        "user_id": "u1",
        "timestamp": T0,
        "service_id": "assistant-a",
        "source_type": "chat",
    }
    return IndexedEvent(event_id=event_id, digest=digest, **{**base, **fields})


def filler(count: int, **fields: Any) -> list[IndexedEvent]:
    """Unrelated events, so that document frequencies mean something to BM25."""
    words = ["weather", "lunch", "travel", "budget", "music", "garden", "invoice", "sports"]
    return [
        event(f"fill_{i:03d}", f"{words[i % 8]} {words[(i + 3) % 8]} note {i}", **fields)
        for i in range(count)
    ]


def ids(index: SearchIndex, text: str = "", top_k: int = 50, **query: Any) -> list[str]:
    scope = {"tenant_id": "t1", "user_id": "u1", **query}
    return [h.event_id for h in index.search(EventQuery(text=text, top_k=top_k, **scope))]


def found(index: SearchIndex, text: str = "", **query: Any) -> set[str]:
    return {i for i in ids(index, text, **query) if not i.startswith("fill_")}


# --- scope ------------------------------------------------------------------------------


def test_other_users_and_tenants_are_never_returned(index: SearchIndex) -> None:
    index.upsert(
        [
            event("mine", "quarterly roadmap review"),
            event("theirs", "quarterly roadmap review", user_id="u2"),
            event("other_tenant", "quarterly roadmap review", tenant_id="t2"),
        ]
    )
    assert ids(index, "quarterly roadmap review") == ["mine"]
    assert ids(index) == ["mine"]
    assert ids(index, user_id="u2") == ["theirs"]
    assert ids(index, tenant_id="t2") == ["other_tenant"]
    assert ids(index, user_id="nobody") == []


@pytest.mark.parametrize("text", ["s2_secret", "s1_secret OR s2_secret", "u2 secret", "*secret*"])
def test_query_text_cannot_reach_another_users_terms(index: SearchIndex, text: str) -> None:
    index.upsert([event("mine", "public note"), event("theirs", "secret plan", user_id="u2")])
    assert "theirs" not in ids(index, text)


# --- ranking ----------------------------------------------------------------------------


def test_more_matching_terms_rank_first(index: SearchIndex) -> None:
    index.upsert(
        [
            *filler(20),
            event("one", "memory layout discussion"),
            event("two", "memory conflict discussion"),
            event("three", "memory conflict lifecycle discussion"),
        ]
    )
    assert ids(index, "memory conflict lifecycle")[:3] == ["three", "two", "one"]


def test_rarer_terms_rank_first(index: SearchIndex) -> None:
    common = [event(f"common_{i}", "project status update") for i in range(10)]
    index.upsert([*filler(20), *common, event("rare", "project escalation")])
    assert ids(index, "status escalation")[0] == "rare"


def test_scores_are_positive_and_descending(index: SearchIndex) -> None:
    index.upsert([*filler(10), event("a", "alpha beta"), event("b", "alpha"), event("c", "beta")])
    hits = index.search(EventQuery(tenant_id="t1", user_id="u1", text="alpha beta"))
    assert hits[0].event_id == "a"
    assert all(h.score > 0 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_keywords_are_searched(index: SearchIndex) -> None:
    index.upsert([*filler(10), event("tagged", "a short note", keywords=("kubernetes",))])
    assert ids(index, "kubernetes") == ["tagged"]


def test_empty_text_returns_newest_first_across_offsets(index: SearchIndex) -> None:
    index.upsert(
        [
            event("noon_utc", timestamp="2026-01-01T12:00:00Z"),
            event("ten_plus_five", timestamp="2026-01-01T10:00:00+05:00"),  # 05:00Z
            event("eight_minus_two", timestamp="2026-01-01T08:00:00-02:00"),  # 10:00Z
        ]
    )
    assert ids(index) == ["noon_utc", "eight_minus_two", "ten_plus_five"]


def test_hits_carry_utc_timestamps(index: SearchIndex) -> None:
    index.upsert([event("e", "note", timestamp="2026-01-01T10:00:00+05:00")])
    (hit,) = index.search(EventQuery(tenant_id="t1", user_id="u1", text="note"))
    assert hit.timestamp == "2026-01-01T05:00:00Z"


def test_top_k_bounds_the_hits(index: SearchIndex) -> None:
    index.upsert(filler(30))
    assert len(ids(index, top_k=7)) == 7
    assert len(ids(index, "note", top_k=7)) == 7
    assert ids(index, "note", top_k=0) == []


# --- filters ----------------------------------------------------------------------------


@pytest.fixture
def tagged(index: SearchIndex) -> SearchIndex:
    index.upsert(
        [
            *filler(5, service_id="other", source_type="other"),
            event("a", "plan", service_id="svc-a", source_type="chat", project_ids=("alpha",)),
            event("b", "plan", service_id="svc-b", source_type="email", keywords=("memory",)),
            event(
                "c",
                "plan",
                service_id="svc-a",
                source_type="email",
                project_ids=("alpha", "beta"),
                keywords=("memory", "config"),
            ),
            event("d", "plan", service_id="svc-c", project_ids=("alpha-2",), keywords=("mem",)),
        ]
    )
    return index


@pytest.mark.parametrize("text", ["", "plan"])
@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"service_ids": ("svc-a",)}, {"a", "c"}),
        ({"service_ids": ("svc-a", "svc-b")}, {"a", "b", "c"}),
        ({"source_types": ("email",)}, {"b", "c"}),
        ({"project_ids": ("alpha",)}, {"a", "c"}),
        ({"project_ids": ("beta", "alpha-2")}, {"c", "d"}),
        ({"keywords": ("memory",)}, {"b", "c"}),
        ({"keywords": ("config", "mem")}, {"c", "d"}),
        ({"service_ids": ("svc-a",), "source_types": ("email",)}, {"c"}),
        ({"project_ids": ("alpha",), "keywords": ("memory",)}, {"c"}),
        ({"service_ids": ("svc-b",), "project_ids": ("alpha",)}, set()),
        ({"service_ids": ("nope",)}, set()),
    ],
)
def test_filters_match_any_value_and_combine_with_and(
    tagged: SearchIndex, text: str, filters: dict[str, Any], expected: set[str]
) -> None:
    assert found(tagged, text, **filters) == expected


def test_collection_filters_match_whole_values(tagged: SearchIndex) -> None:
    assert found(tagged, project_ids=("alph",)) == set()
    assert found(tagged, keywords=("Memory",)) == set()


@pytest.fixture
def classed(index: SearchIndex) -> SearchIndex:
    """Events of no class, of ``p:restricted`` and of ``p:sensitive``, among filler."""
    index.upsert(
        [
            *filler(40),
            event("open", "diagnosis note"),
            event("restricted", "diagnosis note", sensitivity="p:restricted"),
            event("sensitive", "diagnosis note", sensitivity="p:sensitive", project_ids=("x",)),
        ]
    )
    return index


@pytest.mark.parametrize("text", ["", "diagnosis", "diagnosis lunch weather note"])
@pytest.mark.parametrize(
    ("classes", "expected"),
    [
        (None, {"open", "restricted", "sensitive"}),  # no filter: every class (the jobs)
        ((), {"open"}),  # unclassified only
        (("p:restricted",), {"open", "restricted"}),
        (("p:restricted", "p:sensitive"), {"open", "restricted", "sensitive"}),
        (("q:restricted",), {"open"}),  # another profile's class is not this one
    ],
)
def test_a_class_filter_keeps_unclassified_events_and_those_of_its_classes(
    classed: SearchIndex, text: str, classes: tuple[str, ...] | None, expected: set[str]
) -> None:
    assert found(classed, text, classes=classes) == expected
    with_project = found(classed, text, classes=classes, project_ids=("x",))
    assert with_project == expected & {"sensitive"}  # and it combines with the others


@pytest.fixture
def timed(index: SearchIndex) -> SearchIndex:
    index.upsert(
        [
            event("before", "log", timestamp="2025-12-31T23:59:59.999999Z"),
            event("at_since", "log", timestamp="2026-01-01T00:00:00Z"),
            event("inside", "log", timestamp="2026-01-01T12:00:00+05:00"),
            event("at_until", "log", timestamp="2026-01-02T00:00:00Z"),
        ]
    )
    return index


@pytest.mark.parametrize("text", ["", "log"])
def test_since_is_inclusive_and_until_exclusive(timed: SearchIndex, text: str) -> None:
    window = {"since": "2026-01-01T00:00:00Z", "until": "2026-01-02T00:00:00Z"}
    assert found(timed, text, **window) == {"at_since", "inside"}
    assert found(timed, text, since="2026-01-01T00:00:00Z") == {"at_since", "inside", "at_until"}
    assert found(timed, text, until="2026-01-01T00:00:00Z") == {"before"}


def test_time_bounds_in_other_offsets_are_normalised(timed: SearchIndex) -> None:
    window = {"since": "2026-01-01T02:00:00+02:00", "until": "2026-01-01T19:00:00-05:00"}
    assert found(timed, **window) == {"at_since", "inside"}  # [00:00Z, 2026-01-02T00:00Z)


def test_time_and_field_filters_combine_with_text(index: SearchIndex) -> None:
    index.upsert(
        [
            event("old", "deploy", timestamp="2025-06-01T00:00:00Z", service_id="svc-a"),
            event("new_a", "deploy", timestamp="2026-06-01T00:00:00Z", service_id="svc-a"),
            event("new_b", "deploy", timestamp="2026-06-01T00:00:00Z", service_id="svc-b"),
            event("new_a_other", "lunch", timestamp="2026-06-01T00:00:00Z", service_id="svc-a"),
        ]
    )
    query: dict[str, Any] = {"since": "2026-01-01T00:00:00Z", "service_ids": ("svc-a",)}
    assert ids(index, "deploy", **query) == ["new_a"]


# --- writes -----------------------------------------------------------------------------


def test_upsert_replaces_the_entry(index: SearchIndex) -> None:
    index.upsert([*filler(5), event("e", "original words", keywords=("old",))])
    index.upsert(
        [event("e", "replacement text", keywords=("new",), timestamp="2027-01-01T00:00:00Z")]
    )
    assert ids(index, "original") == []
    assert ids(index, "replacement") == ["e"]
    assert found(index, keywords=("old",)) == set()
    assert found(index, keywords=("new",)) == {"e"}
    assert ids(index)[0] == "e"
    assert [e for _, _, e in index.list_event_ids("t1", "u1")].count("e") == 1


def test_the_last_of_duplicate_events_in_one_batch_wins(index: SearchIndex) -> None:
    index.upsert([event("e", "first version"), event("e", "second version")])
    assert ids(index, "first") == []
    assert ids(index, "second") == ["e"]


def test_delete_removes_entries_and_ignores_missing_ones(index: SearchIndex) -> None:
    index.upsert([event("a", "keep me"), event("b", "drop me", keywords=("x",)), event("c", "me")])
    index.delete("t1", "u1", ["b", "missing"])
    index.delete("t1", "nobody", ["a"])
    assert sorted(ids(index, "me")) == ["a", "c"]
    assert found(index, keywords=("x",)) == set()
    assert sorted(e for _, _, e in index.list_event_ids("t1")) == ["a", "c"]


def test_list_event_ids_is_scoped_to_tenant_or_user(index: SearchIndex) -> None:
    index.upsert(
        [
            event("a"),
            event("b", user_id="u2"),
            event("c", tenant_id="t2"),
        ]
    )
    assert sorted(index.list_event_ids("t1")) == [("t1", "u1", "a"), ("t1", "u2", "b")]
    assert list(index.list_event_ids("t1", "u2")) == [("t1", "u2", "b")]
    assert list(index.list_event_ids("t3")) == []
    assert sorted(index.list_event_ids(None)) == [
        ("t1", "u1", "a"),
        ("t1", "u2", "b"),
        ("t2", "u1", "c"),
    ]


def test_list_event_ids_streams_past_a_page(index: SearchIndex) -> None:
    index.upsert([event(f"e{i:05d}") for i in range(1205)])
    listed = index.list_event_ids("t1", "u1")
    assert next(iter(listed)) == ("t1", "u1", "e00000")
    assert len({e for _, _, e in index.list_event_ids("t1")}) == 1205


# --- hostile and unusual query text -----------------------------------------------------


@pytest.fixture
def corpus(index: SearchIndex) -> SearchIndex:
    index.upsert(
        [
            *filler(10),
            event("near", "near the station", timestamp="2026-01-03T00:00:00Z"),
            event("andnot", "and not or", timestamp="2026-01-02T00:00:00Z"),
            event("colterm", "col term value"),
            event("x", "x marks the spot"),
        ]
    )
    return index


HOSTILE = [
    '"',
    '""',
    "*",
    "NEAR(a b)",
    "NEAR(near station, 2)",
    "a AND",
    "AND",
    "OR NOT",
    "(",
    ")",
    "col:term",
    "digest:near",
    "{digest keywords}: x",
    "-x",
    "^",
    "^near",
    "near*",
    "'; DROP TABLE events; --",
    "",
    "   ",
    "!@#$%^&*()_+-=[]{}|;':\",./<>?`~",
    "\x00\x01",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_is_only_words(corpus: SearchIndex, text: str) -> None:
    words = " ".join("".join(c if c.isalnum() else " " for c in text).split())
    assert ids(corpus, text) == ids(corpus, words)


def test_hostile_text_finds_what_its_words_find(corpus: SearchIndex) -> None:
    assert ids(corpus, "NEAR(near station)")[0] == "near"
    assert ids(corpus, "a AND") == ["andnot"]  # "and" is a word here, not an operator
    assert ids(corpus, "col:term") == ["colterm"]
    assert ids(corpus, "-x") == ["x"]
    assert ids(corpus, "^") == ids(corpus, "")


def test_words_of_diacritics_alone_are_indexed_as_nothing(index: SearchIndex) -> None:
    """ "¨" is NFKC " \u0308", a word the tokenizer folds to no term (found by Schemathesis:
    the SQLite index refused the whole event)."""
    index.upsert([event("marks", "\u00a8 ok \u0301", keywords=("\u00a8", "\u0308\u0301"))])
    assert ids(index, "ok") == ["marks"]
    assert ids(index, "\u00a8") == ids(index, "")


@pytest.mark.parametrize("text", ["", '"', "((", "***", " \t\n", "!?"])
def test_text_without_words_is_newest_first(corpus: SearchIndex, text: str) -> None:
    assert ids(corpus, text)[:2] == ["near", "andnot"]


def test_a_4000_character_text_works(corpus: SearchIndex) -> None:
    text = ('station "near" AND (x OR y) * col:term ' * 120)[:4000]
    hits = ids(corpus, text)
    assert {"near", "colterm", "x"} <= set(hits)


def test_many_distinct_words_work(corpus: SearchIndex) -> None:
    text = " ".join(f"w{i}" for i in range(800)) + " station"
    assert isinstance(ids(corpus, text), list)


# --- unicode ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("digest", "query"),
    [
        ("Meeting at the café", "cafe"),
        ("Meeting at the cafe", "café"),
        ("Meeting at the CAFÉ", "Café"),
        ("Herr Müller called", "muller"),
        ("naïve résumé", "naive resume"),
        ("ﬁle upload", "file"),  # NFKC folds the ligature
        ("東京 trip", "東京"),
        ("ΣΧΈΔΙΟ έργου", "σχέδιο"),  # Greek case; SQLite folds Latin diacritics only
        ("नमस्ते दुनिया", "नमस्ते"),  # marks stay inside the word
    ],
)
def test_diacritics_and_case_are_folded(index: SearchIndex, digest: str, query: str) -> None:
    index.upsert([*filler(5), event("hit", digest)])
    assert ids(index, query) == ["hit"]


def test_words_with_marks_are_not_split(index: SearchIndex) -> None:
    index.upsert([*filler(5), event("hit", "नमस्ते दुनिया")])
    assert ids(index, "नमस") == []


def test_stemming_matches_word_forms(index: SearchIndex) -> None:
    index.upsert([*filler(5), event("hit", "remembering old memories")])
    assert ids(index, "memory remembered") == ["hit"]


# --- concurrency ------------------------------------------------------------------------


def _upsert_range(path: str, user: str, count: int) -> None:
    store = SqliteSearchIndex(Path(path))
    for i in range(count):
        store.upsert([event(f"{user}-{i}", f"note {i}", user_id=user)])


def test_concurrent_threads_lose_no_writes(tmp_path: Path) -> None:
    store = SqliteSearchIndex(tmp_path / "search.sqlite3")
    workers = [threading.Thread(target=_write_with, args=(store, f"u{n}", 25)) for n in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert len(list(store.list_event_ids("t1"))) == 150
    assert len(ids(store, "note", top_k=100, user_id="u3")) == 25


def _write_with(store: SqliteSearchIndex, user: str, count: int) -> None:
    for i in range(count):
        store.upsert([event(f"{user}-{i}", f"note {i}", user_id=user)])
        store.search(EventQuery(tenant_id="t1", user_id=user, text="note"))


def test_concurrent_processes_lose_no_writes(tmp_path: Path) -> None:
    path = tmp_path / "search.sqlite3"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_upsert_range, args=(str(path), f"p{n}", 30)) for n in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert len(list(SqliteSearchIndex(path).list_event_ids("t1"))) == 90


# --- what only the SQLite index promises ---------------------------------------------------


def test_the_constructor_touches_no_file(tmp_path: Path) -> None:
    SqliteSearchIndex(tmp_path / "nested" / "search.sqlite3")
    assert not (tmp_path / "nested").exists()


def test_searches_use_the_per_user_indexes(tmp_path: Path) -> None:
    store = SqliteSearchIndex(tmp_path / "search.sqlite3")
    store.upsert([event("e", "plan", project_ids=("alpha",), keywords=("k",))])
    plan = _plan(tmp_path / "search.sqlite3")
    scans = [s for s in plan if s.startswith("SCAN") and not s.startswith("SCAN (subquery")]
    assert scans == [], plan


def _plan(path: Path) -> list[str]:
    """White box: EXPLAIN QUERY PLAN of the adapter's own two statements, all filters set."""
    from memnet.adapters.local import search, search_postings

    query = EventQuery(
        tenant_id="t1",
        user_id="u1",
        since=T0,
        service_ids=("a",),
        project_ids=("alpha",),
        keywords=("k",),
    )
    where, params = filters(query, 1)
    db = sqlite3.connect(path)
    rows: list[str] = []
    probe, probe_params = filters(query, 1, correlated=True)
    passes = search_postings.PASSES.format(probe)
    postings, after = search_postings.POSTINGS, search_postings.AFTER
    for sql, args in (
        (search._NEWEST.format(where), (1, *params, 10)),
        (search._NEWEST.format(probe), (1, *probe_params, 10)),
        (postings.format(passes, ""), (*probe_params, 1, "plan", 10)),
        (postings.format(passes, after), (*probe_params, 1, "plan", 0, 0, 0, 9)),
        (search_postings.SCORED.format(f"e.scope_id = ? {where}"), (1, *params)),
        *((sql, (*args, 10)) for sql, args in field_counts(query, 1)),
    ):
        rows += [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + sql, args)]
    marks = ",".join("?" * 32)
    scoring = search_postings.SCORED.format(search_postings.MET.format(marks))
    plan = [r[3] for r in db.execute("EXPLAIN QUERY PLAN " + scoring, (*range(32), 1))]
    assert plan == ["SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"], plan  # not the user's
    db.close()  # events scanned through an index on scope_id
    return rows


def test_a_file_from_before_classes_gains_the_column_with_every_event_unclassified(
    tmp_path: Path,
) -> None:
    path = tmp_path / "search.sqlite3"
    SqliteSearchIndex(path).upsert([event("old", "diagnosis note")])
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE events DROP COLUMN sensitivity")  # as the file was written
    db.commit()
    db.close()
    reopened = SqliteSearchIndex(path)
    reopened.upsert([event("new", "diagnosis note", sensitivity="p:sensitive")])
    assert found(reopened, "diagnosis", classes=()) == {"old"}
    assert found(reopened, "diagnosis", classes=("p:sensitive",)) == {"old", "new"}
