"""The search blend (memnet.domain.ranking), without storage."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memnet.domain.ranking import Ranking, blend

NOW = datetime(2026, 11, 24, tzinfo=UTC)


def event(days_old: float = 0, importance: float | None = None) -> dict[str, object]:
    found: dict[str, object] = {"timestamp": (NOW - timedelta(days=days_old)).isoformat()}
    if importance is not None:
        found["importance"] = importance
    return found


def test_mosaics_blend_lets_importance_lift_a_less_relevant_memory():
    mosaic = Ranking(relevance=0.7, importance=0.3)
    scored = blend(mosaic, [10.0, 8.0], [event(importance=0.1), event(importance=0.9)], NOW)
    assert [round(s.score, 4) for s in scored] == [0.73, 0.83]  # 0.7*1+0.3*0.1, 0.7*0.8+0.3*0.9
    assert scored[1].relevance == 0.8


def test_missing_importance_takes_the_default_and_recency_halves_per_half_life():
    ranking = Ranking(relevance=0.0, importance=0.5, recency=0.5, half_life_days=10)
    (old, new) = blend(ranking, [1.0, 1.0], [event(days_old=10), event()], NOW)
    assert old.importance == 0.5 and old.recency == 0.5 and new.recency == 1.0
    assert new.score > old.score


def test_a_search_without_text_gives_every_hit_full_relevance():
    scored = blend(Ranking(), [0.0, 0.0], [event(), event()], NOW)
    assert [s.relevance for s in scored] == [1.0, 1.0]


def test_odd_stored_values_do_not_break_the_blend():
    odd = [{"timestamp": "yesterday", "importance": True}, {"importance": "high"}]
    scored = blend(Ranking(importance=1.0, recency=1.0), [1.0, 2.0], odd, NOW)
    assert [(s.importance, s.recency) for s in scored] == [(0.5, 0.0), (0.5, 0.0)]


@given(
    st.lists(st.floats(0, 100), min_size=1, max_size=10),
    st.floats(0, 1),
    st.floats(0, 1),
    st.floats(0, 1),
)
def test_every_blend_is_between_0_and_1(scores: list[float], r: float, i: float, c: float):
    events = [event(days_old=n, importance=(n % 3) / 2) for n in range(len(scores))]
    for s in blend(Ranking(r, i, c), scores, events, NOW):
        assert 0.0 <= s.score <= 1.0 + 1e-9
