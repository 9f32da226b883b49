"""Event vectors in the embedded search index (memnet/adapters/local/search_vectors.py):
stored beside the terms, scored exactly per user, stale when the model or text changes."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memnet.adapters.local.search import SqliteSearchIndex
from memnet.adapters.local.search_vectors import _NEWEST_VECTORS, Block, VectorCache
from memnet.ports import EventQuery, IndexedEvent

M = "test-model@3"


def event(event_id: str, day: int, user: str = "u1", **fields: object) -> IndexedEvent:
    base: dict[str, object] = {
        "tenant_id": "t1", "user_id": user, "event_id": event_id,
        "timestamp": f"2026-01-{day:02d}T00:00:00Z", "service_id": "s1",
        "source_type": "chat", "digest": f"digest of {event_id}",
    }  # fmt: skip
    return IndexedEvent(**{**base, **fields})  # type: ignore[arg-type]


@pytest.fixture
def index(tmp_path: Path) -> SqliteSearchIndex:
    index = SqliteSearchIndex(tmp_path / "search.sqlite3")
    index.upsert([event("a", 1), event("b", 2), event("c", 3, service_id="s2")])
    index.put_vectors(
        "t1", "u1", M,
        [("a", "ha", [1.0, 0.0, 0.0]), ("b", "hb", [0.6, 0.8, 0.0]), ("c", "hc", [0, 0, 2.0])],
    )  # fmt: skip
    return index


def query(**fields: object) -> EventQuery:
    return EventQuery(tenant_id="t1", user_id="u1", **fields)  # type: ignore[arg-type]


def test_nearest_is_cosine_order_and_scores_are_cosines(index: SqliteSearchIndex) -> None:
    hits = index.nearest(query(top_k=3), M, [2.0, 0.0, 0.0])
    assert [h.event_id for h in hits] == ["a", "b", "c"]
    assert [round(h.score, 5) for h in hits] == [1.0, 0.6, 0.0]
    assert hits[0].timestamp == "2026-01-01T00:00:00Z"


def test_filters_top_k_users_and_models_bound_the_answer(
    index: SqliteSearchIndex,
) -> None:
    assert [h.event_id for h in index.nearest(query(top_k=1), M, [0, 1, 0])] == ["b"]
    only_s2 = index.nearest(query(service_ids=("s2",)), M, [1, 0, 0])
    assert [h.event_id for h in only_s2] == ["c"]
    other_user = EventQuery(tenant_id="t1", user_id="u2")
    assert index.nearest(other_user, M, [1, 0, 0]) == []
    assert index.nearest(query(), "other-model@3", [1, 0, 0]) == []
    assert index.nearest(query(top_k=0), M, [1, 0, 0]) == []


def test_a_class_filter_bounds_the_nearest_events_too(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "search.sqlite3")
    index.upsert([event("open", 1), event("hidden", 2, sensitivity="p:sensitive")])
    index.put_vectors("t1", "u1", M, [("open", "h1", [0, 1, 0]), ("hidden", "h2", [1, 0, 0])])
    near = [1.0, 0.0, 0.0]  # the hidden event is the nearest
    assert [h.event_id for h in index.nearest(query(), M, near)] == ["hidden", "open"]
    assert [h.event_id for h in index.nearest(query(classes=()), M, near)] == ["open"]
    shown = query(classes=("p:sensitive",))
    assert [h.event_id for h in index.nearest(shown, M, near)] == ["hidden", "open"]


def test_only_the_newest_vectors_are_scored(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "s.sqlite3", max_vectors=2)
    index.upsert([event("old", 1), event("mid", 2), event("new", 3)])
    index.put_vectors(
        "t1", "u1", M, [(e, e, [1.0, 0.1 * i, 0.0]) for i, e in enumerate(["old", "mid", "new"])]
    )
    assert {h.event_id for h in index.nearest(query(), M, [1, 0, 0])} == {"mid", "new"}


def test_a_project_filter_walks_the_users_events_newest_first(tmp_path: Path) -> None:
    """Not every vector of the user read and sorted (~100 s a search at 100k vectors)."""
    path = tmp_path / "s.sqlite3"
    index = SqliteSearchIndex(path)
    index.upsert([event(e, d, project_ids=p) for e, d, p in
                  (("a", 1, ("p1",)), ("b", 2, ()), ("c", 3, ("p1", "p2")))])  # fmt: skip
    index.put_vectors("t1", "u1", M, [(e, e, [1.0, 0.0, 0.0]) for e in ("a", "b", "c")])
    wanted = query(project_ids=("p1",))
    assert [h.event_id for h in index.nearest(wanted, M, [1, 0, 0])] == ["c", "a"]
    db = sqlite3.connect(path)
    plan = db.execute(f"EXPLAIN QUERY PLAN {_NEWEST_VECTORS}", (1, M, 9))
    assert next(plan)[3].startswith("SEARCH e USING INDEX events_by_time")
    db.close()


def test_a_change_by_another_index_object_is_seen_at_once(tmp_path: Path) -> None:
    """Vectors are cached per index object (per process), each block valid for the
    version the user's vectors had when it was read: a writer elsewhere changes it."""
    path = tmp_path / "s.sqlite3"
    reader, writer = SqliteSearchIndex(path), SqliteSearchIndex(path)
    writer.upsert([event("a", 1), event("b", 2)])
    writer.put_vectors("t1", "u1", M, [("a", "a", [1.0, 0.0, 0.0])])
    assert [h.event_id for h in reader.nearest(query(), M, [1, 0, 0])] == ["a"]
    writer.put_vectors("t1", "u1", M, [("b", "b", [1.0, 0.1, 0.0])])
    assert [h.event_id for h in reader.nearest(query(), M, [1, 0, 0])] == ["a", "b"]
    writer.delete("t1", "u1", ["a"])
    assert [h.event_id for h in reader.nearest(query(), M, [1, 0, 0])] == ["b"]
    writer.upsert([event("b", 2, digest="changed")])
    assert reader.nearest(query(), M, [1, 0, 0]) == []


