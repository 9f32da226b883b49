"""Schema migrations through the real functions (spec 8.1, 20, 21; docs/profiles.md,
"Schema migrations"): documents written by a deployment of the shipped profile
(``memory.user.dynamic`` 1.0.0), then served and written by one of the bumped profile
(1.2.0, :mod:`tests.api.migrating`) on the same storage: dual read, migrate on write,
the ``migrate`` command with its audit records, an old deployment and an old client
after the bump, a migration that does not apply, and live writes during the job."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.cli import main
from memnet.domain.audit_records import AuditRecord, fold
from memnet.domain.layout import DocumentRef
from memnet.services.documents.service import DocumentService
from tests.api.forgetting import drain_forget
from tests.api.migrating import LATEST, bumped_profiles
from tests.api.test_documents import PREF, patch
from tests.clients import ApiClient
from tests.conftest import (
    PRIVACY_KEY,
    REPO,
    STORAGE_BACKENDS,
    backend_settings,
    doc_url,
    make_settings,
)

OLD_CONTENT = {
    "preferences": [{"text": "Tea, not coffee.", "topic": "drinks"}, {"text": "Brief."}],
    "durable_facts": [],
    "pending_confirmations": [],
    "projects_index": [{"project_id": "p1", "name": "Apollo"}],
}
NEW_CONTENT = {
    "preferences": [{"text": "Tea, not coffee.", "category": "drinks"}, {"text": "Brief."}],
    "durable_facts": [],
    "pending_confirmations": [],
    "projects": [{"project_id": "p1", "name": "Apollo"}],
}


@dataclass
class Deployments:
    """An old deployment (the shipped profile) and a new one (the bump) on one store;
    ``new`` is what the fixture installs once a test calls :meth:`roll`."""

    old: Services
    new: Services
    env: dict[str, str]  # the new deployment's settings, for the command line

    def roll(self, to: Services | None = None) -> None:
        bootstrap.install(to or self.new)


def _env(settings: Any, profiles: Path) -> dict[str, str]:
    env = {
        "MEMNET_STORAGE": settings.storage,
        "MEMNET_DATA_DIR": str(settings.data_dir),
        "MEMNET_PROFILES_DIR": str(profiles),
        "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
        "MEMNET_BLOB_CONTAINER": settings.blob_container,
    }
    if settings.blob_connection_string:
        env["MEMNET_BLOB"] = settings.blob_connection_string
        env["MEMNET_QUEUE"] = settings.queue_connection_string
    return env


def deploy(old: Services, profiles: Path) -> Services:
    settings = make_settings(**{**old.settings.__dict__, "profiles_dir": profiles})
    return bootstrap.build(settings, blobs=old.blobs, index=old.index, queue=old.queue)


@pytest.fixture(params=STORAGE_BACKENDS)
def deployments(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Deployments]:
    settings = backend_settings(request, request.param, tmp_path / "data")
    old = bootstrap.build(make_settings(**{**settings.__dict__, "forget_grace_seconds": 0}))
    profiles = bumped_profiles(tmp_path / "profiles")
    env = _env(old.settings, profiles)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    bootstrap.install(old)
    yield Deployments(old, deploy(old, profiles), env)
    bootstrap.install(None)


@pytest.fixture
def services(deployments: Deployments) -> Services:
    return deployments.old  # what the client fixture needs; installed until roll()


def seed(admin: ApiClient, user: str = "u1", content: Any = None, tenant: str = "t1") -> str:
    """A user_dynamic document written by the old deployment (at 1.0.0); its ETag."""
    reply = admin.request(
        "PUT",
        doc_url(user=user, tenant=tenant),
        {"content": OLD_CONTENT if content is None else content},
        {"If-None-Match": "*", "Idempotency-Key": f"seed-{tenant}-{user}"},
    )
    assert reply.status == 201, reply.data
    assert reply.data["document"]["schema_version"] == "1.0.0"
    return str(reply.data["etag"])


def stored(services: Services, user: str = "u1", tenant: str = "t1") -> dict[str, Any]:
    found = services.documents.load(DocumentRef(tenant, user, "user", "user_dynamic.json"))
    assert found is not None
    return found.document


def history(client: ApiClient, user: str = "u1", tenant: str = "t1") -> list[dict[str, Any]]:
    reply = client.request("GET", doc_url(user=user, tenant=tenant) + ":history")
    assert reply.status == 200, reply.data
    return list(reply.data["changes"])


def folds_to_current(client: ApiClient, deployments: Deployments, user: str = "u1") -> bool:
    changes = history(client, user)
    return fold(map(AuditRecord.from_json, reversed(changes))) == stored(deployments.new, user)


# -- dual read --------------------------------------------------------------------------


def test_a_read_serves_the_latest_version_migrated_in_memory_and_writes_nothing(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    etag = seed(admin)
    deployments.roll()
    reply = client.request("GET", doc_url())
    assert reply.status == 200, reply.data
    document = reply.data["document"]
    assert document["schema_version"] == LATEST and document["content"] == NEW_CONTENT
    assert reply.data["etag"] == etag  # the stored version's: a write names it
    assert stored(deployments.new)["schema_version"] == "1.0.0"
    assert len(history(client)) == 1


def test_read_as_stored_serves_the_version_as_stored(
    client: ApiClient, admin: ApiClient, deployments: Deployments, tmp_path: Path
):
    seed(admin)
    deployments.roll(deploy(deployments.old, bumped_profiles(tmp_path / "p2", read_as="stored")))
    document = client.request("GET", doc_url()).data["document"]
    assert document["schema_version"] == "1.0.0" and document["content"] == OLD_CONTENT


def test_context_assembly_reads_the_latest_version_and_routes_by_it(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    """The bumped profile's routing index is ``/projects``: a document stored at 1.0.0
    (``/projects_index``) routes only if it is read migrated."""
    index = [{"project_id": "p1", "name": "Apollo", "aliases": ["apollo"]}]
    seed(admin, content={**OLD_CONTENT, "projects_index": index})
    project = {"summary": "Moon.", "facets": {}, "recent_notes": []}
    headers = {"If-None-Match": "*", "Idempotency-Key": "p1"}
    admin.request("PUT", doc_url("projects/p1.json"), {"content": project}, headers)
    deployments.roll()
    body = {"conversation_hint": {"text": "how is apollo going"}}
    reply = client.request("POST", "/v1/tenants/t1/users/u1/context:assemble", body)
    assert reply.status == 200, reply.data
    assert reply.data["selected_project_id"] == "p1"
    dynamic = next(d for d in reply.data["documents"] if d["binding_id"] == "user_dynamic")
    assert dynamic["document"]["schema_version"] == LATEST
    assert dynamic["document"]["content"]["projects"] == index
    assert stored(deployments.new)["schema_version"] == "1.0.0"


# -- migrate on write -------------------------------------------------------------------


def test_the_next_write_migrates_the_document_as_part_of_its_change(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    etag = seed(admin)
    deployments.roll()
    value = {"text": "Short answers.", "category": "style"}
    reply = patch(client, etag, [{"op": "add", "path": PREF, "value": value}], "w1")
    assert reply.status == 200, reply.data
    document = reply.data["document"]
    assert document["schema_version"] == LATEST
    assert document["content"] == {
        **NEW_CONTENT,
        "preferences": [*NEW_CONTENT["preferences"], value],
    }
    newest = history(client)[0]
    assert newest["reason"] == "live_update" and newest["actor"] == "dev-agent"
    assert newest["migration"] == {"from": "1.0.0", "to": LATEST}
    assert newest["ops"][0] == {"op": "replace", "path": "/schema_version", "value": LATEST}
    assert newest["ops"][-1]["path"] == "/content/preferences/-"
    assert folds_to_current(client, deployments)


def test_a_past_version_reads_as_it_was_stored_across_the_migration(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    """History is not rewritten: ``as_of`` the seed answers 1.0.0, the migrating change
    1.2.0, each folded from the audit records (docs/profiles.md)."""
    etag = seed(admin)
    deployments.roll()
    value = {"text": "Short.", "category": "style"}
    assert patch(client, etag, [{"op": "add", "path": PREF, "value": value}], "w1").status == 200
    newest, first = history(client)
    old = client.request("GET", doc_url() + "?as_of=" + first["change_id"])
    assert old.status == 200, old.data
    assert old.data["document"]["schema_version"] == "1.0.0"
    assert old.data["document"]["content"] == OLD_CONTENT
    new = client.request("GET", doc_url() + "?as_of=" + newest["change_id"]).data["document"]
    assert new == stored(deployments.new)


def test_an_old_clients_write_in_the_old_shape_is_refused_and_changes_nothing(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    etag = seed(admin)
    deployments.roll()
    value = {"text": "Short answers.", "topic": "style"}  # 1.0.0's member
    reply = patch(client, etag, [{"op": "add", "path": PREF, "value": value}], "w1")
    assert reply.status == 422 and reply.error_code == "SCHEMA_VIOLATION", reply.data
    assert stored(deployments.new)["schema_version"] == "1.0.0"
    assert len(history(client)) == 1


def test_a_document_an_old_deployment_writes_after_the_bump_is_migrated_not_refused(
    client: ApiClient, admin: ApiClient, deployments: Deployments, capsys
):
    seed(admin)
    deployments.roll()
    assert run(capsys)["counts"]["migrated"] == 1
    deployments.roll(deployments.old)  # an instance not yet rolled over: writes 1.0.0
    etag = seed(admin, user="u2")
    old_etag = str(client.request("GET", doc_url()).data["etag"])
    refused = patch(client, old_etag, [{"op": "add", "path": PREF, "value": {"text": "o"}}], "o1")
    assert refused.status == 422 and refused.error_code == "SCHEMA_VERSION_UNSUPPORTED"
    assert refused.data["error"]["details"]["stored_version"] == LATEST
    deployments.roll()
    ops = [{"op": "add", "path": PREF, "value": {"text": "n", "category": "c"}}]
    reply = patch(client, etag, ops, "new-1", url=doc_url(user="u2"))
    assert reply.status == 200, reply.data
    assert reply.data["document"]["content"]["projects"] == NEW_CONTENT["projects"]
    assert history(client, "u2")[0]["migration"] == {"from": "1.0.0", "to": LATEST}


def test_a_stale_rebasing_write_moves_past_the_migration_only_where_it_commutes(
    client: ApiClient, admin: ApiClient, deployments: Deployments, capsys
):
    """A client holding the ETag from before the bulk migration: its append rebases past
    the migration change; its write to a member the migration renamed conflicts (412,
    naming the migration change) rather than writing the old shape."""
    etag = seed(admin)
    deployments.roll()
    assert run(capsys)["counts"]["migrated"] == 1
    migration = history(client)[0]["change_id"]
    value = {"text": "Later.", "category": "style"}
    appended = client.request(
        "PATCH",
        doc_url(),
        {"ops": [{"op": "add", "path": PREF, "value": value}], "rebase": True},
        {"If-Match": etag, "Idempotency-Key": "stale-1"},
    )
    assert appended.status == 200, appended.data
    assert appended.data["rebased_from"] == etag
    assert appended.data["document"]["content"]["preferences"][-1] == value
    ops = [{"op": "replace", "path": "/content/preferences/0/topic", "value": "food"}]
    renamed = client.request(
        "PATCH",
        doc_url(),
        {"ops": ops, "rebase": True},
        {"If-Match": etag, "Idempotency-Key": "s2"},
    )
    assert renamed.status == 412, renamed.data
    assert renamed.data["error"]["details"]["rebase"]["change_id"] == migration


def test_a_migration_that_does_not_apply_refuses_the_write_naming_the_op(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    without_index = {k: v for k, v in OLD_CONTENT.items() if k != "projects_index"}
    etag = seed(admin, content=without_index)
    deployments.roll()
    reply = patch(client, etag, [{"op": "add", "path": PREF, "value": {"text": "x"}}], "w1")
    assert reply.status == 422 and reply.error_code == "MIGRATION_FAILED", reply.data
    details = reply.data["error"]["details"]
    assert (
        details["from"] == "1.0.0" and details["to"] == "1.1.0" and details["path"] == "/projects"
    )
    assert stored(deployments.new)["content"] == without_index
    served = client.request("GET", doc_url()).data["document"]  # served as stored
    assert served["schema_version"] == "1.0.0"


def test_forgetting_a_conversation_retracts_from_a_document_at_the_old_version(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    """The retraction is planned against the version its write starts from (migrated),
    and its write migrates the document: one change, reason forget_conversation."""
    taught = {"text": "Green tea.", "topic": "drinks", "evidence": {"conversation_id": "c-9"}}
    seed(admin, content={**OLD_CONTENT, "preferences": [*OLD_CONTENT["preferences"], taught]})
    deployments.roll()
    privacy = client.as_key(PRIVACY_KEY)
    reply = privacy.request("DELETE", "/v1/tenants/t1/users/u1/conversations/c-9")
    assert reply.status == 202, reply.data
    drain_forget(deployments.new)
    assert privacy.request("GET", reply.data["status_url"]).data["status"] == "done"
    assert stored(deployments.new) == {**stored(deployments.new), "content": NEW_CONTENT}
    assert stored(deployments.new)["schema_version"] == LATEST
    newest = history(client)[0]
    assert newest["reason"] == "forget_conversation"
    assert newest["migration"] == {"from": "1.0.0", "to": LATEST}
    assert folds_to_current(client, deployments)


def test_a_proposal_made_at_the_old_version_is_reviewed_after_the_bump(
    client: ApiClient, admin: ApiClient, deployments: Deployments
):
    etag = seed(admin)
    fact = {
        "fact": "Lives in Porto",
        "confidence": 0.5,
        "evidence": {"message_ids": ["m1"]},
        "last_verified_at": "2026-11-24T10:00:00Z",
    }
    ops = [{"op": "add", "path": "/content/durable_facts/-", "value": fact}]
    low = {"confidence": 0.5, "evidence": {"message_ids": ["m1"]}}
    assert patch(client, etag, ops, "proposed", **low).status == 200  # redirected, at 1.0.0
    deployments.roll()
    queue = client.request("GET", "/v1/tenants/t1/users/u1/proposals")
    assert queue.status == 200 and len(queue.data["proposals"]) == 1, queue.data
    proposal = queue.data["proposals"][0]["proposal_id"]
    url = f"/v1/tenants/t1/users/u1/proposals/{proposal}/approve"
    approved = admin.request("POST", url)
    assert approved.status == 200, approved.data
    document = stored(deployments.new)
    assert document["schema_version"] == LATEST
    assert document["content"]["durable_facts"][0]["fact"] == "Lives in Porto"
    assert document["content"]["pending_confirmations"] == []
    newest = history(client)[0]
    assert newest["reason"] == "proposal_review"
    assert newest["migration"] == {"from": "1.0.0", "to": LATEST}


# -- the migrate command ----------------------------------------------------------------


def run(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    assert main(["migrate", *argv, "--settings", "/nonexistent"]) == code
    out = capsys.readouterr().out
    return json.loads(out) if out else None


def test_migrate_dry_run_lists_what_it_would_do_and_writes_nothing(
    client: ApiClient, admin: ApiClient, deployments: Deployments, capsys
):
    seed(admin)
    seed(admin, user="u2", content={**OLD_CONTENT, "projects_index": []})
    seed(admin, user="u3", content={k: v for k, v in OLD_CONTENT.items() if k != "projects_index"})
    deployments.roll()
    shown = run(capsys, "--dry-run", code=1)
    assert shown["dry_run"] is True
    assert shown["counts"] == {
        "looked_at": 3,
        "current": 0,
        "migrated": 0,
        "would_migrate": 2,
        "failed": 1,
        "skipped": 0,
    }
    assert {d["document"] for d in shown["would_migrate"]} == {
        "t1/u1/user/user_dynamic.json",
        "t1/u2/user/user_dynamic.json",
    }
    assert all(d["from"] == "1.0.0" and d["to"] == LATEST for d in shown["would_migrate"])
    assert shown["failed"][0]["error"]["code"] == "MIGRATION_FAILED"
    for user in ("u1", "u2", "u3"):
        assert stored(deployments.new, user)["schema_version"] == "1.0.0"


def test_migrate_migrates_each_document_as_an_audited_change_and_a_rerun_nothing_twice(
    client: ApiClient, admin: ApiClient, deployments: Deployments, capsys
):
    seed(admin)
    seed(admin, user="u2", content={**OLD_CONTENT, "projects_index": []})
    bad = {k: v for k, v in OLD_CONTENT.items() if k != "projects_index"}
    seed(admin, user="u3", content=bad)
    deployments.roll()
    summary = run(capsys, "--actor", "ops-team", code=1)
    assert summary["counts"]["migrated"] == 2 and summary["counts"]["failed"] == 1
    failed = summary["failed"][0]
    assert failed["document"] == "t1/u3/user/user_dynamic.json"
    assert failed["error"]["code"] == "MIGRATION_FAILED" and failed["error"]["path"] == "/projects"
    assert stored(deployments.new, "u3")["content"] == bad
    for user in ("u1", "u2"):
        assert stored(deployments.new, user)["schema_version"] == LATEST
        newest = history(client, user)[0]
        assert newest["reason"] == "admin_migration" and newest["actor"] == "ops-team"
        assert newest["migration"] == {"from": "1.0.0", "to": LATEST}
        assert newest["change_id"] in {d["change_id"] for d in summary["migrated"]}
        assert folds_to_current(client, deployments, user)
    assert stored(deployments.new)["content"] == NEW_CONTENT
    again = run(capsys, code=1)
    assert again["counts"]["migrated"] == 0 and again["counts"]["current"] == 2
    assert [len(history(client, user)) for user in ("u1", "u2")] == [2, 2]


def test_migrate_keeps_to_the_tenant_and_profile_it_is_given(
    client: ApiClient, admin: ApiClient, deployments: Deployments, capsys
):
    seed(admin)
    deployments.roll()
    assert run(capsys, "--tenant", "t2")["counts"]["looked_at"] == 0
    assert stored(deployments.new)["schema_version"] == "1.0.0"
    assert run(capsys, "--profile", "no-such-profile", code=2) == {"error": "unknown profile"}
    assert run(capsys, "--tenant", "../t1", code=2) == {"error": "bad tenant"}
    assert (
        run(capsys, "--tenant", "t1", "--profile", "project-copilot-v1")["counts"]["migrated"] == 1
    )


def test_live_writes_during_the_job_lose_nothing(
    client: ApiClient, admin: ApiClient, deployments: Deployments, capsys, monkeypatch
):
    """A live write lands between the job's read of a document and its write (made to,
    not raced): the job's conditional write fails, it reads again, finds the document
    migrated by the live write, and leaves it."""
    etag = seed(admin)
    deployments.roll()
    value = {"text": "Live.", "category": "live"}
    real = DocumentService.patch
    landed: list[int] = []

    def interleaved(self: DocumentService, caller: Any, cmd: Any) -> Any:
        if cmd.reason == "admin_migration" and not landed:
            ops = [{"op": "add", "path": PREF, "value": value}]
            landed.append(patch(client, etag, ops, "live-1").status)
        return real(self, caller, cmd)

    monkeypatch.setattr(DocumentService, "patch", interleaved)
    summary = run(capsys)
    assert landed == [200]
    assert summary["counts"] == {
        "looked_at": 1,
        "current": 1,
        "migrated": 0,
        "would_migrate": 0,
        "failed": 0,
        "skipped": 0,
    }
    content = stored(deployments.new)["content"]
    assert content["preferences"][-1] == value and content["projects"] == NEW_CONTENT["projects"]
    reasons = [c["reason"] for c in history(client)]
    assert reasons == ["live_update", "admin_migration"]  # the seed was an admin PUT
