"""Real responses of every route validate against the OpenAPI document (its response
models, error shape, statuses and headers), through the functions and the local HTTP
server: the models describe what the server returns, not what we hope it does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

import function_app
from funchost import functions_of
from funchost.route_templates import Router
from memnet.api import openapi
from memnet.bootstrap import Services
from tests.api.forgetting import build, drain_forget
from tests.clients import ApiClient, DirectClient, HttpClient, Reply
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, doc_url

USER = "/v1/tenants/t1/users/u1"
SNAP = USER + "/snapshots/conv-1/snap-1"
DOCUMENT = openapi.document()
OPERATIONS = {
    (method.upper(), path): operation
    for path, item in DOCUMENT["paths"].items()
    for method, operation in item.items()
}


class Checked:
    """A client that checks every reply against the operation the request reached."""

    def __init__(self, inner: ApiClient, seen: set[str]) -> None:
        self.inner, self.seen = inner, seen

    def as_key(self, key: str | None) -> Checked:
        return Checked(self.inner.as_key(key), self.seen)

    def request(self, method: str, path: str, body: Any = None, **kw: Any) -> Reply:
        reply = self.inner.request(method, path, body, **kw)
        operation = _operation(method, path)
        self.seen.add(operation["operationId"])
        _check(operation, reply)
        return reply


def _operation(method: str, path: str) -> dict[str, Any]:
    found = Router(functions_of(function_app.app).http_routes, prefix="").resolve(
        method, path.split("?")[0]
    )
    assert found.route is not None, (method, path)
    template = "/" + found.route.route.replace("{*", "{")
    suffix = re.search(r":[a-z]+$", found.params.get("path", ""))  # :history, :diff, :revert
    if suffix:
        template += suffix.group(0)
    if found.params.get("user_id", "").endswith(":export"):
        template += ":export"
    if found.params.get("path") == "":  # a namespace's listing: the catch-all empty
        template = template.rpartition("{")[0]
    return OPERATIONS[(method, template)]


def _check(operation: dict[str, Any], reply: Reply) -> None:
    responses = operation["responses"]
    response = responses.get(str(reply.status), responses["default"])
    assert str(reply.status) in responses, (operation["operationId"], reply.status, reply.data)
    media = reply.headers.get("content-type", "application/json").split(";")[0]
    if media != "application/json":  # a file: one of the operation's media types
        assert media in response["content"], (operation["operationId"], media)
        return
    schema = response["content"]["application/json"]["schema"]
    root = {"components": DOCUMENT["components"], **schema}
    errors = [e.message for e in Draft202012Validator(root).iter_errors(reply.data)]
    assert not errors, (operation["operationId"], reply.status, errors[:3], reply.data)
    for name, header in response.get("headers", {}).items():
        if name.lower() in reply.headers:
            value = reply.headers[name.lower()]
            assert Draft202012Validator(header["schema"]).is_valid(value), (name, value)


@pytest.fixture(params=["local"])
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield build(request, tmp_path / "data")


@pytest.fixture(params=["direct", "http"])
def agent(request: pytest.FixtureRequest, services: Services) -> Checked:
    if request.param == "direct":
        return Checked(DirectClient(AGENT_KEY), set())
    return Checked(HttpClient(request.getfixturevalue("http_server"), AGENT_KEY), set())


def _documents(agent: Checked) -> None:
    url, admin = doc_url(), agent.as_key(ADMIN_KEY)
    ops = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "Short answers."}}]
    created = agent.request(
        "PATCH", url, {"ops": ops}, headers={"If-None-Match": "*", "Idempotency-Key": "k1"}
    )
    assert created.status == 201, created.data
    assert agent.request("GET", url).status == 200
    assert agent.request("GET", url + ":history?limit=5").status == 200
    assert agent.request("GET", url + ":why?path=/preferences/0").status == 200
    assert agent.request("GET", url + ":why?path=/preferences/9").status == 404
    change_id = created.data["document"]["change_id"]
    assert agent.request("GET", f"{url}?as_of={change_id}").status == 200
    assert agent.request("GET", f"{url}:diff?from={change_id}").status == 200
    assert agent.request("GET", f"{url}:diff?from=latest").status == 400
    content = agent.request("GET", url).data["document"]["content"]
    for etag, status in ((created.data["etag"], 200), ('"0x0"', 412)):
        headers = {"If-Match": etag, "Idempotency-Key": f"put-{status}"}
        assert admin.request("PUT", url, {"content": content}, headers=headers).status == status
    assert agent.request("PATCH", url, {"ops": []}, headers={"Idempotency-Key": "k3"}).status == 428
    _reverts(admin, url, created.data["document"]["change_id"])
    assert agent.request("PATCH", url, {"ops": 1}, headers={"If-None-Match": "*"}).status == 400
    assert agent.request("GET", doc_url("user/nothing.json")).status == 404
    listing = USER + "/documents/user/"
    assert agent.request("GET", listing + "?limit=1").status == 200
    assert agent.request("GET", listing + "?continuation=x%20y").status == 400
    assert agent.request("GET", USER + "/documents/nowhere/").status == 404


def _reverts(admin: Checked, url: str, first: str) -> None:
    latest = admin.request("GET", url).data["etag"]
    for body, status in (
        ({"to_change_id": first}, 200),
        ({"undo_change_id": first}, 422),
        ({"to_change_id": "chg_" + "0" * 28}, 404),
        ({}, 400),
    ):
        headers = {"If-Match": latest, "Idempotency-Key": f"revert-{status}"}
        assert admin.request("POST", url + ":revert", body, headers=headers).status == status
    headers = {"Idempotency-Key": "revert-428"}
    assert (
        admin.request("POST", url + ":revert", {"to_change_id": first}, headers=headers).status
        == 428
    )


def _context_and_events(agent: Checked) -> None:
    assert agent.request("POST", USER + "/context:assemble", {"render": "text"}).status == 200
    event = {"timestamp": "2026-11-24T10:00:00Z", "source_type": "chat", "digest": "Hello."}
    written = agent.request("POST", USER + "/events", event, headers={"Idempotency-Key": "e1"})
    assert written.status == 201, written.data
    event_id = written.data["event"]["event_id"]
    assert agent.request("GET", f"{USER}/events/{event_id}").status == 200
    assert agent.request("POST", USER + "/events:search", {"text": "hello"}).status == 200
    assert agent.request("POST", USER + "/events:search", {"top_k": "5"}).status == 400
    assert agent.as_key(ADMIN_KEY).request("POST", "/v1/admin/reindex", {}).status == 202
    assert agent.as_key(None).request("POST", USER + "/events:search", {}).status == 401


def _snapshots(agent: Checked) -> None:
    admin = agent.as_key(ADMIN_KEY)
    message = {"id": "m1", "role": "user", "text": "Hi", "timestamp": "2026-11-24T10:00:00Z"}
    assert agent.request("PUT", SNAP, {"messages": [message]}).status == 202
    assert admin.request("GET", SNAP).status == 200
    assert agent.request("GET", SNAP + "/replay").status == 200
    assert admin.request("POST", SNAP + "/replay/patches/0/retry").status in (404, 409)
    assert admin.request("POST", SNAP + "/replay/redrive").status == 409
    assert admin.request("GET", USER + "/replays/unresolved").status == 200


def _governance(agent: Checked, services: Services) -> None:
    admin, privacy = agent.as_key(ADMIN_KEY), agent.as_key(PRIVACY_KEY)
    hold = "/v1/admin/tenants/t1"
    assert admin.request("PUT", hold + "/hold", {"reason": "audit"}).status == 200
    assert admin.request("PUT", hold + "/users/u2/hold", {"reason": "x", "kinds": []}).status == 400
    assert admin.request("PUT", hold + "/users/u2/hold", {"reason": "case 7"}).status == 200
    assert admin.request("GET", hold + "/holds").status == 200
    assert admin.request("DELETE", hold + "/users/u2/hold").status == 200
    assert admin.request("DELETE", hold + "/hold").status == 200
    assert privacy.request("DELETE", USER + "/conversations/conv-9").status == 202
    assert privacy.request("GET", USER + "/forget/conversations/conv-9").status == 200
    assert privacy.request("DELETE", USER).status == 202
    drain_forget(services)
    status = privacy.request("GET", USER + "/forget").data
    assert privacy.request("GET", status["receipt_url"]).status == 200


def _inventory_and_export(agent: Checked, services: Services) -> None:
    from tests.api.test_export import drain_exports

    admin = agent.as_key(ADMIN_KEY)
    assert agent.request("GET", USER + "/events?limit=1").status == 200
    assert agent.request("GET", USER + "/events?after=x").status == 400
    assert admin.request("GET", USER + "/snapshots").status == 200
    assert agent.request("GET", USER + "/snapshots").status == 403
    queued = admin.request("POST", USER + ":export?profile_id=project-copilot-v1")
    assert queued.status == 202, queued.data
    url = queued.data["status_url"]
    assert admin.request("GET", url + "/files/manifest.json").status == 409
    drain_exports(services)
    job = admin.request("GET", url).data
    for name in job["files"]:
        assert admin.request("GET", url + "/files/" + name).status == 200
    assert admin.request("GET", url + "/files/nope.jsonl").status == 404
    assert admin.request("DELETE", url).status == 200
    assert admin.request("GET", url).status == 404


def _proposals(agent: Checked) -> None:
    admin = agent.as_key(ADMIN_KEY)
    fact = {
        "fact": "Lives in Porto",
        "confidence": 0.5,
        "evidence": {"message_ids": ["m1"]},
        "last_verified_at": "2026-11-24T10:00:00Z",
    }
    ops = [{"op": "add", "path": "/content/durable_facts/-", "value": fact}]
    body = {"ops": ops, "confidence": 0.5, "evidence": {"message_ids": ["m1"]}}
    current = agent.request("GET", doc_url()).headers["etag"]
    redirected = agent.request(
        "PATCH", doc_url(), body, headers={"If-Match": current, "Idempotency-Key": "p1"}
    )
    assert redirected.status == 200, redirected.data
    queue = agent.request("GET", USER + "/proposals")
    assert queue.status == 200 and len(queue.data["proposals"]) == 1, queue.data
    proposal = queue.data["proposals"][0]["proposal_id"]
    url = f"{USER}/proposals/{proposal}"
    assert agent.request("POST", url + "/approve").status == 403  # no review role
    assert admin.request("POST", url + "/approve").status == 200
    assert admin.request("POST", url + "/approve").status == 200  # replayed
    assert admin.request("POST", url + "/reject").status == 409
    assert admin.request("POST", url + "/promote").status == 400


def test_every_route_answers_as_its_openapi_operation_says(agent: Checked, services: Services):
    assert agent.as_key(None).request("GET", "/v1/health").status == 200
    assert agent.as_key(None).request("GET", "/v1/openapi.json").status == 200
    assert agent.as_key(ADMIN_KEY).request("GET", "/v1/health/details").status == 200
    assert agent.request("GET", "/v1/me").status == 200
    assert agent.request("GET", "/v1/profiles/project-copilot-v1").status == 200
    assert agent.request("GET", "/v1/profiles/nope").status == 403
    assert agent.as_key(ADMIN_KEY).request("GET", "/v1/profiles/nope").status == 404
    _documents(agent)
    _context_and_events(agent)
    _snapshots(agent)
    _proposals(agent)
    _inventory_and_export(agent, services)
    _governance(agent, services)
    every = {operation["operationId"] for operation in OPERATIONS.values()}
    assert agent.seen == every
