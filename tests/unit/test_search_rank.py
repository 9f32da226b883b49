"""The embedded index's ranking (memnet.adapters.local.search_rank): the integer BM25 parts
and the threshold algorithm, checked against a brute-force ranking of random corpora built
to tie (few impact values, shared timestamps, event ids out of insertion order)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from memnet.adapters.local.search_rank import Ranked, impact, impacts, top, weight


@dataclass(frozen=True)
class Doc:
    doc_id: int
    ts_us: int
    event_id: str
    impacts: dict[int, int]  # term -> impact
    passes: bool


def corpus(seed: int, docs: int, terms: int) -> list[Doc]:
    rng = random.Random(seed)
    made = []
    for doc_id in range(1, docs + 1):
        held = rng.sample(range(terms), rng.randint(1, terms))
        made.append(
            Doc(
                doc_id=doc_id,
                ts_us=rng.randrange(6),  # many equal times
                event_id=f"e{rng.randrange(10**6):06d}",  # not in doc_id order
                impacts={t: rng.choice((300, 500, 500, 700)) for t in held},  # many ties
                passes=rng.random() < 0.7,
            )
        )
    return made


class Lists:
    """Postings in ranking order, read the way the SQLite adapter reads them."""

    def __init__(self, docs: list[Doc], terms: int) -> None:
        self.by_id = {d.doc_id: d for d in docs}
        self.lists = [
            sorted((-d.impacts[t], -d.ts_us, d.doc_id, d.passes) for d in docs if t in d.impacts)
            for t in range(terms)
        ]
        self.fetched: list[int] = []

    def fetch(
        self, term: int, after: tuple[int, int, int] | None, limit: int
    ) -> list[tuple[int, int, int, bool]]:
        self.fetched.append(term)
        rows = [p for p in self.lists[term] if after is None or p[:3] > after]
        return rows[:limit]

    def score(self, weights: list[int]) -> object:
        def scored(doc_ids: list[int]) -> list[tuple[int, int, str, int]]:
            return [
                (d, self.by_id[d].ts_us, self.by_id[d].event_id, exact(self.by_id[d], weights))
                for d in doc_ids
            ]

        return scored


def exact(doc: Doc, weights: list[int]) -> int:
    return sum(weights[t] * i for t, i in doc.impacts.items())


def brute(docs: list[Doc], weights: list[int], k: int) -> list[Ranked]:
    held = [
        (-exact(d, weights), -d.ts_us, d.event_id, d.doc_id)
        for d in docs
        if d.passes and any(weights[t] > 0 for t in d.impacts)
    ]
    return sorted(held)[:k]


@pytest.mark.parametrize("seed", range(60))
def test_the_threshold_algorithm_returns_the_exact_top_k(seed: int) -> None:
    rng = random.Random(seed)
    terms = rng.randint(1, 4)
    docs = corpus(seed, rng.randint(0, 300), terms)
    weights = [rng.choice((0, 1, 2, 3)) for _ in range(terms)]
    k = rng.choice((1, 3, 10, 50))
    lists = Lists(docs, terms)
    ranked, is_exact, read = top(weights, lists.fetch, lists.score(weights), k, 10**9)  # type: ignore[arg-type]
    assert is_exact
    assert ranked == brute(docs, weights, k)
    assert read <= sum(len(lists.lists[t]) for t in range(terms) if weights[t] > 0)


def test_it_stops_early_when_the_top_is_proven() -> None:
    docs = [Doc(1, 5, "a", {0: 900}, True)] + [
        Doc(i, 1, f"z{i}", {0: 100}, True) for i in range(2, 500)
    ]
    lists = Lists(docs, 1)
    ranked, is_exact, read = top([3], lists.fetch, lists.score([3]), 1, 10**9)  # type: ignore[arg-type]
    assert is_exact and [r[2] for r in ranked] == ["a"] and read <= 8  # one fetch of 8


def test_terms_without_weight_are_never_read() -> None:
    docs = corpus(7, 50, 2)
    lists = Lists(docs, 2)
    top([0, 2], lists.fetch, lists.score([0, 2]), 5, 10**9)  # type: ignore[arg-type]
    assert set(lists.fetched) == {1}


@pytest.mark.parametrize("seed", range(20))
def test_a_budget_bounds_the_reads_and_keeps_true_scores(seed: int) -> None:
    docs = corpus(seed, 400, 3)
    weights = [1, 2, 3]
    lists = Lists(docs, 3)
    ranked, is_exact, read = top(weights, lists.fetch, lists.score(weights), 10, 25)  # type: ignore[arg-type]
    assert read <= 25
    assert ranked == sorted(ranked) and len(ranked) <= 10
    for score, ts, event_id, doc_id in ranked:
        doc = lists.by_id[doc_id]
        assert (-score, -ts, event_id) == (exact(doc, weights), doc.ts_us, doc.event_id)
    if is_exact:
        assert ranked == brute(docs, weights, 10)


def test_bm25_parts() -> None:
    assert impact(1, 10) > impact(1, 20) > impact(1, 40) > 0  # longer events weigh less
    assert impact(2.5, 20) > impact(1.5, 20) > impact(1, 20)  # more occurrences weigh more
    assert weight(1000, 1) > weight(1000, 100) > weight(1000, 999) >= 1  # rarer weighs more
    assert weight(1000, 1000) == 1  # a term in every event still matches
    assert impacts(["a", "b", "a"], ["a"]) == {"a": impact(3.5, 4), "b": impact(1, 4)}
