"""The examples of docs/client.md, run against the real server as written there."""

from __future__ import annotations

from typing import Any

import pytest
from memnet_client import MemnetClient
from memnet_client.errors import BadRequest

from tests.conftest import AGENT_KEY

EVIDENCE = {"conversation_id": "conv-42", "message_ids": ["m1"]}


def add_fact(content: Any) -> list[dict[str, Any]]:
    if content and any(f["fact"] == "Works from Lisbon" for f in content["durable_facts"]):
        return []
    fact = {
        "fact": "Works from Lisbon",
        "confidence": 0.9,
        "evidence": EVIDENCE,
        "last_verified_at": "2026-11-24T10:00:00Z",
    }
    return [{"op": "add", "path": "/content/durable_facts/-", "value": fact}]


def test_the_first_session_of_the_guide(http_server: str, services: object):
    with MemnetClient(http_server, api_key=AGENT_KEY) as memnet:
        alice = memnet.for_user("t1", "alice")
        context = alice.assemble_context("Need help with project alpha retrieval latency")
        assert context.documents == ()  # a new user: nothing yet
        alice.write_event(
            "User wants p95 retrieval latency under 200 ms.",
            source_type="chat",
            keywords=["latency"],
            project_ids=["project-alpha"],
        )
        op = {
            "op": "add",
            "path": "/content/preferences/-",
            "value": {"text": "Prefers concise answers."},
        }
        alice.update("user", "user_dynamic.json", lambda content: [op])
        hits = alice.search_events("latency", top_k=5)
        assert [hit.event.digest for hit in hits] == [
            "User wants p95 retrieval latency under 200 ms."
        ]
        assert len(alice.search_events("latency", dense_weight=0.3)) == 1  # no embedder: words
        with pytest.raises(BadRequest):
            alice.search_events("latency", dense_weight=2)
        message = {
            "id": "m1",
            "role": "user",
            "text": "I work from Lisbon.",
            "timestamp": "2026-11-24T10:00:00Z",
        }
        alice.put_snapshot("conv-42", "final", [message])
        assert alice.get_replay("conv-42", "final").status == "queued"
        context = alice.assemble_context("project alpha", render="text")
        assert context.rendered and "Prefers concise answers." in context.rendered


def test_the_update_example_of_the_guide(http_server: str, services: object):
    with MemnetClient(http_server, api_key=AGENT_KEY, tenant="t1", user="alice") as alice:
        first = alice.update(
            "user", "user_dynamic.json", add_fact, confidence=0.9, evidence=EVIDENCE
        )
        again = alice.update("user", "user_dynamic.json", add_fact)
    assert first.created and again.unchanged
    assert first.document is not None
    assert first.document.content["durable_facts"][0]["fact"] == "Works from Lisbon"
