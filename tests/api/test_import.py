"""``memnet import``: an export archive into another deployment or backend (issue 27,
item 6). The round trip runs on the real exporter's archives; the other tests write
theirs with tests/archives.py, which can make the malformed and partial ones they need."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.audit_records import change_time
from memnet.domain.layout import governance_prefix, import_ledger_name, user_prefix
from memnet.ports import Condition
from memnet.services.transfer.importer import Mapping
from tests import archives
from tests.api.importing import (
    AS_NAMED,
    archive_of,
    build,
    documents,
    exported,
    folds,
    receipts,
    replays,
    run,
    searches,
    seeded,
    snapshots,
)
from tests.api.test_documents import PREF, create, patch
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, doc_url


@pytest.fixture
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield from seeded(request, tmp_path / "source")


# -- the round trip ------------------------------------------------------------------------


def test_round_trip_embedded_azurite_embedded_keeps_documents_folds_and_searches(
    source, request, tmp_path
):
    azure = build(request, "azurite", tmp_path / "azure")
    back = build(request, "local", tmp_path / "back")
    first = run(azure, exported(source, tmp_path / "a"))  # the real exporter's archives
    second = run(back, exported(azure, tmp_path / "b"))
    assert first.status == second.status == "imported" and not first.state.conflicts
    assert documents(source) == documents(azure) == documents(back)
    assert folds(source) == folds(azure) == folds(back)
    assert folds(back) == documents(back)  # each document is the fold of its chain
    assert searches(source) == searches(azure) == searches(back)
    assert len(searches(back)["pizza"]) == 3
    assert replays(source) == replays(back) and len(replays(back)) == 1
    assert receipts(source) == receipts(back) and len(receipts(back)) == 1
    assert snapshots(source) == snapshots(azure) == snapshots(back) and len(snapshots(back)) == 1
    assert back.holds.policy("t1").of("u1") == source.holds.policy("t1").of("u1")
    ref = next(archives.document_refs(back, "t1", "u1"))
    assert back.blobs.read(ref.blob_name).etag != source.blobs.read(ref.blob_name).etag


def test_the_import_is_logged_and_its_ledger_says_done(source, request, tmp_path):
    target = build(request, "local", tmp_path / "target")
    report = run(target, archive_of(source, tmp_path / "a"))
    ledger = json.loads(target.blobs.read(import_ledger_name("t1", "u1")).data)
    assert ledger["status"] == "done" and ledger["import_id"] == report.state.import_id
    assert ledger["written"]["events"] == 12 and ledger["written"]["documents"] == 2
    log = list(archives.stored(target, governance_prefix("t1") + "log/"))
    actions = [e["action"] for e in log if e.get("import_id") == report.state.import_id]
    assert sorted(actions) == ["import_completed", "import_started"]


def test_a_mapped_import_rewrites_tenant_and_user(source, request, tmp_path):
    target = build(request, "local", tmp_path / "target")
    mapping = Mapping(tenant=("t1", "t9"), user=("u1", "u7"))
    run(target, archive_of(source, tmp_path / "a"), mapping)
    assert documents(target, "t9", "u7") == documents(source)
    assert folds(target, "t9", "u7") == folds(source)
    assert searches(target, "t9", "u7") == searches(source)
    assert snapshots(target, "t9", "u7") == snapshots(source)
    assert not list(target.blobs.list_names(user_prefix("t1", "u1")))


# -- resumable and idempotent -------------------------------------------------------------


class Crashing:
    """A blob store that fails its ``n``-th write of a name containing ``part``: the
    process dies there, whatever was written before stays."""

    def __init__(self, inner: Any, part: str, n: int) -> None:
        self._inner, self._part, self._left = inner, part, n

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        if self._part in name:
            self._left -= 1
            if self._left == 0:
                raise SystemExit("crashed")
        return str(self._inner.write(name, data, condition))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.mark.parametrize(
    ("where", "n"),
    [
        ("/audit/", 3),
        ("/documents/", 2),
        ("/events/", 7),
        ("/replays/", 1),
        ("/snapshots/", 1),
        ("/imports/", 3),
    ],
)
def test_a_crashed_import_resumes_and_ends_as_a_clean_one(source, request, tmp_path, where, n):
    archive = archive_of(source, tmp_path / "a")
    clean = build(request, "local", tmp_path / "clean")
    run(clean, archive)
    target = build(request, "local", tmp_path / "target")
    crashing = bootstrap.build(target.settings, blobs=Crashing(target.blobs, where, n))
    with pytest.raises(SystemExit):
        run(crashing, archive)
    report = run(target, archive)
    assert report.status == "imported"
    assert documents(target) == documents(clean) and folds(target) == folds(clean)
    assert searches(target) == searches(clean) and replays(target) == replays(clean)
    assert snapshots(target) == snapshots(clean)


def test_a_second_run_of_a_finished_import_writes_nothing_and_says_so(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    target = build(request, "local", tmp_path / "target")
    run(target, archive)
    before = {n: target.blobs.read(n).etag for n in target.blobs.list_names("")}
    again = run(target, archive)
    assert again.status == "already_imported"
    assert {n: target.blobs.read(n).etag for n in target.blobs.list_names("")} == before


# -- refused, nothing written ------------------------------------------------------------------


def refused(target: Services, archive: Path, code: str, mapping: Mapping = AS_NAMED) -> None:
    before = list(target.blobs.list_names(""))
    with pytest.raises(Exception) as raised:
        run(target, archive, mapping)
    assert getattr(raised.value, "code", None) == code, raised.value
    assert list(target.blobs.list_names("")) == before


def test_a_tampered_part_is_refused(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    part = archive / "events-000001.jsonl"
    part.write_bytes(part.read_bytes().replace(b"pizza", b"pasta"))
    refused(build(request, "local", tmp_path / "t"), archive, "ARCHIVE_TAMPERED")


def test_a_part_cut_short_or_a_record_dropped_is_refused(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    part = archive / "events-000002.jsonl"
    part.write_bytes(b"".join(part.read_bytes().splitlines(keepends=True)[1:]))
    refused(build(request, "local", tmp_path / "t"), archive, "ARCHIVE_TAMPERED")


def test_a_resealed_record_of_another_user_is_refused(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    part = archive / "events-000001.jsonl"
    part.write_bytes(part.read_bytes().replace(b'"user_id":"u1"', b'"user_id":"u2"', 1))
    archives.reseal(archive, part.name)
    refused(build(request, "local", tmp_path / "t"), archive, "ARCHIVE_INVALID")


def test_a_resealed_path_outside_the_user_is_refused(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    part = archive / "documents-000001.jsonl"
    part.write_bytes(
        part.read_bytes().replace(b'"path":"user_dynamic.json"', b'"path":"../../x.json"')
    )
    archives.reseal(archive, part.name)
    refused(build(request, "local", tmp_path / "t"), archive, "ARCHIVE_INVALID")


@pytest.mark.parametrize(
    ("manifest", "code"),
    [
        ({"complete": False}, "ARCHIVE_INCOMPLETE"),
        ({"format": "memnet-export/9"}, "ARCHIVE_FORMAT_UNKNOWN"),
    ],
)
def test_an_incomplete_or_unknown_archive_is_refused(source, request, tmp_path, manifest, code):
    archive = archives.write_archive(source, "t1", "u1", tmp_path / "a", **manifest)
    refused(build(request, "local", tmp_path / "t"), archive, code)


def test_an_archive_of_another_tenant_than_the_mapping_names_is_refused(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    target = build(request, "local", tmp_path / "t")
    refused(target, archive, "IMPORT_NOT_MAPPED", Mapping(tenant=("t2", "t9")))
    refused(target, archive, "IMPORT_NOT_MAPPED", Mapping(user=("u2", "u1")))


def test_a_user_that_already_holds_memory_is_refused(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    target = build(request, "local", tmp_path / "t")
    bootstrap.install(target)
    assert (
        create(DirectClient(AGENT_KEY), doc_url("projects/other.json"), [], key="o").status == 201
    )
    refused(target, archive, "USER_NOT_EMPTY")


# -- racing live writes ------------------------------------------------------------------------


class LiveWriteFirst:
    """A blob store on which a live write (``write``, through the API) lands just before
    the import's first write of a name containing ``part``."""

    def __init__(self, inner: Any, part: str, live: Any) -> None:
        self._inner, self._part, self._live = inner, part, live

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        if self._live is not None and self._part in name:
            live, self._live = self._live, None
            live()
        return str(self._inner.write(name, data, condition))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def test_a_document_a_live_write_created_first_is_kept_and_reported(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    target = build(request, "local", tmp_path / "t")
    bootstrap.install(target)
    agent = DirectClient(AGENT_KEY)
    live_ops = [{"op": "add", "path": PREF, "value": {"text": "live"}}]
    racing = LiveWriteFirst(
        target.blobs, "/documents/user/", lambda: create(agent, ops=live_ops, key="live")
    )
    report = run(bootstrap.build(target.settings, blobs=racing), archive)
    assert report.state.conflicts == (
        {"kind": "documents", "namespace": "user", "path": "user_dynamic.json"},
    )
    kept = documents(target)["user/user_dynamic.json"]
    assert kept["content"]["preferences"][-1]["text"] == "live"
    assert folds(target)["user/user_dynamic.json"] == kept  # its own chain, whole
    assert documents(target)["projects/apollo.json"] == documents(source)["projects/apollo.json"]
    imported = {r["change_id"] for r in archives.audit(source, "t1", "u1")}
    on_chains = {r["change_id"] for r in archives.audit(target, "t1", "u1")}
    audit = user_prefix("t1", "u1") + "audit/"
    stored = {n[len(audit) : -len(".json")] for n in target.blobs.list_names(audit)}
    assert stored & imported <= on_chains  # the import's records of the lost document: gone


def test_a_live_write_to_an_imported_document_is_a_later_change_not_a_conflict(
    source, request, tmp_path
):
    archive = archive_of(source, tmp_path / "a")
    target = build(request, "local", tmp_path / "t")
    bootstrap.install(target)
    agent = DirectClient(AGENT_KEY)

    def live() -> None:
        current = agent.request("GET", doc_url())
        ops = [{"op": "add", "path": PREF, "value": {"text": "after"}}]
        assert patch(agent, current.headers["etag"], ops, "after").status == 200

    # The import dies as it saves the ledger after the documents part (its third save:
    # created, audit part done, documents part done): the documents are written, the
    # ledger does not say so, and the rerun writes that part again.
    crashing = bootstrap.build(target.settings, blobs=Crashing(target.blobs, "/imports/", 3))
    with pytest.raises(SystemExit):
        run(crashing, archive)
    ledger = json.loads(target.blobs.read(import_ledger_name("t1", "u1")).data)
    assert ledger["parts_done"] == ["audit-000001.jsonl"]
    assert documents(target) == documents(source)
    live()
    report = run(target, archive)
    assert report.status == "imported" and not report.state.conflicts
    assert (
        documents(target)["user/user_dynamic.json"]["content"]["preferences"][-1]["text"] == "after"
    )
    assert searches(target) == searches(source)


def test_a_part_changed_after_verification_stops_at_the_changed_record(source, request, tmp_path):
    archive = archive_of(source, tmp_path / "a")
    target = build(request, "local", tmp_path / "t")
    part = archive / "events-000001.jsonl"
    swapped = part.read_bytes().replace(b'"user_id":"u1"', b'"user_id":"u2"')

    def swap(done: int, name: str, written: int) -> None:  # while the audit part is written
        part.write_bytes(swapped)

    with pytest.raises(Exception) as raised:
        bootstrap.importer(target).run(archive, AS_NAMED, "operator", swap)
    assert getattr(raised.value, "code", None) == "ARCHIVE_INVALID"
    assert not list(target.blobs.list_names(user_prefix("t1", "u2")))
    assert not list(target.blobs.list_names(user_prefix("t1", "u1") + "events/"))


def test_another_archives_unfinished_import_is_busy(source, request, tmp_path):
    first = archive_of(source, tmp_path / "a")
    other = archives.write_archive(source, "t1", "u1", tmp_path / "b", export_id="exp_other")
    target = build(request, "local", tmp_path / "t")
    with pytest.raises(SystemExit):
        run(bootstrap.build(target.settings, blobs=Crashing(target.blobs, "/events/", 1)), first)
    with pytest.raises(Exception) as raised:
        run(target, other)
    assert getattr(raised.value, "code", None) == "IMPORT_BUSY"
    assert run(target, first).status == "imported"


def test_a_history_the_sources_retention_cut_short_ends_at_the_targets_horizon(
    source, request, tmp_path
):
    ref = next(r for r in archives.document_refs(source, "t1", "u1") if r.path.startswith("user"))
    head = json.loads(source.blobs.read(ref.blob_name).data)["change_id"]
    oldest = list(source.audit.chain(ref, head))[-2:]  # retention removed the two oldest
    source.audit.raise_horizon("t1", "u1", change_time(oldest[0].change_id))
    for record in oldest:
        source.blobs.delete(ref.audit_name(record.change_id))
    target = build(request, "local", tmp_path / "t")
    run(target, archive_of(source, tmp_path / "a"))
    chains = list(archives.audit(target, "t1", "u1"))  # a broken chain would raise
    assert chains == list(archives.audit(source, "t1", "u1"))  # ends where the source's did
    assert target.audit.horizon("t1", "u1") == change_time(oldest[0].change_id)


def test_an_imported_hold_joins_the_hold_the_target_user_has(source, request, tmp_path):
    target = build(request, "local", tmp_path / "t")
    held = target.holds.set("t1", "u1", {"reason": "audit", "kinds": ["snapshots"]}, "counsel")
    run(target, archive_of(source, tmp_path / "a"))
    now = target.holds.policy("t1").of("u1")
    assert now is not None and (now.hold_id, now.reason) == (held.hold_id, "audit")
    assert now.kinds == ("snapshots", "events")
