"""Event digests through the API (spec 9.2, 10.5, 10.6): write, read, search, index
failures, reindex. Runs directly and over HTTP, on local storage and on Azurite."""

from __future__ import annotations

from typing import Any

import pytest

from memnet.bootstrap import Services
from memnet.cli.search import OPERATOR
from memnet.ports import IndexedEvent
from tests.clients import ApiClient, Reply

BASE = "/v1/tenants/t1/users/u1"


def event(**changes: Any) -> dict[str, Any]:
    body = {
        "service_id": "assistant-a",
        "timestamp": "2026-02-14T20:00:00Z",
        "source_type": "chat",
        "digest": "User asked to split memory by contention and lifecycle.",
        "keywords": ["memory", "config"],
        "project_ids": ["project-alpha"],
        "evidence": {"message_ids": ["m12", "m13"], "span": {"start": 12, "end": 13}},
    }
    return {k: v for k, v in {**body, **changes}.items() if v is not ...}


def post(client: ApiClient, body: dict[str, Any], key: str, base: str = BASE) -> Reply:
    return client.request("POST", base + "/events", body, {"Idempotency-Key": key})


def search(client: ApiClient, base: str = BASE, **body: Any) -> Reply:
    return client.request("POST", base + "/events:search", body)


def ids(reply: Reply) -> list[str]:
    assert reply.status == 200, reply.data
    return [r["event"]["event_id"] for r in reply.data["results"]]


def drain(services: Services) -> int:
    """Run the index worker over every queued job, as the queue trigger would; the jobs."""
    return services.events.drain().jobs


def test_write_stores_and_indexes_then_reads_back(client: ApiClient):
    reply = post(client, event(), "k1")
    assert reply.status == 201 and reply.data["indexed"] is True
    stored = reply.data["event"]
    assert stored["event_id"].startswith("evt_") and stored["tenant_id"] == "t1"
    got = client.request("GET", f"{BASE}/events/{stored['event_id']}")
    assert got.status == 200 and got.data == stored
    assert ids(search(client, text="contention")) == [stored["event_id"]]


def test_retry_with_same_key_returns_the_same_event(client: ApiClient):
    first = post(client, event(), "k1")
    again = post(client, event(), "k1")
    assert again.status == 201 and again.data == first.data
    assert again.headers["idempotent-replayed"] == "true"
    assert post(client, event(digest="other"), "k1").error_code == "IDEMPOTENCY_KEY_REUSED"
    assert len(ids(search(client))) == 1


def test_explicit_event_id_is_idempotent_and_guards_its_content(client: ApiClient):
    assert post(client, event(event_id="evt_1"), "k1").status == 201
    assert post(client, event(event_id="evt_1"), "k2").status == 200
    clash = post(client, event(event_id="evt_1", digest="different"), "k3")
    assert clash.status == 409 and clash.error_code == "EVENT_EXISTS"


def test_lowercase_t_and_z_are_accepted_stored_canonical_indexed_and_searchable(
    client: ApiClient,
):
    """Issue 8: a lowercase ``z`` passed validation but not the index (500 after the blob
    was stored, on every retry; a search time_range with ``z`` was a 500 too)."""
    body = event(timestamp="2026-02-14t20:00:00z")
    reply = post(client, body, "k1")
    assert (reply.status, reply.data["indexed"]) == (201, True), reply.data
    stored = reply.data["event"]
    assert stored["timestamp"] == "2026-02-14T20:00:00Z"
    assert post(client, body, "k1").data == reply.data  # the retry replays the same
    window = {"from": "2026-02-14t00:00:00z", "to": "2026-02-15T01:00:00+01:00"}
    assert ids(search(client, text="contention", time_range=window)) == [stored["event_id"]]
    assert ids(search(client, time_range={"to": "2026-02-14t20:00:00z"})) == []  # exclusive
    decayed = search(client, text="memory", recency_half_life_days=7)
    assert ids(decayed) == [stored["event_id"]]


def test_offsets_are_stored_as_the_same_instant_in_utc(client: ApiClient):
    reply = post(client, event(timestamp="2026-03-02T10:00:00.250+02:00"), "k1")
    assert reply.data["event"]["timestamp"] == "2026-03-02T08:00:00.250000Z"
    again = post(client, event(event_id="evt_1", timestamp="2026-03-02T09:00:00+01:00"), "k2")
    same = post(client, event(event_id="evt_1", timestamp="2026-03-02t08:00:00z"), "k3")
    assert (again.status, same.status) == (201, 200)  # the same instant: the same event


def test_body_naming_another_user_is_rejected(client: ApiClient):
    reply = post(client, event(user_id="u2"), "k1")
    assert reply.status == 400 and reply.error_code == "SCOPE_MISMATCH"
    assert client.request("GET", f"{BASE}/events/evt_x").status == 404


