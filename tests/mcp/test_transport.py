"""The local host's MCP endpoint over raw HTTP: malformed JSON-RPC, batches, unknown
methods and tools, oversized bodies and the wrong headers get JSON-RPC errors, never a
5xx; GET and DELETE are 405 (a stateless endpoint has no stream and no session)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import azure.functions as func
import httpx
import pytest

import function_app
from funchost import start_in_thread
from funchost.mcp import McpEndpoint, ServerOptions
from tests.conftest import AGENT_KEY
from tests.mcp.conftest import MCP_PATH, McpClient, text_of

LIMIT = 4096
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "Authorization": f"Bearer {AGENT_KEY}",
}


@pytest.fixture(scope="module")
def small_host() -> Iterator[str]:
    server = start_in_thread(function_app.app, route_prefix="", max_body_bytes=LIMIT)
    yield server.url + MCP_PATH
    server.stop()


def post(url: str, body: bytes | str, **headers: str) -> httpx.Response:
    data = body.encode() if isinstance(body, str) else body
    return httpx.post(url, content=data, headers={**HEADERS, **headers}, timeout=10)


def rpc(method: str, params: dict[str, Any] | None = None, id: int = 1) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def error_of(response: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert body["jsonrpc"] == "2.0" and body["error"]["code"] == code, body
    return body


def test_malformed_json_is_a_parse_error_with_a_null_id(small_host: str):
    for body in (b"{", b"\xff\xfe", b""):
        assert error_of(post(small_host, body), 400, -32700)["id"] is None


def test_a_body_in_utf16_is_a_parse_error(small_host: str):
    """JSON-RPC over HTTP is UTF-8; json.loads(bytes) alone would guess UTF-16."""
    assert error_of(post(small_host, rpc("ping").encode("utf-16")), 400, -32700)["id"] is None
    assert error_of(post(small_host, rpc("ping").encode("utf-16-le")), 400, -32700)["id"] is None


def test_a_message_that_is_not_json_rpc_is_an_invalid_request(small_host: str):
    for body in ('{"id": 1}', '{"jsonrpc": "1.0", "id": 1, "method": "ping"}', "42", "null"):
        error_of(post(small_host, body), 400, -32600)


def test_a_batch_is_refused(small_host: str):
    error_of(post(small_host, f"[{rpc('ping')}]"), 400, -32600)


def test_an_unknown_method_is_method_not_found_with_its_id(small_host: str):
    assert error_of(post(small_host, rpc("resources/list", id=7)), 200, -32601)["id"] == 7


def test_an_unknown_tool_and_bad_params_are_invalid_params(small_host: str):
    error_of(post(small_host, rpc("tools/call", {"name": "nope"})), 200, -32602)
    error_of(post(small_host, rpc("tools/call", {"arguments": {}})), 200, -32602)
    error_of(post(small_host, rpc("initialize", {"protocolVersion": 3})), 200, -32602)


def test_an_oversized_body_is_413_in_json_rpc(small_host: str):
    body = rpc("ping", {"pad": "x" * LIMIT})
    error_of(post(small_host, body), 413, -32600)


def test_the_transport_headers_are_checked(small_host: str):
    error_of(post(small_host, rpc("ping"), Accept="application/json"), 406, -32000)
    assert post(small_host, rpc("ping"), Accept="*/*").status_code == 200
    error_of(post(small_host, rpc("ping"), **{"Content-Type": "text/plain"}), 415, -32600)
    error_of(post(small_host, rpc("ping"), **{"Content-Encoding": "gzip"}), 415, -32600)
    error_of(post(small_host, rpc("ping"), **{"MCP-Protocol-Version": "1999-01-01"}), 400, -32600)


def test_get_and_delete_are_405(small_host: str):
    for method in ("GET", "DELETE"):
        response = httpx.request(method, small_host, headers=HEADERS, timeout=10)
        assert response.status_code == 405 and response.headers["allow"] == "POST"


def test_notifications_are_accepted_with_202_and_no_body(small_host: str):
    note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
    response = post(small_host, note)
    assert response.status_code == 202 and response.content == b""


def test_initialize_answers_the_clients_revision_or_the_newest_it_speaks(small_host: str):
    def version(asked: str) -> str:
        params = {
            "protocolVersion": asked,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        response = post(small_host, rpc("initialize", params))
        assert response.status_code == 200
        return str(response.json()["result"]["protocolVersion"])

    assert version("2025-03-26") == "2025-03-26"
    assert version("2030-01-01") == "2025-11-25"


def test_initialize_names_the_server_as_host_json_does(small_host: str):
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    }
    result = post(small_host, rpc("initialize", params)).json()["result"]
    assert result["serverInfo"]["name"] == "mem.net"
    assert "Authorization" in result["instructions"]
    assert result["capabilities"] == {"tools": {"listChanged": False}}


def test_ping_answers_an_empty_result(small_host: str):
    assert post(small_host, rpc("ping")).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


# -- a function that raises, or returns plain text ---------------------------------------


def tool_app() -> func.FunctionApp:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)

    @app.mcp_tool_trigger(arg_name="context", tool_name="broken", description="raises")
    def broken(context: str) -> str:
        raise RuntimeError("a bug")

    @app.mcp_tool_trigger(arg_name="context", tool_name="echo", description="plain text")
    def echo(context: str) -> str:
        return str(json.loads(context)["transport"]["properties"]["headers"]["x-probe"])

    return app


@pytest.fixture(scope="module")
def tool_host() -> Iterator[str]:
    server = start_in_thread(tool_app(), route_prefix="", run_timers=False)
    yield server.url + MCP_PATH
    server.stop()


def test_a_tool_function_that_raises_is_a_tool_error_not_a_5xx(tool_host: str):
    result = McpClient(tool_host, None).call("broken", {})
    assert result.is_error
    assert "request_id=req_" in text_of(result)


def test_a_tool_sees_the_request_headers_as_the_extension_passes_them(tool_host: str):
    body = rpc("tools/call", {"name": "echo", "arguments": {}})
    result = post(tool_host, body, **{"X-Probe": "seen"}).json()["result"]
    assert result["content"] == [{"type": "text", "text": "seen"}]
    assert result["isError"] is False


def test_deeply_nested_json_is_a_parse_error_not_a_dropped_connection(tool_host: str):
    for body in (
        "[" * 100_000 + "]" * 100_000,
        rpc("tools/call", {"name": "echo", "arguments": {}}).replace("{}", "[" * 3000 + "]" * 3000),
    ):
        assert error_of(post(tool_host, body), 400, -32700)["id"] is None


def test_nested_arguments_that_parse_get_an_answer(tool_host: str):
    deep = "[" * 900 + "]" * 900
    body = rpc("tools/call", {"name": "echo", "arguments": {"a": 1}}).replace("1}", deep + "}")
    response = post(tool_host, body)
    assert response.status_code == 200 and response.json()["id"] == 1


def test_an_unexpected_failure_is_an_internal_error_with_the_request_id(tmp_path):
    host_json = tmp_path / "host.json"
    host_json.write_text(json.dumps({"extensions": {"mcp": {"instructions": {"not": "text"}}}}))
    endpoint = McpEndpoint(tool_app(), ServerOptions.from_host_json(host_json))
    client = {"name": "t", "version": "1"}
    params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    lower = {name.lower(): value for name, value in HEADERS.items()}
    response = endpoint.handle("POST", lower, rpc("initialize", params, id=5).encode())
    body = json.loads(response.body)
    assert response.status == 500 and body["id"] == 5 and body["error"]["code"] == -32603
    request_id = dict(response.headers)["x-request-id"]
    assert request_id.startswith("req_") and request_id in body["error"]["message"]


@pytest.mark.parametrize("bad_id", ["true", "1.0", "null", "{}", "[1]"])
def test_an_id_that_is_not_a_string_or_integer_is_an_invalid_request(small_host: str, bad_id):
    body = f'{{"jsonrpc": "2.0", "id": {bad_id}, "method": "ping"}}'
    assert error_of(post(small_host, body), 400, -32600)["id"] is None


def test_tools_list_carries_no_members_of_the_stateless_revision(small_host: str):
    result = post(small_host, rpc("tools/list")).json()["result"]
    assert set(result) == {"tools"}
