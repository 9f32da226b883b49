"""Mosaic's MemoryPlugin functions (its memory architecture document) end to end
through the MCP tools on mosaic-v1 (docs/related/mosaic.md): save_memory is one
``remember`` (the event digest with its importance: the permanent, searchable store; and
the MemoryEntry in short-term session memory, which expires 24 hours after its last
write), retrieve_memory is ``recall`` (context with short-term and consolidated
long-term memory, events ranked relevance 0.7 + importance 0.3), clear_memory is
``forget`` of the session."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.forgetting import drain_forget
from tests.clients import DirectClient
from tests.mcp.conftest import MCP_PATH, McpClient
from tests.related.conftest import MOSAIC_KEY, World

SCOPE = {"tenant_id": "t1", "user_id": "u1", "profile_id": "mosaic-v1"}
BASE_IMPORTANCE = {"episodic": 0.6, "semantic": 0.8, "procedural": 0.7}  # Mosaic's


@pytest.fixture
def tools(http_server: str, related: World) -> McpClient:
    return McpClient(http_server + MCP_PATH, MOSAIC_KEY)


def save_memory(tools: McpClient, n: int, session_id: str, content: str, kind: str) -> None:
    """Mosaic's save_memory(session_id, content, type), as two remember calls."""
    entry = {
        "id": f"mem_{n}",
        "sessionId": session_id,
        "type": kind,
        "content": content,
        "importance": BASE_IMPORTANCE[kind],
        "timestamp": "2026-11-24T10:00:00Z",
        "evidence": {"conversation_id": session_id},
    }
    result = tools.call(
        "remember",
        {
            **SCOPE,
            "text": content,
            "source_type": kind,
            "importance": BASE_IMPORTANCE[kind],
            "conversation_id": session_id,
            "memory_binding": "short_term",
            "memory_path": "/memories/-",
            "memory_value": entry,
            "idempotency_key": f"save-{n}",
            "timestamp": "2026-11-24T10:00:00Z",
        },
    )
    assert not result.is_error, result
    assert result.structured_content is not None


CONSOLIDATED = {
    "id": "consolidated_mem_1",
    "type": "semantic",
    "content": "User consistently prefers TypeScript for backend services",
    "importance": 0.92,
    "timestamp": "2026-11-24T11:00:00Z",
    "metadata": {"source": "consolidation", "original_memories": ["mem_1", "mem_2"]},
}


def consolidate(related: World) -> None:
    """What Mosaic's hourly consolidation writes to long-term memory (here by hand; the
    consolidation job is not built, docs/related/mosaic.md)."""
    client = DirectClient(MOSAIC_KEY)
    op = {"op": "add", "path": "/content/memories/-", "value": CONSOLIDATED}
    reply = client.request(
        "PATCH",
        "/v1/tenants/t1/users/u1/documents/mosaic/long_term.json",
        {"ops": [op]},
        {"If-None-Match": "*", "Idempotency-Key": "consolidation-1"},
    )
    assert reply.status == 201, reply.data


def retrieve_memory(tools: McpClient, query: str, limit: int = 10) -> dict[str, Any]:
    result = tools.call("recall", {**SCOPE, "query": query, "top_k": limit})
    assert not result.is_error and result.structured_content is not None, result
    return result.structured_content


def memories(recalled: dict[str, Any], binding: str) -> list[str]:
    documents = {d["binding_id"]: d for d in recalled["context"]["documents"]}
    if binding not in documents:
        return []
    return [m["content"] for m in documents[binding]["document"]["content"]["memories"]]


def test_save_retrieve_and_clear_a_session(tools: McpClient, related: World):
    save_memory(tools, 1, "sess-1", "User mentioned TypeScript in passing", "episodic")
    save_memory(tools, 2, "sess-1", "User prefers TypeScript for new projects", "semantic")
    save_memory(tools, 3, "sess-2", "User reviews pull requests on Fridays", "procedural")
    related.services.events.drain()
    consolidate(related)

    recalled = retrieve_memory(tools, "TypeScript")
    ranked = recalled["events"]["results"]
    assert [r["event"]["digest"] for r in ranked][:2] == [
        "User prefers TypeScript for new projects",  # semantic 0.8 beats episodic 0.6
        "User mentioned TypeScript in passing",
    ]
    assert all(set(r["ranking"]) == {"relevance", "importance", "recency"} for r in ranked)
    assert len(memories(recalled, "short_term")) == 3
    assert memories(recalled, "long_term") == [CONSOLIDATED["content"]]

    # clear_memory("sess-1"): the session's digests and entries go, the rest stays.
    cleared = tools.call(
        "forget", {"tenant_id": "t1", "user_id": "u1", "conversation_id": "sess-1"}
    )
    assert not cleared.is_error, cleared
    drain_forget(related.services)
    after = retrieve_memory(tools, "TypeScript")
    assert after["events"]["results"] == []
    assert memories(after, "short_term") == ["User reviews pull requests on Fridays"]
    assert memories(after, "long_term") == [CONSOLIDATED["content"]]  # no session evidence

    # Short-term memory lasts 24 hours after its last write; long-term stays.
    related.clock.advance(86400)
    later = retrieve_memory(tools, "pull requests")
    assert memories(later, "short_term") == []
    assert memories(later, "long_term") == [CONSOLIDATED["content"]]
    assert [r["event"]["digest"] for r in later["events"]["results"]] == [
        "User reviews pull requests on Fridays"  # the digest is the permanent record
    ]
