"""Weighted min-max fusion of a lexical and a dense ranking (memnet/services/search/fusion.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memnet.ports import EventHit
from memnet.services.search.fusion import fuse

T = "2026-01-01T00:00:00Z"


def hits(*pairs: tuple[str, float], when: str = T) -> list[EventHit]:
    return [EventHit(event_id, score, when) for event_id, score in pairs]


def test_scores_are_normalised_per_list_and_weighted() -> None:
    lexical = hits(("a", 12.0), ("b", 6.0), ("c", 2.0))
    dense = hits(("c", 0.9), ("d", 0.5), ("a", 0.1))
    fused = {h.event_id: round(h.score, 6) for h in fuse(lexical, dense, 0.5)}
    # a: lexical 1, dense 0; b: 0.4, absent; c: 0, 1; d: absent, 0.5
    assert fused == {"a": 0.5, "b": 0.2, "c": 0.5, "d": 0.25}


def test_weight_zero_keeps_the_lexical_order_and_one_the_dense_order() -> None:
    lexical = hits(("a", 3.0), ("b", 2.0), ("c", 1.0))
    dense = hits(("c", 0.9), ("b", 0.8), ("z", 0.7))
    # each list's last hit normalises to 0, as an absent one: only the ones above it keep
    # their order against the other list's events
    assert [h.event_id for h in fuse(lexical, dense, 0.0)][:2] == ["a", "b"]
    assert [h.event_id for h in fuse(lexical, dense, 1.0)][:2] == ["c", "b"]


def test_equal_scores_in_a_list_all_count_as_best() -> None:
    fused = fuse(hits(("a", 2.0), ("b", 2.0)), [], 0.3)
    assert [round(h.score, 6) for h in fused] == [0.7, 0.7]


def test_ties_are_newer_first_then_the_larger_id() -> None:
    older = hits(("x", 1.0), when="2025-01-01T00:00:00Z")
    newer = hits(("y", 1.0), ("w", 1.0), when="2025-06-01T00:00:00.500000Z")
    assert [h.event_id for h in fuse(older + newer, [], 0.0)] == ["y", "w", "x"]


def test_a_weight_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError):
        fuse([], [], 1.5)


scores = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(
    st.dictionaries(st.text("abcdef", min_size=1, max_size=3), scores, max_size=8),
    st.dictionaries(st.text("abcdef", min_size=1, max_size=3), scores, max_size=8),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_every_event_once_scores_within_zero_to_one_and_sorted(
    lexical: dict[str, float], dense: dict[str, float], weight: float
) -> None:
    fused = fuse(hits(*lexical.items()), hits(*dense.items()), weight)
    assert sorted(h.event_id for h in fused) == sorted(set(lexical) | set(dense))
    assert all(-1e-9 <= h.score <= 1 + 1e-9 for h in fused)
    assert [h.score for h in fused] == sorted((h.score for h in fused), reverse=True)
