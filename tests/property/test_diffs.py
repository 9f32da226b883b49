"""``:diff`` (issue 27 item 2): the operations :func:`memnet.domain.diffs.content_ops`
computes between any two contents, sent as JSON and applied to the older version with
:mod:`memnet.domain.patching`, give the newer one, compared as serialised JSON (so
``1``, ``1.0``, ``true``, ``0.0`` and ``-0.0`` are five values, and the order of an
object's members is not a difference)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memnet.domain.diffs import content_ops
from memnet.domain.envelope import canonical
from memnet.domain.patching import apply_ops, parse_ops
from tests.property.strategies import json_values, texts

# Values Python's == confuses, and few keys, so the two sides share members and items
# (where a diff moves or keeps a value rather than adding it again).
CONFUSABLE = st.sampled_from([0, 1, -1, 0.0, -0.0, 1.0, True, False, None, "1", "", "true"])
KEYS = st.one_of(st.sampled_from(["a", "b", "", "~", "/", "~1", "0", "-"]), texts(max_size=3))
close = st.recursive(
    CONFUSABLE,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(KEYS, inner, max_size=5)),
    max_leaves=20,
)
contents = st.one_of(close, json_values(max_leaves=15))


def edited(value: Any, data: st.DataObject) -> Any:
    """``value`` with a few of its parts swapped, reordered, dropped or replaced."""
    if isinstance(value, list):
        items = [edited(item, data) for item in value]
        return data.draw(st.permutations(items)) if data.draw(st.booleans()) else items
    if isinstance(value, dict):
        kept = {k: edited(v, data) for k, v in value.items() if data.draw(st.booleans())}
        return {**kept, **data.draw(st.dictionaries(KEYS, close, max_size=2))}
    return data.draw(st.one_of(st.just(value), CONFUSABLE))


def turns_into(older: Any, newer: Any) -> None:
    ops = json.loads(json.dumps(content_ops({"content": older}, {"content": newer})))
    got = apply_ops({"content": json.loads(json.dumps(older))}, parse_ops(ops))
    assert canonical(got) == canonical({"content": newer}), ops


@given(contents, contents)
def test_the_ops_turn_any_content_into_any_other(older: Any, newer: Any) -> None:
    turns_into(older, newer)


@given(close, st.data())
def test_the_ops_turn_a_content_into_an_edit_of_it(older: Any, data: st.DataObject) -> None:
    newer = edited(older, data)
    turns_into(older, newer)
    turns_into(newer, older)


def test_no_change_is_no_op_and_types_differ_where_python_says_equal() -> None:
    assert content_ops({"content": {"a": [1, {"b": 2}]}}, {"content": {"a": [1, {"b": 2}]}}) == []
    for one, other in ((1, True), (1, 1.0), (0, False), (0.0, -0.0), (0, 0.0)):
        assert content_ops({"content": {"a": one}}, {"content": {"a": other}}) != []
        turns_into([one, other], [other, one])
