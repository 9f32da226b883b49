"""Governance holds whatever the input: denylisted fields in any spelling, hostile ops
and pointers, what a write-only caller gets back, and documents grown deep by chained
ops. Through the real functions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.property.harness import PROJECT, USER_DYNAMIC, Harness, Target
from tests.property.strategies import (
    DEEP_HOMES,
    budget,
    escape,
    nest,
    patch_extras,
    patches,
    preference,
    spellings,
)
from tests.property.test_bodies import prepared

CANARY = "canary-only-readers-may-see-this"


def denylisted_writes(name: str) -> st.SearchStrategy[tuple[str, str, dict[str, Any]]]:
    """(caller, method, body) that put the member ``name`` into the project's facets,
    by each route a value can take: an add, a value holding it, a copy, a move, a PUT."""
    pointer = f"/content/facets/{escape(name)}"
    return st.sampled_from(
        [
            ("agent", "PATCH", {"ops": [{"op": "add", "path": pointer, "value": "hunter2"}]}),
            ("agent", "PATCH", {"ops": [{"op": "add", "path": pointer, "value": ["a", "b"]}]}),
            (
                "agent",
                "PATCH",
                {"ops": [{"op": "replace", "path": "/content/facets", "value": {name: "x"}}]},
            ),
            (
                "agent",
                "PATCH",
                {"ops": [{"op": "copy", "from": "/content/facets/stack", "path": pointer}]},
            ),
            (
                "agent",
                "PATCH",
                {"ops": [{"op": "move", "from": "/content/facets/stack", "path": pointer}]},
            ),
            (
                "admin",
                "PUT",
                {"content": {"summary": "", "facets": {name: "x"}, "recent_notes": []}},
            ),
        ]
    )


@given(data=st.data(), denied=st.sampled_from(["secrets", "credentials"]))
def test_a_denylisted_field_is_refused_in_any_spelling(
    harness: Harness, data: st.DataObject, denied: str
) -> None:
    name = data.draw(st.one_of(st.just(denied), spellings(denied)), label="name")
    target = harness.fresh(PROJECT)
    seed = {"ops": [{"op": "add", "path": "/content/facets/stack", "value": "python"}]}
    created = harness.call(
        harness.agent, "PATCH", target.url, seed, {"If-None-Match": "*", "Idempotency-Key": "s"}
    )
    assert created.status == 201, created.data
    caller, method, body = data.draw(denylisted_writes(name), label="write")
    before = harness.snapshot()
    reply = harness.call(
        harness.admin if caller == "admin" else harness.agent,
        method,
        target.url,
        body,
        {"If-Match": created.data["etag"], "Idempotency-Key": "w"},
    )
    assert 400 <= reply.status < 500, f"{name!r} (reads as {denied!r}) was stored"
    harness.assert_unchanged(before, reply)


@pytest.mark.slow
@given(data=st.data(), binding=st.sampled_from([USER_DYNAMIC, PROJECT]))
def test_any_patch_is_answered_and_an_accepted_one_folds(
    harness: Harness, data: st.DataObject, binding: Target
) -> None:
    """One hostile patch (every op kind, good and bad pointers, odd values and members)
    against an existing document."""
    target, etag = prepared(harness, binding)
    found = harness.stored(target)
    assert found is not None
    ops = data.draw(patches(target, found[1]["content"]), label="ops")
    body = {"ops": ops, **data.draw(patch_extras(), label="extras")}
    before = harness.snapshot()
    reply = harness.call(
        harness.agent, "PATCH", target.url, body, {"If-Match": etag, "Idempotency-Key": "p"}
    )
    if reply.status < 300:
        harness.assert_committed(target, reply)
    else:
        harness.assert_unchanged(before, reply)


@given(values=st.lists(preference, min_size=1, max_size=3), extras=patch_extras())
def test_a_write_only_caller_never_gets_the_document_back(
    harness: Harness, values: list[Any], extras: dict[str, Any]
) -> None:
    target = harness.fresh(USER_DYNAMIC)
    seed = {"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": CANARY}}]}
    created = harness.call(
        harness.agent, "PATCH", target.url, seed, {"If-None-Match": "*", "Idempotency-Key": "s"}
    )
    assert created.status == 201, created.data
    ops = [{"op": "add", "path": "/content/preferences/-", "value": v} for v in values]
    before = harness.snapshot()
    reply = harness.call(
        harness.writer,
        "PATCH",
        target.url,
        {"ops": ops, **extras},
        {"If-Match": created.data["etag"], "Idempotency-Key": "w"},
    )
    assert CANARY.encode() not in reply.body, "a write-only caller read another's content"
    if reply.status < 300:
        harness.assert_committed(target, reply, reader=False)
    else:
        harness.assert_unchanged(before, reply)


@settings(max_examples=budget(0.5))
@given(
    binding=st.sampled_from([USER_DYNAMIC, PROJECT]),
    sizes=st.lists(st.sampled_from([10, 30, 55]), min_size=1, max_size=12),
)
def test_chained_ops_never_build_a_document_the_api_cannot_take_back(
    harness: Harness, binding: Target, sizes: list[int]
) -> None:
    """Each op nests a value inside the one the previous op added, each body within the
    API's nesting limit. Whatever the service accepts, it can read, patch again, and
    take back whole from an admin."""
    target, etag = prepared(harness, binding)
    section, member = DEEP_HOMES[binding.binding_id]
    item: dict[str, Any] = {member: nest(sizes[0])}
    if member == "candidate":
        item.update(target_path="/durable_facts/-", proposed_at="2026-01-01T00:00:00Z")
    else:
        item["note"] = "deep"
    ops: list[dict[str, Any]] = [{"op": "add", "path": f"/content/{section}/0", "value": item}]
    depth = sizes[0]
    for size in sizes[1:]:
        pointer = f"/content/{section}/0/{member}" + "/a" * depth
        ops.append({"op": "replace", "path": pointer, "value": nest(size)})
        depth += size
    reply = harness.call(
        harness.agent, "PATCH", target.url, {"ops": ops}, {"If-Match": etag, "Idempotency-Key": "d"}
    )
    if reply.status >= 300:
        return  # refused: fine, as long as it was a 4xx (call() checks that)
    harness.assert_committed(target, reply)
    another = item if section == "pending_confirmations" else {"note": "next"}
    follow = [{"op": "add", "path": f"/content/{section}/-", "value": another}]
    again = harness.call(
        harness.agent,
        "PATCH",
        target.url,
        {"ops": follow},
        {"If-Match": reply.data["etag"], "Idempotency-Key": "d2"},
    )
    assert again.status == 200, f"the next patch of the deep document: {again.data}"
    got = harness.call(harness.admin, "GET", target.url)
    back = harness.call(
        harness.admin,
        "PUT",
        target.url,
        {"content": got.data["document"]["content"]},
        {"If-Match": got.data["etag"], "Idempotency-Key": "d3"},
    )
    assert back.status == 200, f"an admin cannot put back what it read: {back.data}"
    harness.assert_committed(target, back)
