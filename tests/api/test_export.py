"""Exporting a user's memory (issue 27, item 5; docs/export.md) through the API, on
local files and on Azurite, through both transports: the job, its status and files, an
archive that verifies (and a tampered part that does not), what a caller without the
roles or clearance gets, hostile ids, expiry, and a forget deleting the exports."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.api.workers import handle_export_job
from memnet.bootstrap import Services
from memnet.domain.export_archive import verify
from memnet.domain.layout import export_prefix
from memnet.ports import Condition
from memnet.services.exports.service import EXPORT_QUEUE
from tests.api.forgetting import TRANSCRIPT, build, clock_of, drain_forget, snapshot_url
from tests.api.test_documents import create, patch
from tests.api.test_events import event, post
from tests.clients import ApiClient
from tests.conftest import ADMIN_KEY, PRIVACY_KEY, STORAGE_BACKENDS, doc_url

USER = "/v1/tenants/t1/users/u1"
PROFILE = "?profile_id=project-copilot-v1"
MARKUP = "<script>alert(1)</script> [click](http://evil) **bold** # Heading"


@pytest.fixture(params=STORAGE_BACKENDS)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield build(request, tmp_path / "data")
    bootstrap.install(None)


def drain_exports(services: Services) -> int:
    """Work off the export queue here, as the queue trigger would."""
    done = 0
    while messages := services.queue.receive(EXPORT_QUEUE, max_messages=16):
        for message in messages:
            handle_export_job(bootstrap.services(), message.body)
            services.queue.delete(EXPORT_QUEUE, message)
            done += 1
    return done


def seed(client: ApiClient) -> None:
    """A document with three changes, three events, a snapshot."""
    url = doc_url()
    made = create(client, url, key="c1")
    assert made.status == 201, made.data
    etag = made.data["etag"]
    for n, text in enumerate(("Prefers tea", MARKUP)):
        ops = [{"op": "add", "path": "/content/preferences/-", "value": {"text": text}}]
        reply = patch(client, etag, ops, f"p{n}", url)
        assert reply.status == 200, reply.data
        etag = reply.data["etag"]
    for n in range(3):
        assert post(client, event(digest=f"Event {n}"), f"e{n}", USER).status == 201
    assert (
        client.request("PUT", snapshot_url("t1", "u1", "conv-1", "snap-1"), TRANSCRIPT).status
        == 202
    )


def export(client: ApiClient, services: Services, query: str = PROFILE) -> dict[str, Any]:
    reply = client.request("POST", f"{USER}:export{query}")
    assert reply.status == 202, reply.data
    assert reply.headers["location"] == reply.data["status_url"]
    assert reply.data["status"] == "queued"
    drain_exports(services)
    status = client.request("GET", reply.data["status_url"])
    assert status.status == 200, status.data
    found: dict[str, Any] = status.data
    return found


def files(client: ApiClient, job: dict[str, Any]) -> dict[str, bytes]:
    got = {}
    for name in job["files"]:
        reply = client.request("GET", job["files_url"] + name)
        assert reply.status == 200, (name, reply.data)
        got[name] = reply.body
    return got


def lines(archive: dict[str, bytes], kind: str) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for name, data in sorted(archive.items())
        if name.startswith(kind + "-")
        for line in data.splitlines()
    ]


def test_an_admins_export_holds_everything_and_verifies(client: ApiClient, services: Services):
    seed(client)
    admin = client.as_key(ADMIN_KEY)
    job = export(admin, services)
    assert job["status"] == "done" and job["complete"] is True and job["omitted"] == []
    archive = files(admin, job)
    manifest = json.loads(archive["manifest.json"])
    assert manifest["format"] == "memnet-export/1" and manifest["complete"] is True
    assert (manifest["tenant_id"], manifest["user_id"]) == ("t1", "u1")
    assert verify(archive["manifest.json"], archive.get) == []
    (document,) = lines(archive, "documents")
    stored = client.request("GET", doc_url()).data["document"]
    assert document["ref"]["path"] == "user_dynamic.json"
    assert document["document"]["content"] == stored["content"]
    audit = lines(archive, "audit")
    assert len(audit) == 3 and audit[-1]["change_id"] == document["document"]["change_id"]
    assert [a["prev_change_id"] for a in audit[1:]] == [a["change_id"] for a in audit[:-1]]
    events = lines(archive, "events")
    assert sorted(e["digest"] for e in events) == ["Event 0", "Event 1", "Event 2"]
    assert [e["event_id"] for e in events] == sorted(e["event_id"] for e in events)
    (snapshot,) = lines(archive, "snapshots")
    assert snapshot["snapshot"] == {"conversation_id": "conv-1", "snapshot_id": "snap-1"}
    assert snapshot["content"]["messages"][0]["text"] == "Hello there"
    assert len(lines(archive, "replays")) == 1
    counts = {p["kind"]: p["count"] for p in manifest["parts"]}
    assert counts == {"documents": 1, "audit": 3, "events": 3, "replays": 1, "snapshots": 1}


def test_memory_md_renders_memory_without_letting_it_make_markup(
    client: ApiClient, services: Services
):
    seed(client)
    admin = client.as_key(ADMIN_KEY)
    text = files(admin, export(admin, services))["memory.md"].decode()
    assert "Prefers tea" in text and "Event 2" in text
    assert "<script>" not in text and "[click]" not in text and "**bold**" not in text
    assert r"\<script\>" in text and r"\[click\]" in text and r"\*\*bold\*\*" in text
    assert not any(line.startswith("# Heading") for line in text.splitlines())


def test_a_tampered_part_fails_verification(client: ApiClient, services: Services):
    seed(client)
    admin = client.as_key(ADMIN_KEY)
    archive = files(admin, export(admin, services))
    name = next(n for n in archive if n.startswith("events-"))
    tampered = {**archive, name: archive[name].replace(b"Event 1", b"Event 9")}
    assert verify(archive["manifest.json"], tampered.get) == [
        f"{name}: sha256 does not match the manifest"
    ]
    del tampered[name]
    assert verify(archive["manifest.json"], tampered.get) == [f"{name}: missing"]


def test_a_reader_gets_what_its_roles_open_and_the_manifest_says_what_is_not(
    client: ApiClient, services: Services
):
    seed(client)
    job = export(client, services)  # dev-agent: read and write, no snapshots, no admin
    assert job["status"] == "done" and job["complete"] is False
    assert {o["kind"] for o in job["omitted"]} == {"snapshots", "receipts", "holds"}
    archive = files(client, job)
    manifest = json.loads(archive["manifest.json"])
    assert manifest["complete"] is False and manifest["omitted"] == job["omitted"]
    assert lines(archive, "snapshots") == [] and len(lines(archive, "events")) == 3
    assert verify(archive["manifest.json"], archive.get) == []


def test_the_export_is_audited_in_the_governance_log(client: ApiClient, services: Services):
    job = export(client, services)
    logged = [
        json.loads(services.blobs.read(n).data)
        for n in services.blobs.list_names("tenants/t1/_governance/log/")
    ]
    actions = {(e["action"], e.get("export_id")) for e in logged}
    assert ("export_requested", job["export_id"]) in actions
    assert ("export_completed", job["export_id"]) in actions


def test_files_wait_for_the_job_and_only_listed_names_are_served(
    client: ApiClient, services: Services
):
    reply = client.request("POST", f"{USER}:export{PROFILE}")
    early = client.request("GET", reply.data["status_url"] + "/files/manifest.json")
    assert (early.status, early.error_code) == (409, "EXPORT_NOT_READY")
    drain_exports(services)
    for name in ("job.json", "events-000009.jsonl", "x"):
        missing = client.request("GET", reply.data["status_url"] + f"/files/{name}")
        assert (missing.status, missing.error_code) == (404, "EXPORT_FILE_NOT_FOUND"), name
    bad = client.request("GET", reply.data["status_url"] + "/files/..")
    assert bad.status == 400


def test_hostile_ids_and_callers_find_nothing(client: ApiClient, services: Services):
    job = export(client, services)
    export_id = job["export_id"]
    for url in (
        f"/v1/tenants/t2/users/u1/exports/{export_id}",
        f"/v1/tenants/t1/users/u2/exports/{export_id}",
        f"{USER}/exports/exp_{'0' * 24}",
        f"{USER}/exports/not-an-export",
    ):
        reply = client.request("GET", url)
        assert (reply.status, reply.error_code) == (404, "EXPORT_NOT_FOUND"), url
    privacy = client.as_key(PRIVACY_KEY)  # the forget role only
    assert privacy.request("POST", f"{USER}:export").error_code == "ROLE_FORBIDDEN"
    assert privacy.request("GET", job["status_url"]).error_code == "ROLE_FORBIDDEN"
    assert client.as_key(None).request("POST", f"{USER}:export").status == 401
    admin = client.as_key(ADMIN_KEY)
    assert admin.request("GET", job["status_url"]).status == 200  # an admin of the tenant
    theirs = export(admin, services)
    other = client.request("GET", theirs["status_url"])  # another caller's export
    assert (other.status, other.error_code) == (404, "EXPORT_NOT_FOUND")


@pytest.mark.parametrize(
    ("method", "url", "status"),
    [
        ("POST", f"{USER}", 405),
        ("DELETE", f"{USER}:export", 405),
        ("POST", "/v1/tenants/t1/users/..:export", 400),
        ("POST", "/v1/tenants/t1/users/:export", 400),
        ("POST", f"{USER}:export?profile_id=..", 400),
        ("POST", f"{USER}:export?profile_id=nope", 403),
    ],
)
def test_a_bad_request_is_refused_and_queues_nothing(
    client: ApiClient, services: Services, method: str, url: str, status: int
):
    reply = client.request(method, url)
    assert reply.status == status, reply.data
    assert services.queue.count(EXPORT_QUEUE) == 0


def test_an_expired_export_is_gone(client: ApiClient, services: Services):
    job = export(client, services)
    clock_of(services).advance(timedelta(days=7, seconds=1).total_seconds())
    reply = client.request("GET", job["status_url"])
    assert (reply.status, reply.error_code) == (404, "EXPORT_NOT_FOUND")
    assert list(services.blobs.list_names(export_prefix("t1", "u1"))) == []


def test_delete_removes_the_archive(client: ApiClient, services: Services):
    job = export(client, services)
    reply = client.request("DELETE", job["status_url"])
    assert reply.status == 200 and reply.data == {"export_id": job["export_id"], "deleted": True}
    assert list(services.blobs.list_names(export_prefix("t1", "u1"))) == []
    assert client.request("GET", job["status_url"]).status == 404


def test_forgetting_the_user_deletes_its_exports_and_refuses_new_ones(
    client: ApiClient, services: Services
):
    seed(client)
    job = export(client, services)
    other_user = client.request("POST", "/v1/tenants/t1/users/u2:export" + PROFILE)
    assert other_user.status == 202
    drain_exports(services)
    reply = client.as_key(PRIVACY_KEY).request("DELETE", USER)
    assert reply.status == 202
    refused = client.request("POST", f"{USER}:export{PROFILE}")
    assert (refused.status, refused.error_code) == (409, "FORGET_IN_PROGRESS")
    drain_forget(services)
    assert list(services.blobs.list_names(export_prefix("t1", "u1"))) == []
    assert list(services.blobs.list_names(export_prefix("t1", "u2")))  # another user's stays
    receipt_id = client.as_key(PRIVACY_KEY).request("GET", f"{USER}/forget").data["receipt_id"]
    receipt = client.as_key(PRIVACY_KEY).request("GET", f"/v1/tenants/t1/receipts/{receipt_id}")
    assert receipt.data["deleted"]["exports"]["count"] == len(job["files"]) + 1  # and job.json
    assert client.request("GET", job["status_url"]).status == 404


def test_forgetting_a_conversation_deletes_the_users_exports_made_before(
    client: ApiClient, services: Services
):
    """Every archive made before holds the conversation (its snapshot, events, what it
    taught): the conversation's forget deletes them all and says so in its receipt."""
    seed(client)
    job = export(client, services)
    privacy = client.as_key(PRIVACY_KEY)
    reply = privacy.request("DELETE", f"{USER}/conversations/conv-1")
    assert reply.status == 202, reply.data
    drain_forget(services)
    status = privacy.request("GET", f"{USER}/forget/conversations/conv-1").data
    assert status["status"] == "done", status
    assert list(services.blobs.list_names(export_prefix("t1", "u1"))) == []
    assert client.request("GET", job["status_url"]).status == 404


