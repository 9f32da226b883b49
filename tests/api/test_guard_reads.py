"""What the poisoning guard changes for readers and reviewers (docs/security.md): pending
is not context (left out, or marked unverified), a review stamps who approved into the
item's evidence, a held removal is approved or rejected (and refused when stale), and
compaction evicts unreviewed replay items first. Both backends, both transports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from tests.api.test_documents import create
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import (
    ADMIN_KEY,
    AGENT_KEY,
    SERVICE_BACKENDS,
    backend_settings,
    doc_url,
    starter_profiles,
)

USER = "/v1/tenants/t1/users/u1"
STAMPED = {
    "conversation_id": "c1",
    "snapshot_uri": "blob://tenants/t1/users/u1/snapshots/c1/s1.json",
    "message_ids": ["m1"],
    "learned_at": "2026-11-24T10:00:00Z",
}
PROPOSAL = {
    "candidate": {"text": "Prefers invoices sent to finance", "evidence": STAMPED},
    "target_path": "/preferences/-",
    "op": "add",
    "confidence": 0.7,
    "evidence": STAMPED,
    "proposed_at": "2026-11-24T10:00:00Z",
    "proposed_by": "dev-agent",
    "reasons": ["secret_like"],
}


def serve(request: pytest.FixtureRequest, tmp_path: Path, backend: str, mode: str | None):
    def edit(raw: dict[str, Any]) -> None:
        if mode is not None:
            raw["context_rules"]["pending"] = mode

    settings = backend_settings(request, backend, tmp_path / "data")
    profiles = starter_profiles(tmp_path / "profiles", edit)
    built = bootstrap.build(type(settings)(**{**settings.__dict__, "profiles_dir": profiles}))
    bootstrap.install(built)
    return built


@pytest.fixture(params=[(b, t) for b in SERVICE_BACKENDS for t in ("direct", "http")])
def where(request: pytest.FixtureRequest):
    return request.param


def client_for(
    request: pytest.FixtureRequest, tmp_path: Path, where: tuple[str, str], mode: str | None
) -> ApiClient:
    serve(request, tmp_path, where[0], mode)
    request.addfinalizer(lambda: bootstrap.install(None))
    if where[1] == "direct":
        return DirectClient(AGENT_KEY)
    return HttpClient(request.getfixturevalue("http_server"), AGENT_KEY)


def seed(client: ApiClient) -> None:
    """A genuine preference, and one proposal as the guard leaves it (by the agent: a
    proposal names its writer)."""
    ops = [
        {"op": "add", "path": "/content/preferences/-", "value": {"text": "Prefers tea"}},
        {"op": "add", "path": "/content/pending_confirmations/-", "value": PROPOSAL},
    ]
    assert create(client, ops=ops).status == 201


def assembled(client: ApiClient, **body: Any) -> dict[str, Any]:
    reply = client.request("POST", f"{USER}/context:assemble", body)
    assert reply.status == 200, reply.data
    return reply.data


def user_dynamic(result: dict[str, Any]) -> dict[str, Any]:
    [found] = [d for d in result["documents"] if d["binding_id"] == "user_dynamic"]
    return found["document"]["content"]


def test_pending_items_are_left_out_of_context_by_default(request, tmp_path, where):
    client = client_for(request, tmp_path, where, None)
    seed(client)
    result = assembled(client)
    content = user_dynamic(result)
    assert (
        "pending_confirmations" not in content
        and content["preferences"][0]["text"] == "Prefers tea"
    )
    assert result["pending_sections"] == [
        {
            "binding_id": "user_dynamic",
            "path": "user_dynamic.json",
            "section": "/pending_confirmations",
            "items": 1,
            "shown": "omitted",
        }
    ]
    text = assembled(client, render="text")["rendered"]
    assert "finance" not in text and "Prefers tea" in text
    stored = client.request("GET", doc_url()).data["document"]["content"]  # a GET is unchanged
    assert len(stored["pending_confirmations"]) == 1


def test_a_profile_may_show_pending_items_marked_unverified(request, tmp_path, where):
    client = client_for(request, tmp_path, where, "mark")
    seed(client)
    result = assembled(client)
    [item] = user_dynamic(result)["pending_confirmations"]
    assert item["unverified"] is True and item["candidate"] == PROPOSAL["candidate"]
    assert result["pending_sections"][0]["shown"] == "marked"
    assert "unverified: true" in assembled(client, render="text")["rendered"]


def proposal_url(client: ApiClient) -> str:
    queue = client.as_key(ADMIN_KEY).request("GET", f"{USER}/proposals")
    [proposal] = queue.data["proposals"]
    return f"{USER}/proposals/{proposal['proposal_id']}"


def test_an_approval_stamps_the_reviewer_into_the_items_evidence(request, tmp_path, where):
    client = client_for(request, tmp_path, where, None)
    seed(client)
    reply = client.as_key(ADMIN_KEY).request("POST", proposal_url(client) + "/approve")
    assert reply.status == 200, reply.data
    approved = client.request("GET", doc_url()).data["document"]["content"]["preferences"][1]
    evidence = approved["evidence"]
    assert (
        evidence["reviewed_by"] == "dev-admin"
        and evidence["reviewed_at"] == reply.data["reviewed_at"]
    )
    assert evidence["snapshot_uri"] == STAMPED["snapshot_uri"]


def removal(index: int, candidate: Any) -> dict[str, Any]:
    return {
        **PROPOSAL,
        "candidate": candidate,
        "target_path": f"/preferences/{index}",
        "op": "remove",
        "reasons": ["trust_ceiling"],
    }


def test_a_held_removal_is_approved_rejected_or_refused_when_stale(request, tmp_path, where):
    client = client_for(request, tmp_path, where, None)
    admin = client.as_key(ADMIN_KEY)
    tea, coffee = {"text": "Prefers tea"}, {"text": "Prefers coffee"}
    ops = [
        {"op": "add", "path": "/content/preferences/-", "value": tea},
        {"op": "add", "path": "/content/preferences/-", "value": coffee},
        {"op": "add", "path": "/content/pending_confirmations/-", "value": removal(0, tea)},
    ]
    assert create(client, ops=ops).status == 201
    url = proposal_url(client)
    edit = admin.request("POST", url + "/edit", {"candidate": {"text": "x"}})
    assert edit.status == 422 and edit.error_code == "PROPOSAL_NOT_EDITABLE", edit.data
    etag = client.request("GET", doc_url()).headers["etag"]
    moved = [{"op": "remove", "path": "/content/preferences/0"}]  # tea gone: coffee at 0
    headers = {"If-Match": etag, "Idempotency-Key": "move"}
    assert admin.request("PATCH", doc_url(), {"ops": moved}, headers=headers).status == 200
    stale = admin.request("POST", url + "/approve")
    assert stale.status == 409 and stale.error_code == "PROPOSAL_STALE", stale.data
    assert client.request("GET", doc_url()).data["document"]["content"]["preferences"] == [coffee]


def test_an_approved_removal_removes_the_item(request, tmp_path, where):
    client = client_for(request, tmp_path, where, None)
    admin = client.as_key(ADMIN_KEY)
    tea = {"text": "Prefers tea"}
    ops = [
        {"op": "add", "path": "/content/preferences/-", "value": tea},
        {"op": "add", "path": "/content/pending_confirmations/-", "value": removal(0, tea)},
    ]
    assert create(client, ops=ops).status == 201
    assert admin.request("POST", proposal_url(client) + "/approve").status == 200
    content = client.request("GET", doc_url()).data["document"]["content"]
    assert content["preferences"] == [] and content["pending_confirmations"] == []