def test_missing_event_is_404(client: ApiClient):
    reply = client.request("GET", f"{BASE}/events/evt_nope")
    assert reply.status == 404 and reply.error_code == "EVENT_NOT_FOUND"


@pytest.mark.parametrize("route", ["/events", "/events:search"])
@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"{", "MALFORMED_JSON"),
        (b"[]", "MALFORMED_JSON"),
        (b'{"digest": NaN}', "MALFORMED_JSON"),
        (b'{"digest": "a", "digest": "b"}', "MALFORMED_JSON"),
    ],
)
def test_malformed_bodies_are_400_and_store_nothing(
    client: ApiClient, route: str, raw: bytes, code: str
):
    reply = client.request("POST", BASE + route, headers={"Idempotency-Key": "bad"}, raw=raw)
    assert (reply.status, reply.error_code) == (400, code), reply.data
    assert ids(search(client)) == []


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"timestamp": "2026-02-14T20:00:00"}, "timestamp"),
        ({"timestamp": "2026-W01-1T00:00Z"}, "timestamp"),  # issue 8: ISO week date
        ({"timestamp": "2026-01-01 00:00:00Z"}, "timestamp"),  # issue 8: space
        ({"timestamp": "2016-12-31T23:59:60Z"}, "timestamp"),  # leap second
        ({"timestamp": "2026-02-14T20:00Z"}, "timestamp"),  # no seconds
        ({"timestamp": "9999-12-31T23:00:00-05:00"}, "timestamp"),  # past 9999 in UTC
        ({"digest": ""}, "digest"),
        ({"digest": "x" * 4001}, "digest"),
        ({"keywords": ["k"] * 33}, "keywords"),
        ({"project_ids": ["../alpha"]}, "project_ids"),
        ({"service_id": "bad id"}, "service_id"),
        ({"snapshot_uri": "blob://tenants/t1/users/u2/snapshots/s.json"}, "snapshot_uri"),
        ({"evidence": {"span": {"start": 3, "end": 1}}}, "evidence"),
    ],
)
def test_invalid_events_are_400_naming_the_field_and_store_nothing(
    client: ApiClient, changes: dict[str, Any], field: str
):
    reply = post(client, event(**changes), "k-invalid")
    assert reply.status == 400, reply.data
    assert reply.data["error"]["details"].get("field") == field
    assert ids(search(client)) == []
    assert post(client, event(), "k-invalid").status == 201  # nothing was claimed: reusable


def seed(client: ApiClient) -> dict[str, str]:
    rows = {
        "alpha-latency": event(
            digest="Retrieval latency regressed in project alpha search.",
            timestamp="2026-03-01T10:00:00Z",
            keywords=["latency"],
        ),
        "beta-billing": event(
            digest="Billing export for beta failed overnight.",
            timestamp="2026-03-02T10:00:00+02:00",
            service_id="assistant-b",
            project_ids=["beta"],
            keywords=["billing"],
            source_type="email",
        ),
        "alpha-plan": event(
            digest="Planned the alpha roadmap and memory budgets.",
            timestamp="2026-03-03T10:00:00Z",
            keywords=["roadmap"],
        ),
    }
    return {name: post(client, body, name).data["event"]["event_id"] for name, body in rows.items()}


def test_search_ranks_by_relevance_and_empty_text_is_newest_first(client: ApiClient):
    made = seed(client)
    assert ids(search(client, text="latency alpha"))[0] == made["alpha-latency"]
    assert ids(search(client)) == [made["alpha-plan"], made["beta-billing"], made["alpha-latency"]]
    result = search(client, text="billing").data["results"][0]
    assert result["score"] > 0 and result["pointers"]["evidence"]["message_ids"] == ["m12", "m13"]


def test_search_filters(client: ApiClient):
    made = seed(client)
    assert ids(search(client, service_id="assistant-b")) == [made["beta-billing"]]
    assert ids(search(client, project_id=["beta"])) == [made["beta-billing"]]
    assert ids(search(client, source_type="email")) == [made["beta-billing"]]
    assert ids(search(client, keywords=["roadmap"])) == [made["alpha-plan"]]
    window = {"from": "2026-03-02T07:00:00Z", "to": "2026-03-03T10:00:00Z"}
    assert ids(search(client, time_range=window)) == [made["beta-billing"]]
    assert ids(search(client, text="alpha", project_id="beta")) == []


def test_search_never_crosses_users_or_tenants(client: ApiClient):
    seed(client)
    other = "/v1/tenants/t2/users/u1"
    post(client, event(digest="Retrieval latency for someone else."), "o1", base=other)
    assert all(
        r["event"]["tenant_id"] == "t1" for r in search(client, text="latency").data["results"]
    )
    assert len(ids(search(client, base="/v1/tenants/t1/users/u2", text="latency"))) == 0


