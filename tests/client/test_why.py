"""``why`` through the client against the real server: the changes that produced a
value, typed, and ``NotFound`` for a path with nothing there."""

from __future__ import annotations

import pytest
from memnet_client import BadRequest, MemnetClient, NotFound

DYNAMIC = ("user", "user_dynamic.json")


def test_why_names_the_change_that_added_an_item_after_it_shifted(memnet: MemnetClient):
    added = {"op": "add", "path": "/content/preferences/-", "value": {"text": "Metric units"}}
    first = memnet.patch_document(*DYNAMIC, [added], etag=None)
    before = {"op": "add", "path": "/content/preferences/0", "value": {"text": "Dark mode"}}
    evidence = {"conversation_id": "c1", "message_ids": ["m2"]}
    memnet.patch_document(*DYNAMIC, [before], etag=first.etag, evidence=evidence, confidence=0.9)
    found = memnet.why(*DYNAMIC, "/preferences/1")
    assert found.value == {"text": "Metric units"} and not found.truncated
    (change,) = found.changes
    assert first.document is not None and change.change_id == first.document.change_id
    assert (change.role, change.path, change.actor) == ("origin", "/preferences/0", "dev-agent")
    assert change.ops[0]["path"] == "/content/preferences/-"
    shifted = memnet.why(*DYNAMIC, "/preferences/0").changes[0]
    assert (shifted.evidence, shifted.confidence, shifted.origin) == (evidence, 0.9, None)
    then = memnet.why(*DYNAMIC, "/preferences/0", as_of=change.change_id)
    assert then.value == {"text": "Metric units"} and then.more_path is None
    with pytest.raises(NotFound) as missing:
        memnet.why(*DYNAMIC, "/preferences/7")
    assert missing.value.code == "PATH_NOT_FOUND"
    with pytest.raises(BadRequest):
        memnet.why(*DYNAMIC, "preferences")


def test_context_with_provenance_through_the_client(memnet: MemnetClient):
    added = {"op": "add", "path": "/content/preferences/-", "value": {"text": "Metric units"}}
    first = memnet.patch_document(*DYNAMIC, [added], etag=None)
    assert memnet.assemble_context().provenance == ()
    (dynamic,) = [
        p
        for p in memnet.assemble_context(provenance=True).provenance
        if p["path"] == "user_dynamic.json"
    ]
    assert first.document is not None
    assert dynamic["items"]["/preferences/0"]["change_id"] == first.document.change_id
