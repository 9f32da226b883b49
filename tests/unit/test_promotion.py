"""Finding patterns among episodes (memnet.domain.promotion), without storage."""

from __future__ import annotations

from typing import Any

from memnet.domain.promotion import known_ids, parse_rules, patterns

RULES = parse_rules(
    {
        "binding": "long_term",
        "pointer": "/memories/-",
        "value": {"id": "{id}", "content": "{text}", "from": "{event_ids}", "n": "{count}"},
        "min_episodes": 3,
        "similarity": 0.5,
    }
)


def episode(n: int, digest: str, **more: Any) -> dict[str, Any]:
    return {"event_id": f"evt-{n}", "digest": digest, "source_type": "chat", **more}


def test_three_alike_episodes_make_one_item_from_the_newest():
    events = [
        episode(3, "User asked about TypeScript generics again"),
        episode(2, "User asked about TypeScript generics"),
        episode(1, "user asked about typescript generics today"),
        episode(0, "User booked a flight to Oslo"),
    ]
    (found,) = patterns(RULES, events)
    item = found.item(RULES)
    assert item["content"] == "User asked about TypeScript generics again"
    assert item["from"] == ["evt-3", "evt-2", "evt-1"] and item["n"] == 3
    assert item["id"].startswith("promoted-")


def test_the_items_id_stays_as_newer_episodes_join():
    older = [episode(2, "Prefers tea in the morning"), episode(1, "prefers tea in the morning")]
    base = [episode(3, "Prefers tea in the morning!"), *older]
    more = [episode(4, "Prefers tea in the morning, as usual"), *base]
    first = patterns(RULES, base)[0].item(RULES)
    later = patterns(RULES, more)[0].item(RULES)
    assert first["id"] == later["id"] and later["n"] == 4


def test_too_few_unlike_or_contradicting_episodes_make_nothing():
    assert patterns(RULES, [episode(1, "likes jazz"), episode(2, "likes jazz")]) == []
    unlike = [episode(n, text) for n, text in enumerate(["a b c", "d e f", "g h i"])]
    assert patterns(RULES, unlike) == []
    contradicting = [
        episode(1, "The standup meets at 9"),
        episode(2, "The standup meets at 10"),
        episode(3, "The standup meets at 11"),
    ]
    assert patterns(RULES, contradicting) == []


def test_source_types_and_importance_choose_the_episodes():
    rules = parse_rules(
        {
            "binding": "b",
            "pointer": "/x/-",
            "value": "{text}",
            "min_episodes": 2,
            "source_types": ["chat"],
            "min_importance": 0.5,
        }
    )
    events = [
        episode(1, "likes jazz", importance=0.9),
        episode(2, "likes jazz", importance=0.1),
        episode(3, "likes jazz", source_type="email", importance=0.9),
        episode(4, "likes jazz"),  # no importance: not counted when a minimum is set
    ]
    assert patterns(rules, events) == []
    events.append(episode(5, "likes jazz", importance=0.6))
    assert [p.event_ids for p in patterns(rules, events)] == [["evt-5", "evt-1"]]


def test_an_item_keeps_its_id_when_its_oldest_episode_leaves_the_window():
    window = [episode(n, "Prefers tea in the morning") for n in (4, 3, 2)]
    first = patterns(RULES, window)[0].item(RULES)
    known = known_ids(RULES, [first])
    moved = [episode(n, "Prefers tea in the morning") for n in (5, 4, 3)]  # evt-2 gone
    pattern = patterns(RULES, moved)[0]
    assert pattern.item(RULES, pattern.known_id(known))["id"] == first["id"]
    assert pattern.item(RULES)["id"] != first["id"]  # what the oldest alone would give


def test_equal_times_order_by_event_id_whatever_the_index_gave():
    at = "2026-11-24T10:00:00Z"
    events = [episode(n, "Prefers tea in the morning", timestamp=at) for n in (1, 3, 2)]
    assert patterns(RULES, events)[0].event_ids == ["evt-3", "evt-2", "evt-1"]
