"""Listing what a user has (issue 27, item 7): ``GET …/events`` paged by a stable cursor
(ties at a page boundary and writes while paging neither drop nor repeat an event) and
``GET …/snapshots`` (ids, time, size, replay status; never content). Both backends and
both transports."""

from __future__ import annotations

from typing import Any

import pytest

from memnet.bootstrap import Services
from memnet.services.documents.listing import encode_token
from tests.api.test_events import event, post
from tests.api.test_replay import drain, transcript, upload
from tests.clients import ApiClient, Reply
from tests.conftest import ADMIN_KEY

BASE = "/v1/tenants/t1/users/u1"


def page(client: ApiClient, query: str = "", base: str = BASE, what: str = "events") -> Reply:
    return client.request("GET", f"{base}/{what}{query}")


def walk(client: ApiClient, limit: int, **query: str) -> tuple[list[str], int]:
    """Every event id, following the cursor; and the number of pages."""
    seen: list[str] = []
    after, pages = None, 0
    while True:
        extra = "".join(f"&{k}={v}" for k, v in query.items())
        reply = page(client, f"?limit={limit}{extra}" + (f"&after={after}" if after else ""))
        assert reply.status == 200, reply.data
        assert len(reply.data["events"]) <= limit
        seen += [e["event_id"] for e in reply.data["events"]]
        pages += 1
        after = reply.data["after"]
        if after is None:
            return seen, pages


def record(client: ApiClient, event_id: str, **more: Any) -> dict[str, Any]:
    # One timestamp for all: a (time, id) tie everywhere, which the id order settles.
    reply = post(
        client, event(event_id=event_id, timestamp="2026-02-14T20:00:00Z", **more), event_id
    )
    assert reply.status == 201, reply.data
    stored: dict[str, Any] = reply.data["event"]
    return stored


def test_events_page_in_id_order_with_ties_neither_dropped_nor_repeated(client: ApiClient):
    names = [f"evt-{i:02d}" for i in range(7)]
    stored = [record(client, name) for name in reversed(names)]
    for limit in (1, 2, 3, 7, 100):
        seen, pages = walk(client, limit)
        assert seen == names, limit
        assert -(-len(names) // limit) <= pages <= len(names) // limit + 1
    first = page(client, "?limit=100").data["events"]
    assert first == sorted(stored, key=lambda e: e["event_id"])  # the records as stored


def test_events_written_while_paging_never_skip_or_repeat_one(client: ApiClient):
    for name in ("evt-b", "evt-d", "evt-f", "evt-h"):
        record(client, name)
    first = page(client, "?limit=2")
    assert [e["event_id"] for e in first.data["events"]] == ["evt-b", "evt-d"]
    record(client, "evt-a")  # before the cursor: not in this pass
    record(client, "evt-e")  # after it: in this pass, once
    record(client, "evt-c")  # between two events already seen
    rest: list[str] = []
    after = first.data["after"]
    while after is not None:
        reply = page(client, f"?limit=2&after={after}")
        rest += [e["event_id"] for e in reply.data["events"]]
        after = reply.data["after"]
    assert rest == ["evt-e", "evt-f", "evt-h"]


def test_the_service_derived_ids_list_in_the_order_recorded_to_the_millisecond(
    client: ApiClient,
):
    made = [
        post(client, event(digest=f"n{i}"), f"k{i}").data["event"]["event_id"] for i in range(3)
    ]
    listed = walk(client, 2)[0]
    assert listed == sorted(made)
    millis = [event_id[4:16] for event_id in made]  # evt_ + the change id's hex milliseconds
    assert millis == sorted(millis)  # recorded later: never listed earlier
    assert [e[4:16] for e in listed] == millis


def test_conversation_id_keeps_that_conversations_events(client: ApiClient):
    record(client, "evt-1", evidence={"conversation_id": "conv-1"})
    record(client, "evt-2", evidence={"conversation_id": "conv-2"})
    uri = "blob://tenants/t1/users/u1/snapshots/conv-1/snap-9"
    record(client, "evt-3", snapshot_uri=uri)
    assert walk(client, 1, conversation_id="conv-1")[0] == ["evt-1", "evt-3"]
    assert walk(client, 2, conversation_id="conv-2")[0] == ["evt-2"]


def test_nothing_of_another_user_or_tenant_is_listed(client: ApiClient):
    record(client, "evt-mine")
    post(client, event(event_id="evt-other"), "o1", "/v1/tenants/t1/users/u2")
    post(client, event(event_id="evt-far"), "o2", "/v1/tenants/t2/users/u1")
    assert walk(client, 10)[0] == ["evt-mine"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("?limit=0", "limit"),
        ("?limit=501", "limit"),
        ("?limit=x", "limit"),
        ("?after=not-a-cursor!", "after"),
        ("?after=" + "A" * 3000, "after"),
        ("?after=" + encode_token("documents", "x"), "after"),
        ("?after=" + encode_token("events", "x") + "&conversation_id=conv-1", "after"),
        ("?conversation_id=..", "conversation_id"),
    ],
)
def test_a_bad_query_is_400_naming_it(client: ApiClient, query: str, field: str):
    record(client, "evt-1")
    reply = page(client, query)
    assert reply.status == 400, reply.data
    assert reply.data["error"]["details"]["field"] == field


