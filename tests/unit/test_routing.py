"""Routing (spec 11): phrases inside a longer match of another project do not count,
the semantic tie-break's caches give what a fresh computation gives, and reads go
concurrent only when they are slow."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memnet.domain.project_routing import RoutingIndex, phrase_of, rank_hint
from memnet.domain.project_similarity import project_scores
from memnet.ports import BlobNotFound

DATA = Path(__file__).resolve().parent.parent / "data" / "routing"
ROUTING_SET = json.loads((DATA / "user.json").read_text(encoding="utf-8"))
HINTS = [c["hint"] for c in json.loads((DATA / "hints.json").read_text(encoding="utf-8"))]


def routing_set_index() -> RoutingIndex:
    return RoutingIndex.build(ROUTING_SET["user_dynamic"]["projects_index"])


def test_a_phrase_inside_a_longer_match_of_another_project_does_not_count():
    index = RoutingIndex.build(
        [
            {"project_id": "alpha", "name": "Alpha"},
            {"project_id": "alpha-search", "name": "Alpha Search", "keywords": ["alpha"]},
            {"project_id": "s1", "keywords": ["search"]},
        ]
    )
    inside = rank_hint(index, phrase_of("alpha search latency"))
    assert (inside.best, inside.tied) == (1.1, ("alpha-search",))
    assert inside.scores == {"alpha-search": 1.1}  # "alpha" inside "alpha search" is not alpha's
    both = rank_hint(index, phrase_of("alpha and alpha search"))
    assert both.scores == {"alpha": 1.0, "alpha-search": 1.1}
    assert both.matched == {"alpha": ["alpha"], "alpha-search": ["alpha", "alpha search"]}
    apart = rank_hint(index, phrase_of("search alpha"))
    assert apart.tied == ("alpha",) and apart.scores == {
        "s1": 0.6,
        "alpha": 1.0,
        "alpha-search": 0.6,
    }


def test_cached_similarity_scores_equal_fresh_ones():
    candidates = {
        "a": "billing kafka redis ledger invoices",
        "b": "billing grafana spark",
        "c": "billing stripe adyen invoices",
    }
    first = project_scores("billing trouble with invoices in stripe", candidates)
    again = project_scores("billing trouble with invoices in stripe", candidates)
    other = project_scores("kafka lag", candidates)
    assert first == again and first["c"] > first["a"] > first["b"] == 0.0
    assert other["a"] > 0 and other["b"] == other["c"] == 0.0


def test_reads_go_concurrent_only_once_they_are_slow():
    from memnet.services.context.reads import ReadTimer

    class SlowStore:
        def __init__(self, seconds: float) -> None:
            self.seconds = seconds

        def read(self, name: str, *, max_bytes: int | None = None) -> Any:
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
