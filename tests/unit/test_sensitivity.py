"""Sensitivity views, index translation and write checks (memnet.domain.sensitivity)."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memnet.domain import pointers
from memnet.domain import sensitivity_answers as view_answers
from memnet.domain import sensitivity_views as views
from memnet.domain.callers import Caller
from memnet.domain.errors import Unprocessable
from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.policy import Violation
from memnet.domain.sensitivity import parse_rules, to_stored, to_view, view, write_violations

RULES = parse_rules(
    {
        "classes": ["standard", "restricted", "sensitive"],
        "by_field": {
            "field": "category",
            "prefixes": {"a2p:health": "restricted", "a2p:relationships": "sensitive"},
        },
        "sections": {"memories": {"/secrets": "sensitive"}},
    },
    "memories",
)
STANDARD, RESTRICTED, SENSITIVE = 0, 1, 2


def mem(text: str, category: str = "a2p:interests", **more: Any) -> dict[str, Any]:
    return {"content": text, "category": category, **more}


DOC = {
    "items": [
        mem("H", "a2p:health.sleep"),
        mem("A"),
        mem("R", "a2p:relationships"),
        mem("B"),
        mem("X", sensitivity="restricted"),
    ],
    "secrets": {"pin": "1234"},
    "note": "plain",
}


def test_a_view_leaves_out_what_is_above_clearance():
    seen = view(DOC, RULES, STANDARD)
    assert seen.content == {"items": [mem("A"), mem("B")], "note": "plain"}
    assert view(DOC, RULES, RESTRICTED).content["items"] == [
        mem("H", "a2p:health.sleep"),
        mem("A"),
        mem("B"),
        mem("X", sensitivity="restricted"),
    ]
    assert view(DOC, RULES, SENSITIVE).content == DOC


def test_view_indexes_become_stored_indexes():
    seen = view(DOC, RULES, STANDARD)
    assert to_stored(("items", "1"), seen) == ("items", "3")  # B
    assert to_stored(("items", "0", "content"), seen) == ("items", "1", "content")
    assert to_stored(("items", "2"), seen) == ("items", "-")  # after the last seen
    assert to_stored(("items", "-"), seen) == ("items", "-")
    assert to_stored(("note",), seen) == ("note",)


def test_stored_paths_become_the_views_and_hidden_ones_none():
    seen = view(DOC, RULES, STANDARD)
    assert to_view(("items", "3", "content"), seen) == ("items", "1", "content")  # B
    assert to_view(("items", "5"), seen) == ("items", "2")  # past the stored end
    assert to_view(("items", "0"), seen) is None  # H
    assert to_view(("items", "2", "content"), seen) is None  # inside R
    assert to_view(("secrets", "pin"), seen) is None
    for stored in (("items", "1"), ("items", "3"), ("note",)):
        assert to_stored(to_view(stored, seen) or (), seen) == stored


AGENT = Caller("agent", frozenset({"t"}), frozenset({"p"}), frozenset({"write"}))


def test_errors_and_answers_name_the_callers_paths():
    written = parse_ops([{"op": "test", "path": "/content/items/1", "value": 1}])
    sent = parse_ops([{"op": "test", "path": "/content/items/3", "value": 1}])
    error = Unprocessable(
        "op 0 (test /content/items/3) cannot be applied: no",
        code="PATCH_TEST_FAILED",
        op_index=0,
        path="/content/items/3",
    )
    view_answers.show_error(error, written, sent)
    assert error.details["path"] == "/content/items/1" and "items/3" not in error.message
    body = {
        "document": {"content": DOC},
        "redirected_ops": [{"op_index": 0, "from_path": "/content/items/3", "to_path": "/x/-"}],
        "upserts": [{"op_index": 0, "result": "replaced", "path": "/content/items/3"}],
    }
    shown = view_answers.shown_body(body, AGENT, RULES, written)
    assert shown["redirected_ops"][0]["from_path"] == "/content/items/1"
    assert shown["upserts"][0]["path"] == "/content/items/1"
    assert shown["document"]["content"] == view(DOC, RULES, STANDARD).content


def test_violations_about_hidden_content_keep_neither_its_path_nor_its_values():
    found = [
        Violation("SCHEMA_VIOLATION", "'1234' is too short", path="/content/secrets/pin"),
        Violation("SCHEMA_VIOLATION", "[...H...] is too long", path="/content/items"),
        Violation("SCHEMA_VIOLATION", "5 is not a string", path="/content/items/3/content"),
        Violation("MAX_CHARS_EXCEEDED", "document is 99 chars; binding allows 50."),
    ]
    shown = view_answers.shown_violations(found, (DOC, DOC), AGENT, RULES)
    assert [(v.path, v.message) for v in shown] == [
        ("/content", "the document would not satisfy its schema here."),
        ("/content/items", "the document would not satisfy its schema here."),
        ("/content/items/1/content", "5 is not a string"),
        (None, "the document would exceed the binding's size limit."),
    ]


def test_removing_what_the_caller_saw_at_1_removes_that_item():
    seen = view(DOC, RULES, STANDARD)
    path = pointers.render(("content", *to_stored(("items", "1"), seen)))
    after = apply_ops({"content": DOC}, parse_ops([{"op": "remove", "path": path}]))["content"]
    assert [m["content"] for m in after["items"]] == ["H", "A", "R", "X"]
    assert write_violations(DOC, after, RULES, STANDARD) == []


def test_changing_hidden_content_or_adding_above_clearance_is_refused():
    removed_hidden = {**DOC, "items": DOC["items"][1:]}
    assert write_violations(DOC, removed_hidden, RULES, STANDARD)
    added = {**DOC, "items": [*DOC["items"], mem("new", "a2p:health")]}
    assert write_violations(DOC, added, RULES, STANDARD)
    assert write_violations(DOC, added, RULES, RESTRICTED) == []
    changed_secret = {**DOC, "secrets": {"pin": "0000"}}
    assert write_violations(DOC, changed_secret, RULES, RESTRICTED)


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    categories = st.sampled_from(["a2p:interests", "a2p:health", "a2p:relationships"])
    items = draw(st.lists(st.builds(mem, st.text("abc", max_size=3), categories), max_size=8))
    return {"items": items}


@given(documents(), st.integers(0, 2), st.data())
def test_an_op_on_the_view_is_the_same_op_on_the_stored_document(
    doc: dict[str, Any], clearance: int, data: st.DataObject
):
    """Applying the translated op to the stored document and viewing the result equals
    applying the op to the view; and it never trips the write check."""
    seen = view(doc, RULES, clearance)
    count = len(seen.content["items"])
    kind = data.draw(st.sampled_from(["add", "remove", "replace"]))
    if kind != "add" and count == 0:
        return
    index = data.draw(st.integers(0, count if kind == "add" else count - 1))
    op: dict[str, Any] = {"op": kind, "path": f"/content/items/{index}"}
    if kind != "remove":
        op["value"] = mem("new")
    stored_path = to_stored(("items", str(index)), seen)
    if kind == "add" and stored_path[-1] == "-" and index < count:
        return  # cannot happen: an index inside the view maps to a stored index
    stored_op = {**op, "path": pointers.render(("content", *stored_path))}
    expected = apply_ops({"content": seen.content}, parse_ops([op]))["content"]
    after = apply_ops({"content": doc}, parse_ops([stored_op]))["content"]
    assert view(after, RULES, clearance).content == expected
    assert write_violations(doc, after, RULES, clearance) == []


def test_a_violation_inside_an_ops_value_keeps_its_place_under_the_callers_path():
    written = parse_ops([{"op": "replace", "path": "/content/items/1", "value": {}}])
    sent = parse_ops([{"op": "replace", "path": "/content/items/3", "value": {}}])
    error = Unprocessable(
        "1 violation.",
        code="DENIED_PATH",
        violations=[{"code": "DENIED_PATH", "message": "denied", "op_index": 0,
                     "path": "/content/items/3/metadata/credentials"}],
    )  # fmt: skip
    view_answers.show_error(error, written, sent)
    assert error.details["violations"][0]["path"] == "/content/items/1/metadata/credentials"


def test_a_category_is_classified_whatever_its_case_or_surrounding_space():
    for category in ("a2p:health\n", " a2p:Health.sleep", "A2P:RELATIONSHIPS\t"):
        assert RULES.item_rank(mem("x", category)) > STANDARD, category
    assert RULES.item_rank(mem("x", sensitivity="sensitive\n")) == SENSITIVE
    for named in ("Sensitive", "RESTRICTED", "\uff52estricted"):  # case, fullwidth
        assert RULES.item_rank(mem("x", sensitivity=named)) > STANDARD, named
    for unreadable in ("sensitive\u200b", "secret", 3, ["sensitive"]):  # fails closed
        assert RULES.item_rank(mem("x", sensitivity=unreadable)) == SENSITIVE, unreadable
    assert RULES.item_rank(mem("x", sensitivity=None)) == RULES.item_rank(mem("x")) == STANDARD


def test_a_caller_that_sees_less_proposes_no_indexed_target():
    old = {"pending": []}
    new = {"pending": [{"candidate": "x", "target_path": "/items/1"},
                       {"candidate": "y", "target_path": "/items/-"}]}  # fmt: skip
    found = views.indexed_targets((old, new), ("pending",), AGENT, RULES)
    assert [(v.code, v.path) for v in found] == [
        ("PROPOSAL_TARGET_INDEXED", "/content/pending/0/target_path")
    ]
    admin = Caller("admin", frozenset({"t"}), frozenset({"p"}), frozenset({"admin"}))
    assert views.indexed_targets((old, new), ("pending",), admin, RULES) == []
