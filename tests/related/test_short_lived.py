"""Short-lived documents and lookups (issue 15, capability 2; docs/profiles.md
"Short-lived memory", "Lookups"), on soorma-coala-v1's working memory (ttl_seconds
86400), task context (lookup sub_task, plan) and plans (lookup status), on both backends
and both transports."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest

from memnet.domain.callers import Caller
from memnet.domain.layout import DocumentRef, governance_prefix, user_prefix
from memnet.services.documents.chain import DocumentChain
from tests.api.forgetting import drain_forget
from tests.clients import ApiClient, Reply
from tests.related.conftest import ADMIN_KEY, PRIVACY_KEY, World, command

USER = "/v1/tenants/t1/users/u1"
DAY = 86400


def write(
    client: ApiClient, where: str, ops: list[Any], key: str, etag: str | None = None
) -> Reply:
    precondition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    return client.request(
        "PATCH", f"{USER}/documents/{where}", {"ops": ops}, {**precondition, "Idempotency-Key": key}
    )


def task(client: ApiClient, task_id: str, plan_id: str, sub_tasks: list[str]) -> Reply:
    ops = [
        {"op": "replace", "path": "/content/task_id", "value": task_id},
        {"op": "replace", "path": "/content/plan_id", "value": plan_id},
        {"op": "replace", "path": "/content/event_type", "value": "research.requested"},
        {"op": "replace", "path": "/content/sub_tasks", "value": sub_tasks},
    ]
    return write(client, f"tasks/{task_id}.json", ops, f"task-{task_id}")


def listed(client: ApiClient, namespace: str, query: str = "") -> list[str]:
    reply = client.request("GET", f"{USER}/documents/{namespace}/{query}")
    assert reply.status == 200, reply.data
    return [item["path"] for item in reply.data["documents"]]


def set_state(client: ApiClient, plan: str, key: str, value: Any, etag: str | None = None) -> Reply:
    op = {"op": "add", "path": f"/content/state/{key}", "value": value}
    return write(client, f"working/{plan}.json", [op], f"{plan}-{key}-{etag}", etag)


# -- lookups ------------------------------------------------------------------------------


def test_the_task_that_owns_a_sub_task_is_found_by_lookup(soorma: ApiClient):
    assert task(soorma, "task-1", "plan-a", ["sub-1", "sub-2"]).status == 201
    assert task(soorma, "task-2", "plan-a", ["sub-3"]).status == 201
    assert task(soorma, "task-3", "plan-b", []).status == 201
    assert listed(soorma, "tasks", "?lookup=sub_task&value=sub-3") == ["task-2.json"]
    assert listed(soorma, "tasks", "?lookup=sub_task&value=sub-9") == []
    assert listed(soorma, "tasks", "?lookup=plan&value=plan-a") == ["task-1.json", "task-2.json"]


def test_a_lookup_page_may_be_short_and_still_continue(soorma: ApiClient):
    for i in range(5):
        assert task(soorma, f"task-{i}", "p", [f"sub-{i}"]).status == 201
    found, token, pages = [], None, 0
    while True:
        query = "?lookup=sub_task&value=sub-4&limit=2" + (f"&continuation={token}" if token else "")
        reply = soorma.request("GET", f"{USER}/documents/tasks/{query}")
        assert reply.status == 200, reply.data
        found += [item["path"] for item in reply.data["documents"]]
        pages, token = pages + 1, reply.data["continuation"]
        if token is None:
            break
    assert (found, pages) == (["task-4.json"], 3)


def test_lookups_the_profile_does_not_declare_are_refused(soorma: ApiClient):
    task(soorma, "task-1", "p", ["sub-1"])
    for query, field in (
        ("?lookup=status&value=running", "lookup"),  # declared by plans, not tasks
        ("?lookup=sub_task", "value"),
        ("?value=sub-1", "lookup"),
        ("?lookup=Sub-Task&value=x", "lookup"),
        ("?lookup=sub_task&value=" + "x" * 1025, "value"),
    ):
        reply = soorma.request("GET", f"{USER}/documents/tasks/{query}")
        assert (reply.status, reply.error_code) == (400, "INVALID_QUERY"), query
        assert reply.data["error"]["details"]["location"] == ["query", field]


def test_active_plans_are_listed_by_status(soorma: ApiClient):
    for plan, status in (("p1", "running"), ("p2", "completed"), ("p3", "running")):
        ops = [
            {"op": "replace", "path": "/content/plan_id", "value": plan},
            {"op": "replace", "path": "/content/status", "value": status},
        ]
        assert write(soorma, f"plans/{plan}.json", ops, f"plan-{plan}").status == 201
    assert listed(soorma, "plans", "?lookup=status&value=running") == ["p1.json", "p3.json"]
    assert listed(soorma, "plans") == ["p1.json", "p2.json", "p3.json"]


def test_a_lookup_never_reaches_another_users_documents(soorma: ApiClient):
    task(soorma, "task-1", "p", ["sub-1"])
    reply = soorma.request(
        "GET", "/v1/tenants/t1/users/u2/documents/tasks/?lookup=sub_task&value=sub-1"
    )
    assert reply.data["documents"] == []
    reply = soorma.request(
        "GET", "/v1/tenants/t2/users/u1/documents/tasks/?lookup=sub_task&value=sub-1"
    )
    assert reply.data["documents"] == []


# -- expiry -------------------------------------------------------------------------------


def test_a_write_sets_expires_at_and_each_change_moves_it(soorma: ApiClient, related: World):
    first = set_state(soorma, "plan-1", "research_summary", {"confidence": 0.9})
    assert first.status == 201, first.data
    written = first.data["document"]
    assert written["expires_at"] > written["updated_at"]
    related.clock.advance(3600)
    second = set_state(soorma, "plan-1", "draft", "text", first.data["etag"])
    assert second.data["document"]["expires_at"] > written["expires_at"]
    history = soorma.request("GET", f"{USER}/documents/working/plan-1.json:history")
    assert [c["expires_at"] for c in history.data["changes"]] == [
        second.data["document"]["expires_at"],
        written["expires_at"],
    ]


def test_an_expired_document_reads_as_absent_everywhere(soorma: ApiClient, related: World):
    made = set_state(soorma, "plan-1", "k", 1)
    set_state(soorma, "plan-2", "k", 2)
    related.clock.advance(DAY - 1)
    assert soorma.request("GET", f"{USER}/documents/working/plan-1.json").status == 200
    set_state(
        soorma,
        "plan-2",
        "k2",
        3,
        soorma.request("GET", f"{USER}/documents/working/plan-2.json").headers["etag"],
    )
    related.clock.advance(1)
    got = soorma.request("GET", f"{USER}/documents/working/plan-1.json")
    assert (got.status, got.error_code) == (404, "DOCUMENT_NOT_FOUND")
    history = soorma.request("GET", f"{USER}/documents/working/plan-1.json:history")
    assert history.status == 404
    assert listed(soorma, "working") == ["plan-2.json"]  # written later: still alive
    stale = set_state(soorma, "plan-1", "k", 5, made.data["etag"])
    assert (stale.status, stale.error_code) == (404, "DOCUMENT_NOT_FOUND")


def test_a_create_takes_an_expired_documents_place(soorma: ApiClient, related: World):
    old = set_state(soorma, "plan-1", "old", "secret plan")
    related.clock.advance(DAY)
    new = set_state(soorma, "plan-1", "new", "fresh")
    assert new.status == 201, new.data
    assert new.data["document"]["content"]["state"] == {"new": "fresh"}
    assert new.data["document"]["doc_id"] != old.data["document"]["doc_id"]
    history = soorma.request("GET", f"{USER}/documents/working/plan-1.json:history")
    assert [c["operation"] for c in history.data["changes"]] == ["create"]


def test_the_sweep_deletes_expired_documents_and_logs_each(soorma: ApiClient, related: World):
    set_state(soorma, "plan-1", "k", 1)
    assert task(soorma, "task-1", "plan-1", []).status == 201  # no TTL: never expires
    related.clock.advance(DAY + 1)
    dry = related.services.retention.sweep(dry_run=True).as_json()
    assert dry["counts"]["documents"] == {"would_delete": 1}
    names = list(related.services.blobs.list_names(user_prefix("t1", "u1") + "documents/"))
    assert len(names) == 2  # the dry run deleted nothing
    report = related.services.retention.sweep().as_json()
    assert report["counts"]["documents"] == {"deleted": 1}
    names = list(related.services.blobs.list_names(user_prefix("t1", "u1") + "documents/"))
    assert names == [user_prefix("t1", "u1") + "documents/tasks/task-1.json"]
    logged = [
        json.loads(related.services.blobs.read(name).data)
        for name in related.services.blobs.list_names(governance_prefix("t1") + "log/")
    ]
    assert [(e["action"], e["actor"], e["namespace"], e["path"]) for e in logged] == [
        ("document_expired", "retention", "working", "plan-1.json")
    ]


def test_a_hold_keeps_expired_documents_in_storage(soorma: ApiClient, related: World):
    set_state(soorma, "plan-1", "k", 1)
    admin = soorma.as_key(ADMIN_KEY)
    hold = admin.request(
        "PUT",
        "/v1/admin/tenants/t1/users/u1/hold",
        {"kinds": ["documents"], "reason": "litigation"},
    )
    assert hold.status in (200, 201), hold.data
    related.clock.advance(DAY + 1)
    report = related.services.retention.sweep().as_json()
    assert report["counts"]["documents"] == {"kept_by_hold": 1}
    got = soorma.request("GET", f"{USER}/documents/working/plan-1.json")
    assert got.status == 404  # still expired to agents


def test_forgetting_a_conversation_deletes_expired_documents_it_passes(
    soorma: ApiClient, related: World
):
    set_state(soorma, "plan-1", "k", "remembered from conv-1")
    related.clock.advance(DAY)
    privacy = soorma.as_key(PRIVACY_KEY)
    reply = privacy.request("DELETE", f"{USER}/conversations/conv-1")
    assert reply.status == 202, reply.data
    drain_forget(related.services)
    assert privacy.request("GET", reply.data["status_url"]).data["status"] == "done"
    assert not list(related.services.blobs.list_names(user_prefix("t1", "u1") + "documents/"))
    logged = [
        json.loads(related.services.blobs.read(name).data)
        for name in related.services.blobs.list_names(governance_prefix("t1") + "log/")
    ]
    assert ("document_expired", "memnet-forget") in [(e["action"], e["actor"]) for e in logged]


def test_history_does_not_reach_into_the_expired_documents_changes(
    soorma: ApiClient, related: World
):
    old = set_state(soorma, "plan-1", "old", "secret plan")
    related.clock.advance(DAY)
    assert set_state(soorma, "plan-1", "new", "fresh").status == 201
    old_change = old.data["document"]["change_id"]
    url = f"{USER}/documents/working/plan-1.json:history?before={old_change}"
    reply = soorma.request("GET", url)
    assert (reply.status, reply.error_code) == (400, "INVALID_QUERY")


def test_a_repeated_request_does_not_show_an_expired_document(soorma: ApiClient, related: World):
    first = set_state(soorma, "plan-1", "k", "secret")
    related.clock.advance(DAY)
    again = set_state(soorma, "plan-1", "k", "secret")  # same key: the stored response
    assert again.status == 201 and again.headers.get("idempotent-replayed", "true")
    assert again.data["document"] is None and again.data["etag"] == first.data["etag"]


def test_a_create_racing_the_sweep_still_creates(
    soorma: ApiClient, related: World, monkeypatch: pytest.MonkeyPatch
):
    set_state(soorma, "plan-1", "k", 1)
    related.clock.advance(DAY)
    original = DocumentChain.checked_current

    def swept_meanwhile(self: DocumentChain, cmd: Any, binding: Any) -> Any:
        found = original(self, cmd, binding)
        with contextlib.suppress(Exception):
            related.services.blobs.delete(cmd.ref.blob_name)
        return found

    monkeypatch.setattr(DocumentChain, "checked_current", swept_meanwhile)
    made = set_state(soorma, "plan-1", "k2", 2)
    assert made.status == 201, made.data
    assert made.data["document"]["content"]["state"] == {"k2": 2}


def test_a_jobs_write_keeps_the_expiry_it_found(soorma: ApiClient, related: World):
    made = set_state(soorma, "plan-1", "k", 1)
    related.clock.advance(3600)
    ref = DocumentRef("t1", "u1", "working", "plan-1.json")
    job = command(
        ref,
        "soorma-coala-v1",
        [{"op": "remove", "path": "/content/state/k"}],
        reason="forget_conversation",
        etag=made.data["etag"],
        confidence=1.0,
    )
    caller = Caller(
        "memnet-forget", frozenset({"t1"}), frozenset({"*"}), frozenset({"read", "write"})
    )
    written = related.services.documents.patch(caller, job)
    assert written.body["document"]["expires_at"] == made.data["document"]["expires_at"]
