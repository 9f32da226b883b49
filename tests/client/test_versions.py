"""Versions and diffs through the client against the real server (issue 27 items 1 and
2): ``get_version`` by change id, by instant (string or aware datetime), ``diff`` to the
latest and between two versions, and the errors as their exceptions."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from memnet_client import BadRequest, Diff, MemnetClient, NotFound, Version

from memnet.domain.audit_records import change_time
from memnet.domain.patching import apply_ops, parse_ops
from tests.client.conftest import append_preference

DYNAMIC = ("user", "user_dynamic.json")


def test_a_version_reads_by_change_id_and_by_instant(memnet: MemnetClient):
    first = memnet.update(*DYNAMIC, append_preference("Tea."))
    latest = memnet.update(*DYNAMIC, append_preference("Green tea."))
    assert first.document is not None and first.document.change_id is not None
    version = memnet.get_version(*DYNAMIC, first.document.change_id)
    assert isinstance(version, Version)
    assert version.change_id == first.document.change_id
    assert version.document.content == first.document.content
    assert version.latest_etag == version.document.etag == latest.etag
    minted = change_time(first.document.change_id)
    assert memnet.get_version(*DYNAMIC, minted).change_id == first.document.change_id
    text = minted.isoformat().replace("+00:00", "Z")
    assert memnet.get_version(*DYNAMIC, text).change_id == first.document.change_id
    with pytest.raises(NotFound) as before:
        memnet.get_version(*DYNAMIC, minted - timedelta(days=1))
    assert before.value.code == "DOCUMENT_NOT_FOUND"
    with pytest.raises(BadRequest) as bad:
        memnet.get_version(*DYNAMIC, "yesterday")
    assert bad.value.code == "INVALID_QUERY"
    with pytest.raises(ValueError):
        memnet.get_version(*DYNAMIC, datetime(2026, 1, 1))  # naive: names no instant


def test_a_diff_turns_one_version_into_another(memnet: MemnetClient):
    first = memnet.update(*DYNAMIC, append_preference("Tea."))
    second = memnet.update(*DYNAMIC, append_preference("Green tea."))
    assert first.document and second.document and first.document.change_id
    found = memnet.diff(*DYNAMIC, first.document.change_id)
    assert isinstance(found, Diff)
    assert (found.from_id, found.to_id) == (first.document.change_id, second.document.change_id)
    before = {"content": first.document.content}
    assert apply_ops(before, parse_ops(list(found.ops)))["content"] == second.document.content
    back = memnet.diff(*DYNAMIC, str(second.document.change_id), first.document.change_id)
    assert back.to_id == first.document.change_id and back.ops
    with pytest.raises(NotFound) as missing:
        memnet.diff(*DYNAMIC, "chg_" + "0" * 28)
    assert missing.value.code == "CHANGE_NOT_FOUND"