def test_the_cache_keeps_the_most_recently_used_blocks_within_its_bytes() -> None:
    def block(version: int, rows: int) -> Block:
        ids = [str(i) for i in range(rows)]
        matrix = np.zeros((rows, 4), dtype=np.float32)
        return Block(version, ids, ids, 0, matrix, {i: n for n, i in enumerate(ids)})

    cache = VectorCache(max_bytes=block(0, 10).bytes * 2)
    cache.put((1, M), block(7, 10))
    cache.put((2, M), block(7, 10))
    assert cache.get((1, M), 7) is not None and cache.get((1, M), 8) is None  # other version
    cache.put((3, M), block(7, 10))  # over the budget: the least recently used leaves
    assert cache.get((2, M), 7) is None and cache.get((1, M), 7) is not None
    cache.put((4, M), block(7, 100))  # larger than the whole budget: not kept
    assert cache.get((4, M), 7) is None and cache.get((3, M), 7) is not None


def test_equal_scores_newer_first(tmp_path: Path) -> None:
    index = SqliteSearchIndex(tmp_path / "s.sqlite3")
    index.upsert([event("x", 1), event("z", 2), event("y", 2)])
    index.put_vectors("t1", "u1", M, [(e, e, [1.0, 1.0, 0.0]) for e in ("x", "y", "z")])
    assert [h.event_id for h in index.nearest(query(), M, [1, 1, 0])] == ["z", "y", "x"]


def test_stale_lists_missing_other_model_and_other_text(index: SqliteSearchIndex) -> None:
    wanted = [("a", "ha"), ("b", "changed"), ("d", "hd")]
    assert index.stale_vectors("t1", "u1", M, wanted) == ["b", "d"]
    assert index.stale_vectors("t1", "u1", "new-model@3", [("a", "ha")]) == ["a"]
    assert index.stale_vectors("t9", "u9", M, [("a", "ha")]) == ["a"]


def test_delete_removes_the_vector_and_reindexing_the_event_keeps_it(
    index: SqliteSearchIndex,
) -> None:
    index.upsert([event("a", 1)])  # a reindex of the same event
    assert index.stale_vectors("t1", "u1", M, [("a", "ha")]) == []
    index.delete("t1", "u1", ["a"])
    assert [h.event_id for h in index.nearest(query(), M, [1, 0, 0])] == ["b", "c"]
    index.upsert([event("a", 1)])
    assert index.stale_vectors("t1", "u1", M, [("a", "ha")]) == ["a"]


