"""The ops a revert writes (memnet.domain.undo): applying a change's inverse to the
document after it gives the document before it, whatever the ops; restoring ops turn
one content into another."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.undo import inverse, restoring

BEFORE: dict[str, Any] = {
    "content": {
        "preferences": [{"text": "a"}, {"text": "b"}, {"text": "c"}],
        "facets": {"tone": "dry", "nested": {"x": [1, 2]}},
        "summary": "s",
    }
}

CASES = [
    [{"op": "add", "path": "/content/preferences/-", "value": {"text": "d"}}],
    [{"op": "add", "path": "/content/preferences/0", "value": {"text": "z"}}],
    [{"op": "remove", "path": "/content/preferences/1"}],
    [{"op": "replace", "path": "/content/facets/tone", "value": "warm"}],
    [{"op": "add", "path": "/content/facets/tone", "value": "over an existing member"}],
    [{"op": "add", "path": "/content/facets/new", "value": {"deep": [1]}}],
    [{"op": "move", "from": "/content/preferences/0", "path": "/content/preferences/2"}],
    [{"op": "move", "from": "/content/facets/tone", "path": "/content/summary"}],
    [{"op": "copy", "from": "/content/facets/nested", "path": "/content/facets/twin"}],
    [{"op": "test", "path": "/content/summary", "value": "s"}],
    [  # later ops change what earlier ones wrote: each inverse sees its own state
        {"op": "add", "path": "/content/preferences/-", "value": {"text": "d"}},
        {"op": "replace", "path": "/content/preferences/3/text", "value": "e"},
        {"op": "move", "from": "/content/preferences/3", "path": "/content/preferences/0"},
        {"op": "add", "path": "/content/preferences/0/more", "value": 1},
        {"op": "remove", "path": "/content/facets/nested/x/0"},
    ],
]


@pytest.mark.parametrize("ops", CASES)
def test_the_inverse_of_a_change_gives_back_the_document_before_it(ops: list[Any]):
    after = apply_ops(BEFORE, parse_ops(ops))
    assert apply_ops(after, parse_ops(inverse(ops, BEFORE))) == BEFORE


def test_an_append_is_undone_by_removing_the_index_it_landed_at():
    ops = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "d"}}]
    assert inverse(ops, BEFORE) == [{"op": "remove", "path": "/content/preferences/3"}]


_leaves = st.none() | st.booleans() | st.integers(0, 3) | st.sampled_from(["x", "y"])
_values = _leaves | st.lists(_leaves, max_size=3) | st.dictionaries(st.sampled_from("pq"), _leaves)
_contents = st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), _values, max_size=4)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(_contents, _contents)
def test_restoring_ops_turn_one_content_into_the_other(current: Any, wanted: Any):
    ops = restoring(current, wanted)
    assert apply_ops({"content": current}, parse_ops(ops)) == {"content": wanted}
    assert len(ops) <= len({*current, *wanted})
