"""The multi-session judged search set (tests/data/search_sessions, see its README) is
consistent: labels unique and never indexed, judgments point at events of the query's
user that pass its filters, categories and sizes as documented. No search runs."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "data" / "search_sessions"
EVENTS: list[dict[str, Any]] = json.loads((DATA / "events.json").read_text(encoding="utf-8"))
QUERIES: list[dict[str, Any]] = json.loads((DATA / "queries.json").read_text(encoding="utf-8"))
CATEGORIES = ("single_hop", "multi_hop", "temporal", "open_domain")


def _utc(value: str) -> datetime:
    assert value.endswith("Z"), value
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _in_window(event: dict[str, Any], filters: dict[str, Any]) -> bool:
    window, moment = filters.get("time_range", {}), _utc(event["timestamp"])
    return ("from" not in window or moment >= _utc(window["from"])) and (
        "to" not in window or moment < _utc(window["to"])
    )


def test_labels_are_unique_and_never_indexed():
    labels = [e["label"] for e in EVENTS]
    assert len(set(labels)) == len(labels)
    indexed = " ".join(e["digest"] + " " + " ".join(e["keywords"]) for e in EVENTS)
    assert not [label for label in labels if label in indexed]


def test_each_users_events_are_in_time_order():
    for user in {e["user"] for e in EVENTS}:
        moments = [_utc(e["timestamp"]) for e in EVENTS if e["user"] == user]
        assert moments == sorted(moments), user
    assert all(1 <= len(e["keywords"]) <= 4 for e in EVENTS)


def test_queries_are_judged_against_their_users_events():
    by_label = {e["label"]: e for e in EVENTS}
    assert len({q["id"] for q in QUERIES}) == len(QUERIES) >= 300
    for query in QUERIES:
        assert query["category"] in CATEGORIES, query["id"]
        assert 1 <= len(query["relevant"]) <= 4, query["id"]
        assert len(set(query["relevant"])) == len(query["relevant"]), query["id"]
        for label in query["relevant"]:
            event = by_label[label]
            assert event["user"] == query["user"], (query["id"], label)
            assert _in_window(event, query["filters"]), (query["id"], label)


def test_every_category_has_at_least_60_queries():
    counts = Counter(q["category"] for q in QUERIES)
    assert min(counts[c] for c in CATEGORIES) >= 60, counts