def test_a_message_that_failed_every_delivery_fails_the_job(client: ApiClient, services: Services):
    queued = client.request("POST", f"{USER}:export{PROFILE}").data
    (message,) = services.queue.receive(EXPORT_QUEUE, max_messages=16)
    services.exports.gave_up(message.body)
    job = client.request("GET", queued["status_url"]).data
    assert job["status"] == "failed" and "ask again" in job["error"]
    services.exports.handle_message(message.body)  # a late delivery writes nothing now
    assert client.request("GET", queued["status_url"]).data["status"] == "failed"


def test_a_running_export_stops_when_the_users_forget_starts(
    client: ApiClient, services: Services, monkeypatch: pytest.MonkeyPatch
):
    """The job checks the tombstone at each progress report: an export racing a forget
    stops (failed) instead of writing on, and the forget deletes what it wrote."""
    from memnet.services.exports import archive, service

    monkeypatch.setattr(archive, "PROGRESS_RECORDS", 1)
    monkeypatch.setattr(service, "PROGRESS_EVERY", 1)
    seed(client)
    queued = client.request("POST", f"{USER}:export{PROFILE}").data
    assert client.as_key(PRIVACY_KEY).request("DELETE", USER).status == 202
    drain_exports(services)
    job = client.request("GET", queued["status_url"]).data
    assert job["status"] == "failed" and job["error"] == "the user is being forgotten"
    drain_forget(services)
    assert list(services.blobs.list_names(export_prefix("t1", "u1"))) == []


