"""The attribution of a value (memnet.domain.attribution), case by case: what each kind
of op means for the value, where the walk ends, and that a version is read only when a
container's length cannot be carried back. The property test (tests/property/
test_attribution.py) covers random sequences."""

from __future__ import annotations

from typing import Any

from memnet.domain.attribution import attribute, canonical_path
from memnet.domain.audit_records import AuditRecord, fold
from memnet.domain.envelope import Json
from tests.property.test_attribution import record

BASE = {"doc_id": "d", "content": {"facts": [{"id": 0}], "profile": {"name": "Ada"}}}


def history(*changes: list[Json], base: Json = BASE) -> list[AuditRecord]:
    return [record(0, [], base), *(record(n, ops) for n, ops in enumerate(changes, 1))]


def roles(records: list[AuditRecord], *path: str, reads: list[int] | None = None) -> Any:
    def before(r: AuditRecord) -> Json | None:
        at = records.index(r)
        if reads is not None:
            reads.append(at)
        return fold(records[:at])

    document = fold(records)
    assert document is not None
    found = attribute(document, ("content", *path), reversed(records), before)
    return [(int(t.record.change_id[4:16], 16) - 1, t.role, t.ops) for t in found.touches], (
        found.found,
        found.walked,
    )


def test_a_value_in_the_created_content_is_the_creates_without_an_op():
    records = history([{"op": "add", "path": "/content/facts/0", "value": {"id": 1}}])
    assert roles(records, "facts", "1") == ([(0, "origin", ())], (True, 2))
    assert roles(records, "facts", "0") == ([(1, "origin", (0,))], (True, 1))


def test_an_object_member_added_or_replaced_above_it_is_the_origin():
    records = history(
        [{"op": "add", "path": "/content/profile/city", "value": "Lisbon"}],
        [{"op": "replace", "path": "/content/profile", "value": {"name": "Ada", "city": "Porto"}}],
        [{"op": "add", "path": "/content/profile/zip", "value": "4000"}],
    )
    assert roles(records, "profile", "city") == ([(2, "origin", (0,))], (True, 2))
    assert roles(records, "profile") == ([(3, "modified", (0,)), (2, "origin", (0,))], (True, 2))


def test_a_member_named_dash_is_an_objects_member_not_an_append():
    records = history(
        [{"op": "add", "path": "/content/profile/-", "value": {"id": 1}}],
        [{"op": "copy", "from": "/content/facts/0", "path": "/content/profile/-"}],
    )
    assert roles(records, "profile", "-") == ([(2, "copied", (0,)), (0, "origin", ())], (True, 3))


def test_an_upsert_writes_the_item_again_and_the_walk_goes_on_to_its_add():
    records = history([{"op": "replace", "path": "/content/facts/0", "value": {"id": 0, "n": 2}}])
    records[1] = AuditRecord.from_json(
        {
            **records[1].as_json(),
            "upserts": [{"op_index": 0, "result": "replaced", "path": "/content/facts/0"}],
        }
    )
    assert roles(records, "facts", "0") == ([(1, "upserted", (0,)), (0, "origin", ())], (True, 2))


def test_a_move_between_sections_reads_a_version_only_for_an_append_it_cannot_place():
    records = history(
        [{"op": "add", "path": "/content/facts/-", "value": {"id": 1}}],
        [{"op": "add", "path": "/content/profile/list", "value": []}],
        [{"op": "move", "from": "/content/facts/1", "path": "/content/profile/list/-"}],
    )
    reads: list[int] = []
    found = roles(records, "profile", "list", "0", reads=reads)
    assert found == ([(3, "moved", (0,)), (1, "origin", (0,))], (True, 3))
    assert reads == [1]  # the length of facts before change 1: above the move's source
    reads.clear()
    plain = history([{"op": "add", "path": "/content/facts/-", "value": {"id": 1}}] * 3)
    assert roles(plain, "facts", "2", reads=reads)[0] == [(1, "origin", (1,))]
    assert reads == []  # carried back from the document


def test_records_that_end_before_the_origin_leave_it_unfound():
    records = history([{"op": "add", "path": "/content/facts/0", "value": {"id": 1}}])
    document = fold(records)
    assert document is not None
    found = attribute(document, ("content", "facts", "1"), [records[1]], lambda r: None)
    assert (found.touches, found.found, found.walked) == ((), False, 1)


def test_a_version_that_cannot_be_read_ends_the_walk_unfound():
    records = history(
        [{"op": "add", "path": "/content/profile/list", "value": [{"id": 1}]}],
        [{"op": "add", "path": "/content/profile/list/-", "value": {"id": 2}}],
        [{"op": "move", "from": "/content/profile/list/0", "path": "/content/facts/0"}],
    )
    document = fold(records)
    assert document is not None
    found = attribute(document, ("content", "facts", "0"), reversed(records), lambda r: None)
    assert [t.role for t in found.touches] == ["moved"] and not found.found
    assert found.walked == 2  # the append needed the list's length, which was not readable


def test_canonical_paths_read_indexes_as_the_fold_writes_them():
    content = {"facts": [{"id": 0}, {"id": 1}], "0": "zero"}
    assert canonical_path(content, ("facts", "01")) == ("facts", "1")
    assert canonical_path(content, ("0",)) == ("0",)
    assert canonical_path(content, ("facts", "2")) is None
    assert canonical_path(content, ("facts", "-")) is None
    assert canonical_path(content, ("facts", "0", "id", "x")) is None


def test_records_that_do_not_fold_to_the_document_claim_no_origin():
    records = history([{"op": "add", "path": "/content/facts/-", "value": {"id": 1}}])
    document = fold(records)
    assert document is not None
    document["content"]["renamed"] = document["content"].pop("facts")  # not what they made
    found = attribute(document, ("content", "renamed", "0"), reversed(records), lambda r: None)
    assert (found.touches, found.found, found.walked) == ((), False, 2)
