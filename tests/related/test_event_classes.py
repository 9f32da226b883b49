"""Event digests carry a sensitivity class (issue 26; docs/search.md "Sensitivity") on
a2p-v1: the user's app (clearance sensitive) uploads a transcript; the replay's digest
has its clearance, and the agent and the moderator (clearance standard) find nothing of
it — not by search (words or newest first), not by id, not through MCP ``recall``. Both
backends and transports."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.test_events import event, ids, post, search
from tests.api.test_replay import drain as drain_replays
from tests.clients import ApiClient, HttpClient
from tests.mcp.conftest import MCP_PATH, McpClient
from tests.related.conftest import A2P_AGENT_KEY, A2P_USER_KEY, ADMIN_KEY, MOSAIC_KEY, World
from tests.related.test_ranking import long_term, short_term
from tests.related.test_sensitivity import REVIEWER_KEY

BASE = "/v1/tenants/t1/users/u1"
SNAP = f"{BASE}/snapshots/conv-7/snap-1"
SENSITIVE = {"profile_id": "a2p-v1", "class": "sensitive"}
TRANSCRIPT = {
    "profile_id": "a2p-v1",
    "messages": [
        {
            "id": "m1",
            "role": "user",
            "text": "My doctor confirmed I have type 1 diabetes.",
            "timestamp": "2026-11-24T10:00:00Z",
        }
    ],
}


def note(text: str, **more: Any) -> dict[str, Any]:
    """An event body recorded as the writer itself (service_id left to default)."""
    return event(digest=text, service_id=..., **more)


def refusal(client: ApiClient, method: str, url: str) -> tuple[Any, ...]:
    """A refused request as the caller sees it, without its request id."""
    reply = client.request(method, url)
    error = reply.data["error"]
    return reply.status, error["code"], error["message"], error["details"]


def test_a_replays_digest_has_its_uploaders_class_and_is_absent_below_it(
    a2p: ApiClient, related: World
):
    user = a2p.as_key(A2P_USER_KEY)
    assert user.request("PUT", SNAP, TRANSCRIPT).status == 202
    drain_replays(related.services)
    (event_id,) = user.request("GET", SNAP + "/replay").data["events"]
    found = search(user, BASE, text="diabetes")
    assert ids(found) == [event_id]
    assert found.data["results"][0]["event"]["sensitivity"] == SENSITIVE
    assert ids(search(a2p.as_key(ADMIN_KEY), BASE, text="diabetes")) == [event_id]
    for below in (a2p, a2p.as_key(REVIEWER_KEY)):
        for body in ({"text": "diabetes"}, {"text": ""}, {"keywords": ["diabetes"]}):
            reply = search(below, BASE, **body)
            assert ids(reply) == [] and reply.data["count"] == 0, body
        hidden = refusal(below, "GET", f"{BASE}/events/{event_id}")
        assert hidden == refusal(below, "GET", f"{BASE}/events/evt_{'0' * 24}_0")
        assert hidden[:2] == (404, "EVENT_NOT_FOUND")
    assert user.request("GET", f"{BASE}/events/{event_id}").status == 200


def test_mcp_recall_finds_a_classified_digest_only_for_a_cleared_caller(
    related: World, http_server: str
):
    user = HttpClient(http_server, A2P_USER_KEY)
    assert user.request("PUT", SNAP, TRANSCRIPT).status == 202
    drain_replays(related.services)
    arguments = {"tenant_id": "t1", "user_id": "u1", "query": "diabetes", "include": "events"}
    for key, count in ((A2P_USER_KEY, 1), (A2P_AGENT_KEY, 0), (REVIEWER_KEY, 0)):
        result = McpClient(http_server + MCP_PATH, key).call("recall", arguments)
        assert not result.is_error, result
        assert result.structured_content is not None
        assert result.structured_content["events"]["count"] == count, key


def test_a_writer_classifies_its_own_event_up_to_its_clearance(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    restricted = {"profile_id": "a2p-v1", "class": "restricted"}
    refused = post(a2p, note("Insulin pump settings", sensitivity=restricted), "a1", BASE)
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_EXCEEDED"), refused.data
    made = post(user, note("Insulin pump settings", sensitivity=restricted), "u1", BASE)
    assert made.status == 201 and made.data["event"]["sensitivity"] == restricted
    lowest = {"profile_id": "a2p-v1", "class": "standard"}
    plain = post(user, note("Insulin is cold in the fridge", sensitivity=lowest), "u2", BASE)
    assert plain.status == 201 and "sensitivity" not in plain.data["event"]  # hides nothing
    assert ids(search(a2p, BASE, text="insulin")) == [plain.data["event"]["event_id"]]
    assert len(ids(search(user, BASE, text="insulin"))) == 2
    # The user's stored answer is never replayed to the agent: its own request is checked.
    same = post(a2p, note("Insulin pump settings", sensitivity=restricted), "u1", BASE)
    assert (same.status, same.error_code) == (403, "CLEARANCE_EXCEEDED"), same.data


@pytest.mark.parametrize(
    ("sensitivity", "status", "code"),
    [
        ({"profile_id": "a2p-v1", "class": "secret"}, 400, "INVALID_FIELD"),
        ({"profile_id": "a2p-v1", "class": "Sensitive"}, 400, "INVALID_FIELD"),
        ({"profile_id": "mosaic-v1", "class": "standard"}, 403, "PROFILE_FORBIDDEN"),
        ({"profile_id": "a2p-v1"}, 400, "INVALID_FIELD"),
        ({"profile_id": "a2p-v1", "class": "sensitive", "x": 1}, 400, "INVALID_FIELD"),
        ("sensitive", 400, "INVALID_FIELD"),
        ({"profile_id": "a2p-v1", "class": "../x"}, 400, "INVALID_IDENTIFIER"),
    ],
)
def test_a_class_that_is_not_one_is_refused_and_stores_nothing(
    a2p: ApiClient, sensitivity: Any, status: int, code: str
):
    user = a2p.as_key(A2P_USER_KEY)
    reply = post(user, note("Bad class", sensitivity=sensitivity), "bad", BASE)
    assert (reply.status, reply.error_code) == (status, code), reply.data
    assert ids(search(user, BASE, text="class")) == []


def test_classified_episodes_are_never_promoted(related: World):
    from tests.clients import DirectClient
    from tests.related.test_ranking import BASE as MOSAIC_BASE

    mosaic, admin = DirectClient(MOSAIC_KEY), DirectClient(ADMIN_KEY)
    assert short_term(mosaic, "Working on the parser").status == 201  # the user uses mosaic-v1
    text = "User asked how to manage insulin doses"
    for n in range(3):
        body = event(event_id=f"evt-c{n}", digest=text, keywords=[], project_ids=[])
        assert post(admin, {**body, "sensitivity": SENSITIVE}, f"c{n}", MOSAIC_BASE).status == 201
    related.services.events.drain()
    assert long_term(mosaic) == []  # a lowest-class item would show them to everyone
    for n in range(3):
        body = event(event_id=f"evt-o{n}", digest=text, keywords=[], project_ids=[])
        assert post(admin, body, f"o{n}", MOSAIC_BASE).status == 201
    related.services.events.drain()
    (promoted,) = long_term(mosaic)
    assert sorted(promoted["metadata"]["original_memories"]) == ["evt-o0", "evt-o1", "evt-o2"]


def test_listing_events_leaves_out_a_class_above_the_caller(a2p: ApiClient):
    """``GET …/events`` (issue 27) honours classes as ``GET`` of one event does."""
    user = a2p.as_key(A2P_USER_KEY)
    restricted = {"profile_id": "a2p-v1", "class": "restricted"}
    hidden = post(user, note("Insulin pump settings", sensitivity=restricted), "u1", BASE)
    plain = post(user, note("Insulin is cold in the fridge"), "u2", BASE)
    every = [e.data["event"]["event_id"] for e in (hidden, plain)]
    for caller, seen in (
        (user, sorted(every)),
        (a2p, [every[1]]),
        (a2p.as_key(REVIEWER_KEY), [every[1]]),
    ):
        reply = caller.request("GET", f"{BASE}/events?limit=1")
        found = reply.data["events"]
        while reply.data["after"] is not None:
            reply = caller.request("GET", f"{BASE}/events?limit=1&after={reply.data['after']}")
            found += reply.data["events"]
        assert [e["event_id"] for e in found] == seen


def test_an_export_honours_the_askers_clearance_and_says_what_it_left_out(
    a2p: ApiClient, related: World
):
    """Issue 27: an export holds what the asker may see; a class above it is left out
    and the manifest says so (``complete: false``)."""
    from tests.api.test_export import drain_exports

    user = a2p.as_key(A2P_USER_KEY)
    restricted = {"profile_id": "a2p-v1", "class": "restricted"}
    assert (
        post(user, note("Insulin pump settings", sensitivity=restricted), "u1", BASE).status == 201
    )
    assert post(user, note("Insulin is cold in the fridge"), "u2", BASE).status == 201
    digests = {}
    for caller in (a2p, user):
        queued = caller.request("POST", f"{BASE}:export")
        assert queued.status == 202, queued.data
        drain_exports(related.services)
        job = caller.request("GET", queued.data["status_url"]).data
        assert job["status"] == "done", job
        events = caller.request("GET", job["files_url"] + "events-000001.jsonl").body
        digests[caller.key] = (sorted(json.loads(x)["digest"] for x in events.splitlines()), job)
    seen, job = digests[A2P_AGENT_KEY]
    assert seen == ["Insulin is cold in the fridge"]
    assert job["complete"] is False
    assert {"kind": "events", "reason": "1 events of classes above the caller's clearance"} in job[
        "omitted"
    ]
    seen, job = digests[A2P_USER_KEY]
    assert seen == ["Insulin is cold in the fridge", "Insulin pump settings"]
    assert not any(o["kind"] == "events" for o in job["omitted"])
