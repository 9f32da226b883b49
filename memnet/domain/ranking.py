"""Importance-aware ranking of search hits (issue 15, capability 7; docs/api.md
"Ranking"): a weighted blend of relevance, importance and recency, such as
``relevance * 0.7 + importance * 0.3``.

Each part is in [0, 1]: relevance is the hit's score divided by the best score among
the candidates (1 for every hit of a search without text, which the index orders by
time); importance is the event's ``importance``, or ``default_importance`` when it has
none; recency halves every ``half_life_days`` of age. The blend is the weighted sum over
the sum of the weights. Pure: no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memnet.domain.errors import BadRequest
from memnet.domain.timestamps import parse_timestamp


@dataclass(frozen=True)
class Ranking:
    relevance: float = 1.0
    importance: float = 0.0
    recency: float = 0.0
    half_life_days: float = 30.0
    default_importance: float = 0.5

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> Ranking:
        """From a request's or a profile's ``ranking`` (already checked)."""
        return cls(**{k: float(v) for k, v in raw.items()})


@dataclass(frozen=True)
class Scored:
    """A candidate's blended score and its parts."""

    score: float
    relevance: float
    importance: float
    recency: float

    def parts(self) -> dict[str, float]:
        return {
            "relevance": round(self.relevance, 6),
            "importance": round(self.importance, 6),
            "recency": round(self.recency, 6),
        }


def blend(
    ranking: Ranking, scores: list[float], events: list[Mapping[str, Any]], now: datetime
) -> list[Scored]:
    """The blended score of each candidate (``scores[i]`` the index's score of
    ``events[i]``), in the candidates' order."""
    best = max((s for s in scores if s > 0), default=0.0)
    total = (ranking.relevance + ranking.importance + ranking.recency) or 1.0
    found = []
    for score, event in zip(scores, events, strict=True):
        relevance = score / best if best > 0 else 1.0
        importance = _importance(event, ranking.default_importance)
        recency = _recency(event, now, ranking.half_life_days)
        blended = (
            ranking.relevance * relevance
            + ranking.importance * importance
            + ranking.recency * recency
        )
        found.append(Scored(blended / total, relevance, importance, recency))
    return found


def _importance(event: Mapping[str, Any], default: float) -> float:
    value = event.get("importance")
    return (
        float(value) if isinstance(value, int | float) and not isinstance(value, bool) else default
    )


def _recency(event: Mapping[str, Any], now: datetime, half_life_days: float) -> float:
    try:
        age = (now - parse_timestamp(event.get("timestamp"))).total_seconds()
    except BadRequest:  # a stored event always has a timestamp; an odd one counts as old
        return 0.0
    return math.pow(0.5, max(age, 0.0) / 86_400 / half_life_days)
