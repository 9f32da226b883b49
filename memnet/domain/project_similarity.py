"""Semantic disambiguation between candidate projects (spec 11, step 3).

:func:`project_scores` scores a hint against each candidate's text by TF-IDF cosine,
with IDF taken over the candidates themselves: words every candidate shares count for
nothing, words only one candidate has count most. Pure, offline, deterministic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

from memnet.domain.project_routing import phrase_of

BAG_CACHE_SIZE = 1024  # candidate texts (~1-2 KB each, typically)
STEM_CACHE_SIZE = 65536  # words
MODEL_CACHE_SIZE = 256  # candidate sets

STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "help",
        "i",
        "in",
        "is",
        "it",
        "its",
        "me",
        "my",
        "need",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "this",
        "to",
        "up",
        "us",
        "we",
        "what",
        "when",
        "where",
        "which",
        "with",
        "you",
        "your",
    ]
)


def _terms(text: str) -> list[str]:
    return [_stem(t) for t in phrase_of(text) if t not in STOP_WORDS]


@lru_cache(maxsize=BAG_CACHE_SIZE)
def _bag(text: str) -> Counter[str]:
    """The term counts of ``text``, kept per text: a project's text recurs in every
    tie-break it takes part in. Shared between callers: never modified."""
    return Counter(_terms(text))


@lru_cache(maxsize=STEM_CACHE_SIZE)
def _stem(word: str) -> str:
    """A deliberately tiny stemmer: plural and -ing/-ed endings only."""
    for suffix in ("ing", "ies", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def project_scores(hint: str, candidates: Mapping[str, str]) -> dict[str, float]:
    """A score in [0, 1] per candidate id: how well its text fits the hint."""
    model = _model(tuple(candidates.items()))
    query = _weights(Counter(_terms(hint)), model.idf)
    query_norm = _norm(query)
    return {
        cid: _cosine(query, query_norm, vector, norm)
        for cid, (vector, norm) in model.vectors.items()
    }


@dataclass(frozen=True)
class _Model:
    """IDF over one set of candidates and each candidate's weighted terms and norm."""

    idf: dict[str, float]
    vectors: dict[str, tuple[dict[str, float], float]]


@lru_cache(maxsize=MODEL_CACHE_SIZE)
def _model(candidates: tuple[tuple[str, str], ...]) -> _Model:
    """Kept per candidate set: the same ambiguous keyword brings the same candidates."""
    bags = {cid: _bag(text) for cid, text in candidates}
    idf = _idf(bags.values())
    vectors = {cid: _weights(bag, idf) for cid, bag in bags.items()}
    return _Model(idf, {cid: (vector, _norm(vector)) for cid, vector in vectors.items()})


def _idf(bags: Iterable[Counter[str]]) -> dict[str, float]:
    documents = list(bags)
    frequency: Counter[str] = Counter(term for bag in documents for term in bag)
    return {t: math.log(1 + len(documents) / df) - math.log(2) for t, df in frequency.items()}


def _weights(bag: Counter[str], idf: Mapping[str, float]) -> dict[str, float]:
    return {t: (1 + math.log(n)) * idf[t] for t, n in bag.items() if idf.get(t, 0) > 0}


def _norm(vector: Mapping[str, float]) -> float:
    return math.sqrt(sum(w * w for w in vector.values()))


def _cosine(a: Mapping[str, float], a_norm: float, b: Mapping[str, float], b_norm: float) -> float:
    dot = sum(w * b.get(t, 0.0) for t, w in a.items())
    norm = a_norm * b_norm
    return dot / norm if norm else 0.0
