"""The MCP tests' callers, services and client: the real mcp SDK client over Streamable
HTTP against the real functions of ``function_app.py`` served by the local host."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key
from tests.conftest import REPO, make_settings

MCP_PATH = "/runtime/webhooks/mcp"
READER_KEY, T1_WRITER_KEY = "mcp-reader-key", "mcp-t1-writer-key"
EXTRA_CALLERS = [
    {
        "caller_id": "mcp-reader",
        "key_sha256": hash_key(READER_KEY),
        "tenants": ["t1"],
        "profiles": ["project-copilot-v1"],
        "roles": ["read"],
    },
    {
        "caller_id": "mcp-t1-writer",
        "key_sha256": hash_key(T1_WRITER_KEY),
        "tenants": ["t1"],
        "profiles": ["project-copilot-v1"],
        "roles": ["read", "write"],
    },
]


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[None]:
    """The service on memory storage, with the development callers and two narrower ones."""
    dev = json.loads((REPO / "callers.dev.json").read_text())
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [*dev["callers"], *EXTRA_CALLERS]}))
    bootstrap.install(
        bootstrap.build(make_settings(tmp_path / "data", storage="memory", callers_file=callers))
    )
    yield
    bootstrap.install(None)


@pytest.fixture
def mcp_url(http_server: str, memory: None) -> str:
    return http_server + MCP_PATH


@dataclass(frozen=True)
class McpClient:
    """One MCP session per call, as a stateless client would open them."""

    url: str
    key: str | None
    headers: tuple[tuple[str, str], ...] = ()  # more headers for every request

    def list_tools(self) -> types.ListToolsResult:
        return anyio.run(self._run, lambda s: s.list_tools())

    def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        return anyio.run(self._run, lambda s: s.call_tool(tool, arguments))

    async def _run(self, use: Any) -> Any:
        headers = {} if self.key is None else {"Authorization": f"Bearer {self.key}"}
        headers.update(self.headers)
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            streamable_http_client(self.url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await use(session)


def error_of(result: types.CallToolResult) -> dict[str, Any]:
    """The API error a tool result carries (it must be a tool error)."""
    assert result.is_error, result
    assert result.structured_content is not None
    error: dict[str, Any] = result.structured_content["error"]
    assert error["request_id"].startswith("req_")
    return error


def text_of(result: types.CallToolResult) -> str:
    [block] = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def status_of(result: types.CallToolResult) -> int:
    assert result.structured_content is not None
    return int(result.structured_content["status"])
