"""Importance-aware ranking (issue 15, capability 7; docs/api.md "Ranking") and
short-term memory in context assembly, on mosaic-v1 (search_rules.ranking: relevance 0.7,
importance 0.3; short_term expires after 24 hours), both backends and transports."""

from __future__ import annotations

from typing import Any

from tests.api.forgetting import drain_forget
from tests.api.test_events import drain, event, ids, post, search
from tests.clients import ApiClient, Reply
from tests.related.conftest import World

BASE = "/v1/tenants/t1/users/u1"
DAY = 86400


def remember(client: ApiClient, n: int, digest: str, importance: float | None) -> Reply:
    body = event(
        event_id=f"evt-{n}", digest=digest, importance=importance, keywords=[], project_ids=[]
    )
    if importance is None:
        body.pop("importance")
    return post(client, body, f"e{n}", BASE)


def seed(client: ApiClient, related: World) -> None:
    assert (
        remember(client, 1, "TypeScript TypeScript TypeScript for backend services", 0.1).status
        == 201
    )
    assert remember(client, 2, "TypeScript chosen after the outage review", 0.95).status == 201
    drain(related.services)


def test_the_profiles_blend_lets_importance_lead(mosaic: ApiClient, related: World):
    seed(mosaic, related)
    plain = search(mosaic, BASE, text="TypeScript", recency_half_life_days=3650)
    assert ids(plain)[0] == "evt-1"  # by relevance alone (the plain decay path)
    blended = search(mosaic, BASE, text="TypeScript")
    assert ids(blended) == ["evt-2", "evt-1"]
    top = blended.data["results"][0]
    assert top["ranking"]["importance"] == 0.95 and top["event"]["importance"] == 0.95
    assert 0 < top["score"] <= 1


def test_a_requests_ranking_replaces_the_profiles(mosaic: ApiClient, related: World):
    seed(mosaic, related)
    relevance_only = {"relevance": 1.0, "importance": 0.0}
    reply = search(mosaic, BASE, text="TypeScript", ranking=relevance_only)
    assert ids(reply) == ["evt-1", "evt-2"]


def test_ranking_requests_that_cannot_work_are_refused(mosaic: ApiClient, related: World):
    for body, field in (
        ({"ranking": {"relevance": 0, "importance": 0}}, ["body", "ranking"]),
        ({"ranking": {"relevance": 1}, "recency_half_life_days": 3}, ["body", "ranking"]),
        ({"ranking": {"relevance": 2}}, ["body", "ranking", "relevance"]),
        ({"ranking": {"weight": 1}}, ["body", "ranking", "weight"]),
    ):
        reply = search(mosaic, BASE, text="x", **body)
        assert reply.status == 400, (body, reply.data)
        assert reply.data["error"]["details"]["location"] == field, reply.data


def test_importance_must_be_a_number_from_0_to_1(mosaic: ApiClient):
    for bad in (1.5, -0.1, "high", True):
        reply = post(mosaic, event(event_id="evt-x", importance=bad), f"bad-{bad}", BASE)
        assert reply.status == 400, (bad, reply.data)


def short_term(client: ApiClient, content: str) -> Reply:
    item: dict[str, Any] = {
        "id": "m1",
        "type": "episodic",
        "content": content,
        "importance": 0.6,
        "timestamp": "2026-11-24T10:00:00Z",
    }
    op = {"op": "add", "path": "/content/memories/-", "value": item}
    return client.request(
        "PATCH",
        f"{BASE}/documents/mosaic/short_term.json",
        {"ops": [op]},
        {"If-None-Match": "*", "Idempotency-Key": "st"},
    )


def assembled(client: ApiClient) -> list[str]:
    reply = client.request("POST", f"{BASE}/context:assemble", {})
    assert reply.status == 200, reply.data
    return [d["binding_id"] for d in reply.data["documents"]]


