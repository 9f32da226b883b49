"""Item identity and upsert planning (memnet.domain.upsert), without storage."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.upsert import IdentityRule, normalise, parse_rules, plan

BY_TEXT = parse_rules({"/facts": {"content_fields": ["text"]}})
BY_KEY = parse_rules({"/facts": {"key": "id"}})
STRINGS = parse_rules({"/tags": {"content_fields": []}})


def run(rules: Any, content: Any, ops: list[dict[str, Any]]) -> tuple[Any, list[Any]]:
    planned, report = plan(rules, content, parse_ops(ops), 100_000)
    return apply_ops({"content": content}, planned)["content"], report


def append(section: str, value: Any) -> dict[str, Any]:
    return {"op": "add", "path": f"/content/{section}/-", "value": value}


def test_normalised_content_replaces_the_item_it_equals():
    content = {"facts": [{"text": "Python was created by Guido van Rossum."}]}
    after, report = run(
        BY_TEXT,
        content,
        [append("facts", {"text": "  PYTHON was created by\tGuido van Rossum. ", "n": 2})],
    )
    assert after["facts"] == [{"text": "  PYTHON was created by\tGuido van Rossum. ", "n": 2}]
    assert report == [{"op_index": 0, "result": "replaced", "path": "/content/facts/0"}]


def test_a_new_item_is_added_and_reported_with_its_index():
    after, report = run(BY_TEXT, {"facts": [{"text": "a"}]}, [append("facts", {"text": "b"})])
    assert after["facts"] == [{"text": "a"}, {"text": "b"}]
    assert report == [{"op_index": 0, "result": "added", "path": "/content/facts/1"}]


def test_an_identical_item_is_unchanged():
    after, report = run(
        BY_KEY, {"facts": [{"id": "f1", "v": 1}]}, [append("facts", {"id": "f1", "v": 1})]
    )
    assert after["facts"] == [{"id": "f1", "v": 1}]
    assert report[0]["result"] == "unchanged"


def test_key_identity_compares_the_key_only_and_exactly():
    content = {"facts": [{"id": "f1", "v": 1}, {"id": "F1", "v": 2}]}
    after, report = run(BY_KEY, content, [append("facts", {"id": "f1", "v": 3})])
    assert after["facts"] == [{"id": "f1", "v": 3}, {"id": "F1", "v": 2}]
    assert report[0] == {"op_index": 0, "result": "replaced", "path": "/content/facts/0"}


def test_two_appends_of_one_item_in_one_patch_leave_one():
    after, report = run(
        BY_TEXT, {"facts": []}, [append("facts", {"text": "x"}), append("facts", {"text": "X"})]
    )
    assert after["facts"] == [{"text": "X"}]
    assert [r["result"] for r in report] == ["added", "replaced"]


def test_items_without_identity_and_other_ops_are_left_alone():
    content = {"facts": [{"text": "a"}], "other": []}
    ops = [
        append("facts", {"note": "no text"}),
        append("other", {"text": "a"}),
        {"op": "add", "path": "/content/facts/0", "value": {"text": "a"}},
    ]
    after, report = run(BY_TEXT, content, ops)
    assert after["facts"] == [{"text": "a"}, {"text": "a"}, {"note": "no text"}]
    assert report == []


def test_string_items_dedupe_on_their_normalised_text():
    after, report = run(
        STRINGS, {"tags": ["\uff33ub-1"]}, [append("tags", "sub-1"), append("tags", "sub-2")]
    )
    assert after["tags"] == ["sub-1", "sub-2"]  # NFKC folds the full-width S
    assert [r["result"] for r in report] == ["replaced", "added"]


def test_a_copy_that_outgrows_the_document_ends_planning_without_growing_it():
    content = {"facts": [{"text": "x" * 100}], "blob": {}}
    ops = [{"op": "copy", "from": "/content", "path": "/content/blob/c"} for _ in range(40)]
    planned, report = plan(
        BY_TEXT, content, parse_ops([*ops, append("facts", {"text": "x" * 100})]), 5_000
    )
    assert report == [] and [op.op for op in planned][-1] == "add"  # left for the real apply


def test_a_failing_op_ends_planning_and_keeps_the_rest():
    ops = [{"op": "remove", "path": "/content/nope"}, append("facts", {"text": "a"})]
    planned, report = plan(BY_TEXT, {"facts": [{"text": "a"}]}, parse_ops(ops), 10_000)
    assert [op.op for op in planned] == ["remove", "add"] and report == []


@given(st.text(max_size=40))
def test_normalising_is_idempotent_and_ignores_case_and_spacing(text: str):
    once = normalise(text)
    assert once is not None and normalise(once) == once
    assert normalise(f"  {text.upper()}  ") == normalise(f"{text.upper()}")


def test_identity_of_non_objects_and_missing_members_is_none():
    assert IdentityRule(key="id").identity("text") is None
    assert IdentityRule(key="id").identity({"other": 1}) is None
    assert IdentityRule(content_fields=("text",)).identity({"text": 5}) is None
    assert IdentityRule(content_fields=()).identity("   ") is None


def test_a_patch_computes_each_items_identity_once(monkeypatch: Any):
    calls = {"n": 0}
    original = IdentityRule.identity

    def counted(self: IdentityRule, item: Any) -> str | None:
        calls["n"] += 1
        return original(self, item)

    monkeypatch.setattr(IdentityRule, "identity", counted)
    content = {"facts": [{"text": f"fact {i}"} for i in range(2000)]}
    ops = [append("facts", {"text": f"fact {i * 40}"}) for i in range(50)]
    _, report = plan(BY_TEXT, content, parse_ops(ops), 10_000_000)
    assert [r["result"] for r in report] == ["unchanged"] * 50
    assert calls["n"] <= 2000 + 50


def test_another_write_to_the_section_is_seen_by_the_next_append():
    ops = [
        append("facts", {"text": "a"}),
        {"op": "remove", "path": "/content/facts/0"},
        append("facts", {"text": "a"}),
    ]
    after, report = run(BY_TEXT, {"facts": [{"text": "z"}]}, ops)
    assert after["facts"] == [{"text": "a"}]  # z removed, the second "a" found at its new place
    assert [(r["result"], r["path"]) for r in report] == [
        ("added", "/content/facts/1"),
        ("unchanged", "/content/facts/0"),
    ]