def test_an_export_holds_only_what_the_callers_profile_binds(
    client: ApiClient, services: Services, tmp_path: Path
):
    """A document no binding of the caller's profile covers is a 404 to its reads: an
    export by that caller, even an admin cleared for every class, leaves it out."""
    from memnet.cli.export import DirectorySink
    from memnet.domain.callers import Caller

    seed(client)
    stray = "tenants/t1/users/u1/documents/secretns/notes.json"
    services.blobs.write(stray, b'{"content":{"secret":"x"}}', Condition.create_only())
    admin = Caller(
        "ops", frozenset({"t1"}), frozenset({"project-copilot-v1"}), frozenset({"read", "admin"})
    )
    out = tmp_path / "archive"
    out.mkdir()
    services.exports.export_to(
        admin, ("t1", "u1"), "project-copilot-v1", DirectorySink(out), lambda *_: None
    )
    documents = (out / "documents-000001.jsonl").read_text()
    assert "secretns" not in documents and "user_dynamic.json" in documents
    assert "secretns" not in "".join(p.read_text() for p in out.glob("audit-*.jsonl"))


def test_a_user_has_at_most_five_exports_kept_at_once(client: ApiClient, services: Services):
    from memnet.services.exports.service import MAX_KEPT

    queued = [client.request("POST", f"{USER}:export{PROFILE}") for _ in range(MAX_KEPT)]
    assert [q.status for q in queued] == [202] * MAX_KEPT
    refused = client.request("POST", f"{USER}:export{PROFILE}")
    assert (refused.status, refused.error_code) == (409, "EXPORT_LIMIT")
    assert client.request("DELETE", queued[0].data["status_url"]).status == 200
    assert client.request("POST", f"{USER}:export{PROFILE}").status == 202
