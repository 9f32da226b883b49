"""Routing (spec 11): the fast ranking gives exactly the reference ranking, the
semantic tie-break's caches give what a fresh computation gives, and reads go concurrent
only when they are slow."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from memnet.ports import BlobNotFound
from memnet.routing import RoutingIndex, matches, rank, rank_hint, tokens
from memnet.similarity import LexicalSimilarity

DATA = Path(__file__).resolve().parent.parent / "data" / "routing"
ROUTING_SET = json.loads((DATA / "user.json").read_text(encoding="utf-8"))
HINTS = [c["hint"] for c in json.loads((DATA / "hints.json").read_text(encoding="utf-8"))]


def routing_set_index() -> RoutingIndex:
    return RoutingIndex.build(ROUTING_SET["user_dynamic"]["projects_index"])


def bench_index() -> tuple[RoutingIndex, list[str]]:
    """The context benchmark's 1,000-project user (keywords shared by ~200 projects)."""
    from bench.context_data import world

    made = world(1000)
    return RoutingIndex.build(made.entries), [h["hint"].get("text", "") for h in made.hints]


def random_hints(index: RoutingIndex, count: int) -> list[str]:
    """Hints made of indexed phrases (overlapping, repeated) and filler words."""
    rng = random.Random(7)
    vocabulary = [" ".join(p) for p in index.phrases] + ["the", "and", "latency", "new"]
    return [" ".join(rng.choices(vocabulary, k=rng.randint(1, 7))) for _ in range(count)]


def assert_same_ranking(index: RoutingIndex, hint: str) -> None:
    fast, reference = rank_hint(index, tokens(hint)), rank(matches(index, tokens(hint)))
    assert (fast.best, fast.tied) == (reference.best, reference.tied), hint
    assert fast.scores == reference.scores, hint
    assert fast.matched == reference.matched, hint


@pytest.mark.parametrize("source", ["routing_set", "bench"])
def test_fast_ranking_equals_the_reference_ranking(source: str):
    if source == "routing_set":
        index, hints = routing_set_index(), HINTS
    else:
        index, hints = bench_index()
    for hint in [*hints, *random_hints(index, 300)]:
        assert_same_ranking(index, hint)


def test_a_phrase_inside_a_longer_match_of_another_project_does_not_count():
    index = RoutingIndex.build(
        [
            {"project_id": "alpha", "name": "Alpha"},
            {"project_id": "alpha-search", "name": "Alpha Search", "keywords": ["alpha"]},
            {"project_id": "s1", "keywords": ["search"]},
        ]
    )
    for hint in ("alpha search latency", "alpha and alpha search", "search alpha"):
        assert_same_ranking(index, hint)
    assert rank_hint(index, tokens("alpha search latency")).tied == ("alpha-search",)
    assert rank_hint(index, tokens("search alpha")).tied == ("alpha",)


def test_cached_similarity_scores_equal_fresh_ones():
    candidates = {
        "a": "billing kafka redis ledger invoices",
        "b": "billing grafana spark",
        "c": "billing stripe adyen invoices",
    }
    first = LexicalSimilarity().scores("billing trouble with invoices in stripe", candidates)
    again = LexicalSimilarity().scores("billing trouble with invoices in stripe", candidates)
    other = LexicalSimilarity().scores("kafka lag", candidates)
    assert first == again and first["c"] > first["a"] > first["b"] == 0.0
    assert other["a"] > 0 and other["b"] == other["c"] == 0.0


def test_reads_go_concurrent_only_once_they_are_slow():
    from memnet.context_reads import ReadTimer

    class SlowStore:
        def __init__(self, seconds: float) -> None:
            self.seconds = seconds

        def read(self, name: str) -> Any:
            import time

            time.sleep(self.seconds)
            raise BlobNotFound(name)

    timer = ReadTimer(0.001)
    for _ in range(20):
        assert timer.read(SlowStore(0.0), "x") is None
    assert not timer.slow
    for _ in range(20):
        timer.read(SlowStore(0.003), "x")
    assert timer.slow