def test_a_cursor_of_the_snapshot_listing_is_not_one_of_events(client: ApiClient):
    reply = page(client, "?after=" + encode_token("snapshots", "x"))
    assert (reply.status, reply.error_code) == (400, "INVALID_QUERY")


def test_events_need_the_read_role(client: ApiClient):
    from tests.conftest import PRIVACY_KEY

    reply = page(client.as_key(PRIVACY_KEY))
    assert (reply.status, reply.error_code) == (403, "ROLE_FORBIDDEN")
    assert page(client.as_key(None)).status == 401


# -- snapshots ---------------------------------------------------------------------------


def test_snapshots_list_ids_time_size_and_replay_status_never_content(
    services: Services, client: ApiClient
):
    for conversation, snapshot in (
        ("conv-2", "snap-1"),
        ("conv-1", "snap-2"),
        ("conv-1", "snap-1"),
    ):
        url = f"{BASE}/snapshots/{conversation}/{snapshot}"
        assert upload(client, transcript("My locker code is 7731"), url).status == 202
    drain(services)
    admin = client.as_key(ADMIN_KEY)
    first = page(admin, "?limit=2", what="snapshots")
    assert first.status == 200, first.data
    rest = page(admin, f"?after={first.data['after']}", what="snapshots")
    listed = first.data["snapshots"] + rest.data["snapshots"]
    assert rest.data["after"] is None
    assert [(s["conversation_id"], s["snapshot_id"]) for s in listed] == [
        ("conv-1", "snap-1"),
        ("conv-1", "snap-2"),
        ("conv-2", "snap-1"),
    ]
    for item in listed:
        replay = admin.request(
            "GET", f"{BASE}/snapshots/{item['conversation_id']}/{item['snapshot_id']}/replay"
        ).data
        assert item["replay_id"] == replay["replay_id"]
        assert item["replay_status"] == replay["status"]
        assert item["size"] > 0 and item["stored_at"].endswith("Z")
    assert "7731" not in str(listed)


def test_snapshots_need_the_snapshots_or_admin_role(services: Services, client: ApiClient):
    upload(client)
    reply = page(client, what="snapshots")
    assert (reply.status, reply.error_code) == (403, "ROLE_FORBIDDEN")
    assert page(client.as_key(ADMIN_KEY), what="snapshots").data["snapshots"][0]["replay_status"]


def test_another_users_snapshots_are_not_listed(services: Services, client: ApiClient):
    upload(client, url="/v1/tenants/t1/users/u2/snapshots/conv-1/snap-1")
    reply = page(client.as_key(ADMIN_KEY), what="snapshots")
    assert reply.data == {"snapshots": [], "after": None}