@pytest.mark.parametrize(
    "text",
    [
        '"',
        "*",
        "NEAR(alpha latency)",
        "alpha AND",
        "(",
        ")",
        "digest:alpha",
        "-alpha",
        "^",
        "",
        "!!!",
        "a" * 1000,
        "alpha OR",
        "' OR 1=1 --",
        "alpha\\",
    ],
)
def test_hostile_query_text_is_searched_not_executed(client: ApiClient, text: str):
    seed(client)
    reply = search(client, text=text)
    assert reply.status == 200, reply.data


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"top_k": 0}, "INVALID_FIELD"),
        ({"top_k": 101}, "INVALID_FIELD"),
        ({"top_k": "5"}, "INVALID_FIELD"),
        ({"text": "x" * 1001}, "INVALID_FIELD"),
        ({"text": 5}, "INVALID_FIELD"),
        ({"time_range": {"from": "yesterday"}}, "INVALID_FIELD"),
        ({"time_range": {"from": "2026-03-02T00:00:00"}}, "INVALID_FIELD"),
        ({"time_range": {"from": "2026-W01-1T00:00Z"}}, "INVALID_FIELD"),
        ({"time_range": {"to": "2026-01-01 00:00:00Z"}}, "INVALID_FIELD"),
        ({"time_range": {"to": 1771099200}}, "INVALID_FIELD"),
        (
            {"time_range": {"from": "2026-03-02T01:00:00+01:00", "to": "2026-03-02t00:00:00z"}},
            "INVALID_FIELD",
        ),
        ({"time_range": {"to": "9999-12-31T23:00:00-05:00"}}, "INVALID_FIELD"),
        (
            {"time_range": {"from": "2026-03-03T00:00:00Z", "to": "2026-03-02T00:00:00Z"}},
            "INVALID_FIELD",
        ),
        ({"service_id": ["a b"]}, "INVALID_FIELD"),
        ({"keywords": "memory"}, "INVALID_FIELD"),
        ({"tenant_id": "t2"}, "UNKNOWN_FIELD"),
        ({"recency_half_life_days": 0}, "INVALID_FIELD"),
    ],
)
def test_bad_search_requests_are_400(client: ApiClient, body: dict[str, Any], code: str):
    reply = search(client, **body)
    assert (reply.status, reply.error_code) == (400, code), reply.data


def test_recency_weighting_prefers_newer_equal_matches(client: ApiClient):
    old = post(
        client, event(digest="Cache warmup notes.", timestamp="2025-01-01T00:00:00Z"), "old"
    ).data["event"]["event_id"]
    new = post(
        client, event(digest="Cache warmup notes.", timestamp="2026-11-01T00:00:00Z"), "new"
    ).data["event"]["event_id"]
    assert ids(search(client, text="cache warmup", recency_half_life_days=30))[0] == new
    assert old in ids(search(client, text="cache warmup"))


def test_reindex_rebuilds_the_same_results_and_drops_stale_entries(
    client: ApiClient, admin: ApiClient, services: Services
):
    seed(client)
    queries = [{"text": "alpha"}, {"text": "billing export"}, {}, {"keywords": ["latency"]}]
    before = [ids(search(client, **q)) for q in queries]
    services.index.delete("t1", "u1", ids(search(client)))
    services.index.upsert(
        [
            IndexedEvent(
                "t1", "u1", "evt_ghost", "2026-03-04T00:00:00Z", "s", "chat", "ghost alpha entry"
            )
        ]
    )
    assert ids(search(client, text="alpha")) == []  # the ghost's blob is gone: skipped
    drain(services)  # the search queued the ghost's removal
    assert services.queue.count("memnet-index") == 0
    reply = admin.request("POST", "/v1/admin/reindex", {"tenant_id": "t1", "user_id": "u1"})
    assert reply.status == 202 and reply.data["events"] == 3
    assert drain(services) >= 1
    assert [ids(search(client, **q)) for q in queries] == before


def test_reindex_of_everything_drops_entries_of_tenants_without_blobs(
    client: ApiClient, services: Services
):
    seed(client)
    ghost = IndexedEvent("t9", "u9", "evt_gone", "2026-03-04T00:00:00Z", "s", "chat", "ghost")
    services.index.upsert([ghost])
    receipt = services.events.reindex(OPERATOR, None, None)
    assert (receipt.events, receipt.stale_entries) == (3, 1)
    drain(services)
    assert list(services.index.list_event_ids("t9")) == []
    assert len(list(services.index.list_event_ids("t1"))) == 3


def test_reindex_needs_admin_and_scope(client: ApiClient, admin: ApiClient):
    assert client.request("POST", "/v1/admin/reindex", {"tenant_id": "t1"}).status == 403
    assert admin.request("POST", "/v1/admin/reindex", {"user_id": "u1"}).status == 400
    assert admin.request("POST", "/v1/admin/reindex", {}).status == 202
