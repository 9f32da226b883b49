"""The compaction planner (memnet.domain.compaction): trim order, durable protection,
duplicates (exact, normalised, near at the threshold), ops that apply, targets."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from memnet.domain.compaction import (
    CompactionRules,
    Protection,
    SectionRules,
    digest_text,
    parse_rules,
    plan,
    section_of,
)
from memnet.domain.envelope import char_count
from memnet.domain.errors import ConfigError
from memnet.domain.likeness import contradicts, similarity
from memnet.domain.profiles import freshness_problem
from memnet.services.profiles.registry import load_registry

REPO = Path(__file__).resolve().parents[2]

NOTES = ("notes",)
FACTS = ("facts",)
PROTECT = Protection(durable_sections=(FACTS,), min_durable=0.8)


def notes_rules(**kw: Any) -> CompactionRules:
    base = {"pointer": NOTES, "time_field": "at", "text_fields": ("note",)}
    return CompactionRules((SectionRules(**{**base, **kw}),))


def facts_rules(**kw: Any) -> CompactionRules:
    base = {
        "pointer": FACTS,
        "verified_field": "verified",
        "text_fields": ("fact",),
        "low_value": ("unverified", "lowest_confidence", "oldest"),
    }
    return CompactionRules((SectionRules(**{**base, **kw}),))


def note(text: str, day: int) -> dict[str, Any]:
    return {"note": text, "at": f"2026-01-{day:02d}T00:00:00Z"}


def fact(text: str, confidence: float, verified: str | None = None, **kw: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"fact": text, "confidence": confidence, **kw}
    if verified:
        item["verified"] = verified
    return item


def applied(content: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    document = {"content": copy.deepcopy(content)}
    return jsonpatch.apply_patch(document, ops)["content"]  # type: ignore[no-any-return]


def test_oldest_notes_are_trimmed_first_until_within_max_items():
    content = {"notes": [note(f"n{d}", d) for d in (5, 1, 4, 2, 3)]}
    result = plan(content, notes_rules(max_items=3, low_value=("oldest",)), Protection())
    assert applied(content, result.ops)["notes"] == [note("n5", 5), note("n4", 4), note("n3", 3)]
    assert result.reason_codes == ["move_to_events", "trim"]
    assert result.within_targets and not result.why_not
    assert {r.path for r in result.removed} == {"/content/notes/1", "/content/notes/3"}


def test_items_of_a_lower_class_are_trimmed_before_any_of_a_higher_one():
    content = {"notes": [note(f"n{d}", d) for d in (1, 2, 3, 4, 5)]}
    ranked = Protection(rank=lambda _section, index, _item: 1 if index < 2 else 0)
    result = plan(content, notes_rules(max_items=3, low_value=("oldest",)), ranked)
    assert applied(content, result.ops)["notes"] == [note("n1", 1), note("n2", 2), note("n5", 5)]
    assert all(r.to_event for r in result.removed)  # the lowest class: into the digest


def test_a_merged_item_keeps_its_class_and_no_classified_item_goes_to_events():
    content = {"notes": [{**note("alpha beta gamma", d), "id": f"a{d}"} for d in (1, 2)]}
    content["notes"] += [note(f"n{d}", d) for d in (3, 4, 5)]
    ranked = Protection(rank=lambda _section, index, _item: 1 if index < 2 else 0)
    rules = notes_rules(max_items=3, low_value=("oldest",), consolidated_field="merged")
    result = plan(content, rules, ranked)  # the merge rewrites the kept item (its "merged")
    kept = applied(content, result.ops)["notes"]
    assert [n["note"] for n in kept][:1] == ["alpha beta gamma"]  # merged, not trimmed
    assert not any(r.to_event for r in result.removed if "alpha" in str(r.item))


def test_low_value_order_is_the_profiles():
    content = {
        "facts": [
            fact("a", 0.5, "2026-01-03T00:00:00Z"),
            fact("b", 0.6),
            fact("c", 0.4, "2026-01-01T00:00:00Z"),
        ]
    }
    unverified_first = plan(content, facts_rules(max_items=2), Protection())
    assert [r.item["fact"] for r in unverified_first.removed] == ["b"]
    by_confidence = facts_rules(max_items=2, low_value=("lowest_confidence",))
    assert [r.item["fact"] for r in plan(content, by_confidence, Protection()).removed] == ["c"]


def test_durable_facts_at_the_threshold_are_never_trimmed():
    content = {"facts": [fact(f"f{i}", 0.8 + i / 100) for i in range(4)] + [fact("low", 0.5)]}
    result = plan(content, facts_rules(max_items=2), PROTECT)
    assert [r.item["fact"] for r in result.removed] == ["low"]
    assert not result.within_targets
    assert result.why_not == [
        "/facts: 4 items, over its max_items 2, are all protected durable facts"
    ]


def test_exact_and_normalised_duplicates_merge_keeping_the_best_with_evidence():
    older = fact("Works in Oslo.", 0.9, "2026-01-01T00:00:00Z", evidence={"message_ids": ["m1"]})
    newer = fact("works in  OSLO", 0.85, "2026-02-01T00:00:00Z", evidence={"message_ids": ["m2"]})
    content = {"facts": [older, copy.deepcopy(older), newer]}
    result = plan(content, facts_rules(), PROTECT)
    kept = applied(content, result.ops)["facts"]
    assert kept == [{**newer, "evidence": {"message_ids": ["m2", "m1"]}}]
    assert {r.reason for r in result.removed} == {"merge_duplicate"}
    assert result.reason_codes == ["merge_duplicate"]  # duplicates are not moved to events


def test_near_duplicates_merge_at_the_threshold_and_not_below():
    a, b = "the team ships the api on friday", "the team ships the api on monday"
    score = similarity(a, b)
    assert score == pytest.approx(5 / 7)
    content = {"notes": [note(a, 1), note(b, 2)]}
    at = plan(content, notes_rules(near_duplicate_threshold=score), Protection())
    assert [r.reason for r in at.removed] == ["merge_near_duplicate"]
    assert applied(content, at.ops)["notes"] == [note(b, 2)]
    below = plan(content, notes_rules(near_duplicate_threshold=score + 1e-9), Protection())
    assert below.removed == [] and below.ops == []


def test_a_protected_fact_is_never_dropped_as_a_near_duplicate():
    content = {"facts": [fact("likes green tea a lot", 0.9), fact("likes green tea a bit", 0.95)]}
    result = plan(content, facts_rules(near_duplicate_threshold=0.5), PROTECT)
    assert result.removed == [] and result.ops == []


def test_max_chars_trims_until_the_document_fits():
    content = {"notes": [note(f"{d} " + "x" * 100, d) for d in range(1, 11)]}
    rules = CompactionRules(notes_rules().sections, max_chars=700)
    result = plan(content, rules, Protection(), envelope_chars=50)
    after = applied(content, result.ops)
    assert 50 + char_count(after) <= 700 < 50 + char_count(content["notes"][4:])
    assert after["notes"] == content["notes"][-len(after["notes"]) :]  # the newest stay
    assert result.within_targets


def test_ops_apply_cleanly_and_fall_back_to_section_replace_over_max_ops():
    content = {"notes": [note(f"n{d}", d) for d in range(1, 21)]}
    granular = plan(content, notes_rules(max_items=5), Protection())
    assert [op["op"] for op in granular.ops] == ["remove"] * 15
    whole = plan(content, notes_rules(max_items=5), Protection(), max_ops=10)
    assert whole.ops == [
        {"op": "replace", "path": "/content/notes", "value": content["notes"][15:]}
    ]
    assert applied(content, granular.ops) == applied(content, whole.ops)


def test_plan_is_deterministic():
    content = {"notes": [note(f"same {d % 3}", d) for d in range(1, 13)]}
    rules = notes_rules(max_items=2, near_duplicate_threshold=0.5)
    assert plan(content, rules, Protection()) == plan(content, rules, Protection())


def test_string_items_and_missing_sections():
    content = {"notes": ["A note.", "a note", "other"]}
    result = plan(content, notes_rules(), Protection())
    assert applied(content, result.ops) == {"notes": ["A note.", "other"]}
    assert plan({}, notes_rules(max_items=1), Protection()).ops == []


def test_rules_parse_both_forms():
    rules = parse_rules(
        {"max_notes": 3, "max_chars": 900, "sections": {"/facts": {"max_items": 2}}}
    )
    assert rules.max_chars == 900
    assert [(s.pointer, s.max_items) for s in rules.sections] == [(FACTS, 2), (NOTES, 3)]


def _profile_with(tmp_path: Path, edit: Any) -> Path:
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    path = tmp_path / "profiles" / "project-copilot-v1.json"
    raw = json.loads(path.read_text())
    edit(raw)
    path.write_text(json.dumps(raw))
    return tmp_path / "profiles"


def test_a_bad_low_value_order_stops_loading_naming_the_field(tmp_path: Path):
    def edit(raw: dict[str, Any]) -> None:
        section = raw["compaction_rules"]["project_doc"]["sections"]["/recent_notes"]
        section["low_value"] = ["newest"]

    with pytest.raises(ConfigError) as caught:
        load_registry(_profile_with(tmp_path, edit))
    assert caught.value.field == "/compaction_rules/project_doc/sections//recent_notes/low_value/0"


def test_freshness_rules_need_a_pending_section():
    raw = json.loads((REPO / "profiles" / "project-copilot-v1.json").read_text())
    assert freshness_problem(raw) is None
    raw["confidence_rules"]["pending_sections"] = {}
    assert freshness_problem(raw) == (
        "/freshness_rules/sections/user_dynamic",
        "names a binding without confidence_rules.pending_sections",
    )


# -- near duplicates that contradict (negation, numbers) -------------------------------

LONG = (
    "the weekly planning meeting of our platform team with design, sales and support"
    " happens after lunch in the big glass room upstairs near a kitchen on"
)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (f"{LONG} tuesdays", f"{LONG} not tuesdays"),
        (f"{LONG} tuesdays", f"{LONG} never tuesdays"),
        (f"we can meet {LONG} tuesdays", f"we cannot meet {LONG} tuesdays"),
        (f"we do meet {LONG} tuesdays", f"we don't meet {LONG} tuesdays"),
        (f"it is {LONG} tuesdays", f"it isn't {LONG} tuesdays"),
        (f"it is {LONG} tuesdays", f"it isn\u2019t {LONG} tuesdays"),
        (f"we will meet {LONG} tuesdays", f"we won't meet {LONG} tuesdays"),
        (f"{LONG} tuesdays at 9", f"{LONG} tuesdays at 10"),
        (f"{LONG} tuesdays in 2025", f"{LONG} tuesdays"),
    ],
)
def test_near_duplicates_that_contradict_are_not_merged(a: str, b: str):
    assert similarity(a, b) >= 0.9 and contradicts(a, b)
    rules = notes_rules(near_duplicate_threshold=0.9)
    result = plan({"notes": [{"note": a}, {"note": b}]}, rules, PROTECT)
    assert result.ops == [] and result.removed == []


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (f"{LONG} tuesdays", f"{LONG} tuesdays again"),
        (f"we don't meet {LONG} tuesdays", f"we doesn't meet {LONG} tuesdays"),
        (f"{LONG} tuesdays at 9", f"{LONG} tuesdays at 9 sharp"),
    ],
)
def test_near_duplicates_agreeing_on_negation_and_numbers_still_merge(a: str, b: str):
    assert similarity(a, b) >= 0.9 and not contradicts(a, b)
    rules = notes_rules(near_duplicate_threshold=0.9)
    result = plan({"notes": [{"note": a}, {"note": b}]}, rules, PROTECT)
    assert [r.reason for r in result.removed] == ["merge_near_duplicate"]


def test_negations_spelled_differently_are_refused_too():
    # cautious: "don't" and "do not" negate by different tokens, so they stay apart
    assert contradicts("we don't meet on tuesdays", "we do not meet on tuesdays")
    assert not contradicts("Meets at 9.", "meets at 9")


# -- what an event digest keeps of a removed item --------------------------------------


def test_digest_text_uses_the_section_text_fields_and_a_proposal_its_candidate():
    rules = parse_rules(
        {
            "sections": {
                "/facts": {"text_fields": ["fact"]},
                "/pending": {},
            }
        }
    )
    facts, pending = section_of(rules, "/content/facts/3"), section_of(rules, "/content/pending/0")
    assert facts is not None and pending is not None
    fact = {"id": "f-1", "fact": "Lives in Oslo.", "confidence": 0.5}
    assert digest_text(fact, facts, rules) == "Lives in Oslo."
    proposal = {"target_path": "/facts/-", "candidate": fact, "proposed_at": "2026-01-01T00:00:00Z"}
    assert digest_text(proposal, pending, rules) == "Lives in Oslo."
    loose = {"target_path": "/elsewhere/-", "candidate": {"id": "x", "text": "T"}}
    assert digest_text(loose, pending, rules) == "x"  # no rules for it: first string member
    assert digest_text({"target_path": "/facts/-", "candidate": "Plain."}, pending, rules) == (
        "Plain."
    )
    assert digest_text({"n": 1}, None, rules) == '{"n": 1}'


def test_merged_items_leave_their_ids_in_the_kept_items_provenance():
    a = fact("Works in Oslo.", 0.9, "2026-01-01T00:00:00Z", id="f1", consolidated_from=["f0"])
    b = fact("works in  OSLO", 0.85, "2026-02-01T00:00:00Z", id="f2")
    c = fact("Works in Oslo", 0.8, id="f3")
    content = {"facts": [a, b, c]}
    result = plan(content, facts_rules(consolidated_field="consolidated_from"), PROTECT)
    (kept,) = applied(content, result.ops)["facts"]
    assert kept["id"] == "f2"  # the most recently verified wins, as before
    assert kept["consolidated_from"] == ["f1", "f0", "f3"]
    again = plan(
        applied(content, result.ops), facts_rules(consolidated_field="consolidated_from"), PROTECT
    )
    assert again.ops == []  # nothing more to merge: provenance is stable


def test_without_a_consolidated_field_no_provenance_is_written():
    a, b = fact("Works in Oslo.", 0.9, id="f1"), fact("works in oslo", 0.9, id="f2")
    content = {"facts": [a, b]}
    (kept,) = applied(content, plan(content, facts_rules(), PROTECT).ops)["facts"]
    assert "consolidated_from" not in kept


def _promoting(**promote: Any) -> CompactionRules:
    return parse_rules(
        {
            "sections": {
                "/episodes": {"text_fields": ["text"], "promote": {"to": "/facts", **promote}},
                "/facts": {"text_fields": ["text"]},
            }
        }
    )


def _episode(text: str, confidence: float, uses: int) -> dict[str, Any]:
    return {"text": text, "confidence": confidence, "meta": {"uses": uses}}


def test_an_item_meeting_every_threshold_moves_to_the_end_of_its_target():
    content = {
        "episodes": [_episode("a", 0.95, 12), _episode("b", 0.95, 2), _episode("c", 0.5, 40)],
        "facts": [{"text": "old fact"}],
    }
    rules = _promoting(min_confidence=0.9, uses_pointer="/meta/uses", min_uses=11)
    result = plan(content, rules, Protection())
    after = applied(content, result.ops)
    assert [e["text"] for e in after["episodes"]] == ["b", "c"]
    assert [f["text"] for f in after["facts"]] == ["old fact", "a"]
    assert result.reason_codes == ["promote"] and not any(r.to_event for r in result.removed)
    assert plan(after, rules, Protection()).ops == []  # nothing more to do


def test_similar_episodes_and_classes_decide_too():
    content = {
        "episodes": [_episode("flights to lisbon", 1, 0), _episode("flights to lisbon again", 1, 0),
                     _episode("a cat", 1, 0)],
        "facts": [],
    }  # fmt: skip
    after = applied(content, plan(content, _promoting(min_similar=1), Protection()).ops)
    assert [e["text"] for e in after["episodes"]] == ["a cat"]
    ranked = Protection(rank=lambda section, _index, _item: 1 if section == ("facts",) else 0)
    assert plan(content, _promoting(min_similar=1), ranked).ops == []  # it would change class


def test_unreviewed_replay_items_go_before_any_reviewed_or_older_item():
    """Twenty planted items a replay learned (dated in the future, claiming verification)
    never push out twelve genuine ones: unreviewed replay items are trimmed first."""
    planted = {"snapshot_uri": "blob://tenants/t/users/u/snapshots/c/s.json"}
    reviewed = {**planted, "reviewed_by": "ana", "reviewed_at": "2026-02-01T00:00:00Z"}
    genuine = [note(f"genuine {d}", d) for d in range(1, 11)]
    genuine += [
        {**note("approved 1", 11), "evidence": reviewed},
        {**note("approved 2", 12), "evidence": [reviewed]},
    ]
    bad = [
        {"note": f"planted {n}", "at": "2099-01-01T00:00:00Z", "evidence": planted}
        for n in range(20)
    ]
    content = {"notes": bad[:10] + genuine + bad[10:]}
    result = plan(content, notes_rules(max_items=12, low_value=("oldest",)), Protection())
    assert applied(content, result.ops)["notes"] == genuine
