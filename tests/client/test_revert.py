"""Revert and undo through the client against the real server (docs/api.md#revert)."""

from __future__ import annotations

import pytest
from memnet_client import Conflict, Forbidden, MemnetClient

DYNAMIC = ("user", "user_dynamic.json")
TEXT = "/content/preferences/0/text"


def test_revert_writes_a_version_back_and_undo_conflicts_name_the_later_change(
    memnet: MemnetClient, admin: MemnetClient
):
    first = memnet.patch_document(
        *DYNAMIC,
        [{"op": "add", "path": "/content/preferences/-", "value": {"text": "a"}}],
        etag=None,
    )
    assert first.document is not None
    first_change = first.document.change_id
    second = memnet.patch_document(
        *DYNAMIC, [{"op": "replace", "path": TEXT, "value": "b"}], etag=first.etag
    )
    with pytest.raises(Forbidden):
        memnet.revert(*DYNAMIC, etag=second.etag, to_change_id=first_change)
    back = admin.revert(*DYNAMIC, etag=second.etag, to_change_id=first_change, reason="typo")
    assert back.document is not None and back.document.content["preferences"] == [{"text": "a"}]
    assert admin.get_history(*DYNAMIC, limit=1).changes[0].raw["reverted_to"] == first_change
    assert second.document is not None
    with pytest.raises(Conflict) as refused:
        admin.revert(*DYNAMIC, etag=back.etag, undo_change_id=second.document.change_id)
    assert refused.value.code == "UNDO_CONFLICT"
    assert refused.value.details["conflict"]["change_id"] == back.document.change_id