def test_vectors_of_events_the_index_does_not_hold_are_skipped(
    index: SqliteSearchIndex,
) -> None:
    assert index.put_vectors("t1", "u1", M, [("gone", "h", [1, 0, 0]), ("a", "h2", [1, 0, 0])]) == 1
    assert index.put_vectors("t1", "nobody", M, [("a", "h", [1, 0, 0])]) == 0


@pytest.mark.parametrize("bad", [[0.0, 0.0, 0.0], [math.nan, 1.0, 0.0], [math.inf, 0, 0], []])
def test_zero_and_non_finite_vectors_are_refused(
    index: SqliteSearchIndex, bad: list[float]
) -> None:
    with pytest.raises(ValueError):
        index.put_vectors("t1", "u1", M, [("a", "h", bad)])
    with pytest.raises(ValueError):
        index.nearest(query(), M, bad)


def test_a_vector_of_another_size_is_not_scored(index: SqliteSearchIndex) -> None:
    assert index.nearest(query(), M, [1.0, 0.0]) == []


def test_a_vector_never_outlives_the_text_it_was_made_from(index: SqliteSearchIndex) -> None:
    index.upsert([event("a", 1, digest="other words now")])  # the event's text changed
    assert index.stale_vectors("t1", "u1", M, [("a", "ha")]) == ["a"]
    assert [h.event_id for h in index.nearest(query(), M, [1, 0, 0])] == ["b", "c"]
    index.upsert([event("b", 2, keywords=("new",))])  # keywords are embedded too
    assert index.stale_vectors("t1", "u1", M, [("b", "hb")]) == ["b"]


def test_huge_but_finite_numbers_are_scaled_not_overflowed(index: SqliteSearchIndex) -> None:
    index.put_vectors("t1", "u1", M, [("a", "h", [1e300, 1e300, 0.0])])
    (hit, *_) = index.nearest(query(), M, [1e300, 1e300, 0.0])
    assert hit.event_id == "a" and round(hit.score, 5) == 1.0
    with pytest.raises(ValueError):
        index.put_vectors("t1", "u1", M, [("a", "h", [1e308, 1e308, 1e308, 1e999])])


def test_a_filter_counts_only_events_with_a_vector(tmp_path: Path) -> None:
    """Events without a vector of the model (being re-embedded) do not use up the rows
    a filtered search may look at."""
    index = SqliteSearchIndex(tmp_path / "s.sqlite3", max_vectors=2)
    index.upsert([event("old", 1, service_id="s2"), event("v1", 2), event("v2", 3)])
    index.upsert([event(f"new{i}", 4 + i, service_id="s2") for i in range(5)])  # no vectors
    index.put_vectors("t1", "u1", M, [("old", "o", [1, 0, 0]), ("v2", "v", [1, 0, 0])])
    found = index.nearest(query(service_ids=("s2",)), M, [1, 0, 0])
    assert [h.event_id for h in found] == ["old"]


def test_a_deleted_users_vectors_leave_this_processes_memory(index: SqliteSearchIndex) -> None:
    assert index.nearest(query(), M, [1, 0, 0])  # cached now
    assert index._vectors.used > 0  # the process's memory itself is what is checked
    index.delete("t1", "u1", ["a"])
    assert index._vectors.used == 0


def test_a_filter_finds_the_blocks_older_rows_among_many_events_without_vectors(
    tmp_path: Path,
) -> None:
    """A model change re-embeds in no time order: the block's time span can hold many
    more events than vectors, and the filtered list must still reach its oldest rows."""
    index = SqliteSearchIndex(tmp_path / "s.sqlite3", max_vectors=5)
    index.upsert([event(f"e{i:02}", 1 + i % 28, service_id="s1") for i in range(30)])
    held = ["e00", "e25", "e26", "e27", "e28"]
    index.put_vectors("t1", "u1", M, [(e, e, [1.0, 0.0, 0.0] if e == "e00" else [0, 1, 0])
                                      for e in held])  # fmt: skip
    assert index.nearest(query(), M, [1, 0, 0])[0].event_id == "e00"
    assert index.nearest(query(service_ids=("s1",)), M, [1, 0, 0])[0].event_id == "e00"