def test_short_term_memory_leaves_context_when_it_expires(mosaic: ApiClient, related: World):
    assert short_term(mosaic, "Debugging the login flow").status == 201
    assert "short_term" in assembled(mosaic)
    related.clock.advance(DAY)
    assert "short_term" not in assembled(mosaic)


def long_term(client: ApiClient) -> list[dict[str, Any]]:
    reply = client.request("GET", f"{BASE}/documents/mosaic/long_term.json")
    return reply.data["document"]["content"]["memories"] if reply.status == 200 else []


def test_repeated_episodes_are_promoted_into_long_term_memory(mosaic: ApiClient, related: World):
    texts = [
        "User asked how to type a generic function in TypeScript",
        "User asked how to type a generic function in TypeScript again",
        "user asked how to type a generic function in typescript",
    ]
    assert short_term(mosaic, "Working on the parser").status == 201  # uses mosaic-v1
    for n, text in enumerate(texts[:2]):
        assert remember(mosaic, n, text, 0.6).status == 201
    drain(related.services)
    assert long_term(mosaic) == []  # two episodes are not a pattern yet
    assert remember(mosaic, 2, texts[2], 0.6).status == 201
    drain(related.services)
    (promoted,) = long_term(mosaic)
    assert promoted["type"] == "semantic" and promoted["importance"] == 0.9
    assert promoted["metadata"]["original_memories"] == ["evt-2", "evt-1", "evt-0"]
    history = mosaic.request("GET", f"{BASE}/documents/mosaic/long_term.json:history")
    (change,) = history.data["changes"]
    assert (change["actor"], change["reason"]) == ("memnet-promotion", "promotion")

    assert remember(mosaic, 3, texts[0] + " today", 0.6).status == 201
    drain(related.services)
    (again,) = long_term(mosaic)  # the same pattern: its item replaced, not a second one
    assert again["id"] == promoted["id"] and again["metadata"]["episodes"] == 4


def test_forgetting_the_conversation_a_promoted_item_came_from_retracts_it(
    mosaic: ApiClient, related: World
):
    text = "User asked how to rotate the API keys"
    assert short_term(mosaic, "Working on the parser").status == 201  # uses mosaic-v1
    for n in range(3):
        body = event(
            event_id=f"evt-k{n}",
            digest=f"{text} {'again ' * n}".strip(),
            keywords=[],
            project_ids=[],
            evidence={"conversation_id": "sess-9"},
        )
        assert post(mosaic, body, f"k{n}", BASE).status == 201
    drain(related.services)
    (promoted,) = long_term(mosaic)
    assert promoted["evidence"]["conversation_id"] == "sess-9"
    forgot = mosaic.request("DELETE", f"{BASE}/conversations/sess-9")
    assert forgot.status == 202, forgot.data
    drain_forget(related.services)
    assert long_term(mosaic) == []


def test_promotion_writes_nothing_when_nothing_changed_and_nothing_for_other_users(
    mosaic: ApiClient, related: World
):
    assert short_term(mosaic, "Working on the parser").status == 201
    for n in range(3):
        assert remember(mosaic, n, "User prefers tabs over spaces", 0.6).status == 201
    drain(related.services)
    url = f"{BASE}/documents/mosaic/long_term.json:history"
    before = mosaic.request("GET", url).data["changes"]
    for n in range(3, 6):  # unrelated events: the pattern is unchanged
        assert remember(mosaic, n, f"Unrelated note number {n} about lunch", 0.2).status == 201
    drain(related.services)
    assert mosaic.request("GET", url).data["changes"] == before
    other = "/v1/tenants/t1/users/stranger"
    for n in range(3):  # a user who holds no mosaic-v1 document gets none
        body = event(
            event_id=f"evt-s{n}",
            digest="User prefers tabs over spaces",
            keywords=[],
            project_ids=[],
        )
        assert post(mosaic, body, f"s{n}", other).status == 201
    drain(related.services)
    reply = mosaic.request("GET", f"{other}/documents/mosaic/long_term.json")
    assert reply.status == 404
