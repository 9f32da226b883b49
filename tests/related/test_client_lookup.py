"""Lookups and short-lived documents through the Python client (soorma-coala-v1)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from memnet_client import BadRequest, Conflict, MemnetClient, NotFound

from tests.related.conftest import A2P_AGENT_KEY, A2P_USER_KEY, SOORMA_KEY, World


@pytest.fixture
def agent(http_server: str, related: World) -> Iterator[MemnetClient]:
    with MemnetClient(http_server, api_key=SOORMA_KEY, tenant="t1", user="u1") as client:
        yield client


def test_find_the_owner_of_a_sub_task_across_pages(agent: MemnetClient):
    for i in range(4):
        ops = [
            {"op": "replace", "path": "/content/task_id", "value": f"task-{i}"},
            {"op": "replace", "path": "/content/sub_tasks", "value": [f"sub-{i}", "shared"]},
        ]
        agent.patch_document("tasks", f"task-{i}.json", ops, etag=None)
    owners = agent.iter_documents("tasks", limit=1, lookup=("sub_task", "sub-3"))
    assert [d.path for d in owners] == ["task-3.json"]
    page = agent.list_documents("tasks", lookup=("sub_task", "shared"))
    assert len(page.documents) == 4
    with pytest.raises(BadRequest) as refused:
        agent.list_documents("tasks", lookup=("status", "running"))
    assert refused.value.code == "INVALID_QUERY"


def test_a_short_lived_document_shows_its_expiry_and_then_is_gone(
    agent: MemnetClient, related: World
):
    op = {"op": "add", "path": "/content/state/summary", "value": "draft"}
    written = agent.patch_document("working", "plan-1.json", [op], etag=None)
    assert written.document is not None and written.document.expires_at is not None
    assert agent.get_document("working", "plan-1.json").expires_at == written.document.expires_at
    related.clock.advance(86400)
    with pytest.raises(NotFound):
        agent.get_document("working", "plan-1.json")


@pytest.fixture
def a2p_clients(http_server: str, related: World) -> Iterator[tuple[MemnetClient, MemnetClient]]:
    with (
        MemnetClient(http_server, api_key=A2P_AGENT_KEY, tenant="t1", user="u1") as agent,
        MemnetClient(http_server, api_key=A2P_USER_KEY, tenant="t1", user="u1") as user,
    ):
        yield agent, user


def test_the_client_reviews_proposals(a2p_clients: tuple[MemnetClient, MemnetClient]):
    agent, user = a2p_clients
    value = {"id": "m1", "content": "Likes jaz", "category": "a2p:interests.music"}
    agent.patch_document(
        "a2p",
        "memories.json",
        [{"op": "add", "path": "/content/memories/a2p:semantic/-", "value": value}],
        etag=None,
        confidence=0.9,
        evidence={"conversation_id": "c1"},
    )
    (proposal,) = user.list_proposals()
    edited = {**value, "content": "Likes jazz"}
    answer = user.review_proposal(proposal["proposal_id"], "edit", candidate=edited)
    assert answer["status"] == "edited"
    assert user.get_document("a2p", "memories.json").content["memories"]["a2p:semantic"] == [edited]
    with pytest.raises(Conflict) as refused:
        user.review_proposal(proposal["proposal_id"], "reject")
    assert refused.value.code == "PROPOSAL_ALREADY_REVIEWED"
