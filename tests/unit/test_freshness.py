"""Freshness (memnet.domain.freshness): the three staleness rules, the downgrade's ops and
the restore a confirming write brings."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import jsonpatch

from memnet.domain.freshness import (
    FRESHNESS_CALLER,
    FreshnessRules,
    downgrade,
    restore_ops,
    why_stale,
)
from memnet.domain.patching import parse_ops

NOW = datetime(2026, 11, 24, tzinfo=UTC)
RULES = FreshnessRules(sections={"b": (("facts",),)}, max_age_days=365, text_fields=("fact",))
FACTS, PENDING = ("facts",), ("pending",)


def fact(text: str, verified: str = "2026-11-01T00:00:00Z", **kw: Any) -> dict[str, Any]:
    return {"fact": text, "confidence": 0.9, "evidence": {"message_ids": ["m1"]},
            "last_verified_at": verified, **kw}  # fmt: skip


def test_past_expires_at_is_stale():
    assert why_stale(fact("a", expires_at="2026-11-24T00:00:00Z"), RULES, NOW) == "expired"
    assert why_stale(fact("a", expires_at="2026-11-25T00:00:00Z"), RULES, NOW) is None


def test_past_its_ttl_class_is_stale_and_permanent_never_ages_by_class():
    assert why_stale(fact("a", "2026-10-25T00:00:00Z", ttl_class="short"), RULES, NOW) is None
    assert why_stale(fact("a", "2026-10-24T23:59:59Z", ttl_class="short"), RULES, NOW) == (
        "ttl_class"
    )
    old = fact("a", "2016-01-01T00:00:00Z", ttl_class="permanent")
    assert why_stale(old, RULES, NOW) is None  # the class decides, not max_age_days
    no_max = FreshnessRules(sections=RULES.sections)
    assert why_stale(old, no_max, NOW) is None


def test_a_longer_class_outlives_max_age_days():
    # long is 730 days: at 400 days it is fresh though max_age_days is 365
    assert why_stale(fact("a", "2025-10-20T00:00:00Z", ttl_class="long"), RULES, NOW) is None
    assert why_stale(fact("a", "2024-11-24T00:00:00Z", ttl_class="long"), RULES, NOW) is None
    assert why_stale(fact("a", "2024-11-23T23:59:59Z", ttl_class="long"), RULES, NOW) == (
        "ttl_class"
    )


def test_expires_at_always_applies_whatever_the_class():
    for ttl in ("permanent", "long"):
        item = fact("a", "2026-11-23T00:00:00Z", ttl_class=ttl, expires_at="2026-11-24T00:00:00Z")
        assert why_stale(item, RULES, NOW) == "expired"


def test_max_age_days_applies_only_to_facts_without_a_known_class():
    assert why_stale(fact("a", "2025-10-20T00:00:00Z"), RULES, NOW) == "max_age"
    unknown = fact("a", "2025-10-20T00:00:00Z", ttl_class="unheard-of")
    assert why_stale(unknown, RULES, NOW) == "max_age"


def test_older_than_max_age_since_verified_is_stale():
    assert why_stale(fact("a", "2025-11-24T00:00:00Z"), RULES, NOW) is None
    assert why_stale(fact("a", "2025-11-23T23:59:59Z"), RULES, NOW) == "max_age"
    assert why_stale(fact("a", "not a time"), RULES, NOW) is None  # ages by expires_at only


def test_downgrade_moves_stale_facts_to_pending_as_proposals():
    stale = fact("Lives in Bergen.", "2024-01-01T00:00:00Z")
    content = {"facts": [fact("fresh"), stale], "pending": []}
    result = downgrade(content, (FACTS,), PENDING, RULES, NOW)
    after = jsonpatch.apply_patch({"content": copy.deepcopy(content)}, result.ops)["content"]
    assert after["facts"] == [fact("fresh")]
    assert after["pending"] == [
        {
            "candidate": stale,
            "target_path": "/facts/-",
            "op": "add",
            "confidence": 0.9,
            "evidence": {"message_ids": ["m1"]},
            "proposed_at": "2026-11-24T00:00:00.000Z",
            "proposed_by": FRESHNESS_CALLER,
        }
    ]
    assert result.paths == ["/content/facts/1"] and result.why == {"/content/facts/1": "max_age"}


def test_downgrade_respects_the_room_left():
    content = {"facts": [fact(f"f{i}", "2020-01-01T00:00:00Z") for i in range(3)], "pending": []}
    assert len(downgrade(content, (FACTS,), PENDING, RULES, NOW, room=2).paths) == 2


def test_a_confirming_write_removes_the_freshness_proposal():
    proposal = {"candidate": fact("Lives in Bergen."), "target_path": "/facts/-",
                "proposed_at": "x", "proposed_by": FRESHNESS_CALLER}  # fmt: skip
    other = {**proposal, "proposed_by": "someone"}
    content = {"facts": [], "pending": [other, proposal]}
    ops = parse_ops([{"op": "add", "path": "/content/facts/-", "value": fact("lives in bergen")}])
    restores = restore_ops(content, (FACTS,), PENDING, RULES, ops)
    assert [op.as_json() for op in restores] == [{"op": "remove", "path": "/content/pending/1"}]
    unrelated = parse_ops([{"op": "add", "path": "/content/facts/-", "value": fact("other")}])
    assert restore_ops(content, (FACTS,), PENDING, RULES, unrelated) == []
    touches_pending = ops + parse_ops([{"op": "remove", "path": "/content/pending/0"}])
    assert restore_ops(content, (FACTS,), PENDING, RULES, touches_pending) == []
