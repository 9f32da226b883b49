"""Soorma's "Why did my billing fail?" workflow (its memory architecture document,
"Operational Workflow Example"), replayed through the Python client on soorma-coala-v1
(docs/related/soorma.md): procedural rules, tenant-shared knowledge, working memory per
plan, task context with sub-task lookup, plans and sessions, episodic digests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memnet_client import MemnetClient, NotFound

from tests.related.conftest import ADMIN_KEY, SOORMA_KEY, World, connect

RULE = {
    "rule_id": "billing-stripe",
    "trigger": "User asks about billing",
    "instruction": "When discussing billing, check Stripe status first.",
}


@pytest.fixture
def agent(http_server: str, related: World) -> Iterator[MemnetClient]:
    with connect(http_server, SOORMA_KEY, "alice", tenant="acme") as client:
        yield client


@pytest.fixture
def admin(http_server: str, related: World) -> Iterator[MemnetClient]:
    with connect(
        http_server, ADMIN_KEY, "alice", tenant="acme", profile="soorma-coala-v1"
    ) as client:
        yield client


def knowledge(text: str) -> list[dict[str, object]]:
    return [{"op": "add", "path": "/content/knowledge/-", "value": {"content": text}}]


def test_why_did_my_billing_fail(agent: MemnetClient, admin: MemnetClient, related: World):
    # Set-up: the operator's procedural rules; the tenant's knowledge base (upsert).
    admin.put_document("procedural", "rules.json", {"rules": [RULE]}, etag=None)
    added = agent.patch_document(
        "knowledge", "base.json", knowledge("Error 402 means insufficient funds."), etag=None
    )
    again = agent.update(
        "knowledge", "base.json", lambda _: knowledge("error 402 means insufficient funds.")
    )
    assert [u["result"] for u in (added.raw.get("upserts") or [])] == ["added"]
    assert [u["result"] for u in (again.raw.get("upserts") or [])] == ["replaced"]

    # A plan with its working memory, a task with sub-tasks, a session.
    plan = [
        {"op": "replace", "path": "/content/plan_id", "value": "plan-7"},
        {"op": "replace", "path": "/content/goal_event", "value": "billing.diagnose"},
    ]
    agent.patch_document("plans", "plan-7.json", plan, etag=None)
    state = [{"op": "add", "path": "/content/state/account_id", "value": "acc_123"}]
    agent.patch_document("working", "plan-7.json", state, etag=None)
    task = [
        {"op": "replace", "path": "/content/task_id", "value": "task-1"},
        {"op": "replace", "path": "/content/plan_id", "value": "plan-7"},
        {"op": "replace", "path": "/content/event_type", "value": "billing.check"},
        {"op": "replace", "path": "/content/sub_tasks", "value": ["stripe-status", "invoice-scan"]},
    ]
    agent.patch_document("tasks", "task-1.json", task, etag=None)
    session = [{"op": "replace", "path": "/content/session_id", "value": "sess-1"}]
    agent.patch_document("sessions", "sess-1.json", session, etag=None)

    # 1-2. Recall skills and facts: context assembly gives the rule and the knowledge.
    context = agent.assemble_context("Why did my billing fail?")
    by_binding = {d.binding_id: d.document.content for d in context.documents}
    assert by_binding["procedural"]["rules"][0]["instruction"].startswith("When discussing billing")
    assert by_binding["knowledge"]["knowledge"] == [
        {"content": "error 402 means insufficient funds."}
    ]

    # 3. Check state: the plan's working memory.
    assert agent.get_document("working", "plan-7.json").content["state"] == {
        "account_id": "acc_123"
    }

    # A sub-agent finishes "invoice-scan" and finds the task that owns it.
    owners = list(agent.iter_documents("tasks", lookup=("sub_task", "invoice-scan")))
    assert [d.path for d in owners] == ["task-1.json"]

    # 4. Execute and log (episodic): the digest, found by search.
    agent.write_event(
        "User asked why billing failed; Stripe reported error 402.", source_type="chat"
    )
    hits = agent.search_events("billing 402")
    assert hits and "402" in hits[0].event.digest

    # The user's plans and sessions.
    running = agent.list_documents("plans", lookup=("status", "running"))
    assert [d.path for d in running.documents] == ["plan-7.json"]
    assert [d.path for d in agent.list_documents("sessions").documents] == ["sess-1.json"]
    agent.update(
        "plans",
        "plan-7.json",
        lambda _: [{"op": "replace", "path": "/content/status", "value": "completed"}],
    )
    assert agent.list_documents("plans", lookup=("status", "running")).documents == ()

    # The plan's working memory goes a day after its last write; the sweep removes it.
    related.clock.advance(86400 + 60)  # the blob's own time is the wall clock's, a bit later
    with pytest.raises(NotFound):
        agent.get_document("working", "plan-7.json")
    report = related.services.retention.sweep().as_json()
    assert report["counts"]["documents"] == {"deleted": 1}
    assert agent.get_document("tasks", "task-1.json").content["plan_id"] == "plan-7"

    # Another user of the tenant shares the knowledge, not alice's plans.
    bob = agent.for_user("acme", "bob")
    assert bob.get_document("knowledge", "base.json").content["knowledge"]
    assert bob.list_documents("plans").documents == ()
