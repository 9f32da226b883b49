"""Retraction of one conversation's evidence (memnet.domain.retraction): generic over any
content shape, segment-exact matching, and ops that apply cleanly in order."""

from __future__ import annotations

from typing import Any

from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.retraction import points_at, retract

C1 = {"snapshot_uri": "blob://tenants/t1/users/u1/snapshots/conv-1/s1.json", "message_ids": ["m"]}
C2 = {"snapshot_uri": "blob://tenants/t1/users/u1/snapshots/conv-2/s1.json"}
MATCH = points_at("t1", "u1", "conv-1")


def applied(content: Any) -> tuple[Any, Any]:
    found = retract(content, MATCH)
    after = apply_ops({"content": content}, parse_ops(found.ops))["content"]
    return found, after


def test_an_item_whose_only_evidence_is_the_conversation_is_removed():
    content = {"facts": [{"fact": "a", "evidence": C1}, {"fact": "b", "evidence": C2}]}
    found, after = applied(content)
    assert after == {"facts": [{"fact": "b", "evidence": C2}]}
    assert found.removed == ["/content/facts/0"] and found.kept == []


def test_an_item_with_other_evidence_keeps_it_without_the_pointer():
    content = {"prefs": [{"p": "x", "evidence": [C1, C2]}, {"p": "y", "evidence": [C1]}]}
    found, after = applied(content)
    assert after == {"prefs": [{"p": "x", "evidence": [C2]}]}
    assert found.kept == ["/content/prefs/0"] and found.removed == ["/content/prefs/1"]


def test_the_nearest_array_element_holding_the_item_goes():
    content = {"projects": [{"name": "p", "meta": {"source": {"evidence": C1}}}, {"name": "q"}]}
    found, after = applied(content)
    assert after == {"projects": [{"name": "q"}]}
    assert found.removed == ["/content/projects/0"]


def test_an_item_in_no_array_loses_its_member():
    content = {"profile": {"city": {"value": "Lisbon", "evidence": {"conversation_id": "conv-1"}}}}
    found, after = applied(content)
    assert after == {"profile": {}}
    assert found.removed == ["/content/profile/city"]


def test_many_removals_in_one_array_apply_in_a_valid_order():
    content = {"xs": [{"evidence": C1}, {"evidence": C2}, {"evidence": C1}, {"evidence": [C2, C1]}]}
    found, after = applied(content)
    assert after == {"xs": [{"evidence": C2}, {"evidence": [C2]}]}
    assert found.removed == ["/content/xs/0", "/content/xs/2"]


def test_other_conversations_users_and_lookalike_ids_are_untouched():
    other = [
        {"snapshot_uri": "blob://tenants/t1/users/u1/snapshots/conv-10/s1.json"},
        {"snapshot_uri": "blob://tenants/t1/users/u2/snapshots/conv-1/s1.json"},
        {"snapshot_uri": "https://tenants/t1/users/u1/snapshots/conv-1/s1.json"},
        {"conversation_id": "conv-11"},
        {"message_ids": ["m1"]},
    ]
    content = {"xs": [{"evidence": e} for e in other], "evidence_free": "text"}
    found = retract(content, MATCH)
    assert found.ops == [] and found.removed == [] and found.kept == []


def test_keys_are_escaped_as_json_pointers():
    content = {"a/b": {"c~d": [{"evidence": C1}]}}
    found, after = applied(content)
    assert found.removed == ["/content/a~1b/c~0d/0"]
    assert after == {"a/b": {"c~d": []}}


def test_a_removed_item_takes_its_kept_children_with_it():
    content = {"xs": [{"evidence": C1, "sub": [{"evidence": [C1, C2]}]}]}
    found, after = applied(content)
    assert after == {"xs": []} and found.kept == []
