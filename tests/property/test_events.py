"""Hostile timestamps and event fields against event writes and searches.

docs/api.md: an event ``timestamp`` and the search ``time_range`` bounds are RFC 3339
with ``Z`` or an offset; ``from`` is inclusive, ``to`` exclusive, compared in UTC
whatever offsets are used. So: no timestamp gets a 5xx; what is accepted is RFC 3339;
plainly valid RFC 3339 is accepted; and an accepted event is found by exactly the time
ranges that contain its instant.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.property.harness import USER_DYNAMIC, Harness
from tests.property.strategies import (
    instant,
    is_rfc3339_shaped,
    json_values,
    must_be_accepted,
    texts,
    timestamps,
)


def post(harness: Harness, base: str, body: dict[str, Any], key: str = "k") -> Any:
    return harness.call(harness.agent, "POST", base + "/events", body, {"Idempotency-Key": key})


def search(harness: Harness, base: str, body: dict[str, Any]) -> Any:
    return harness.call(harness.agent, "POST", base + "/events:search", body)


def zulu(moment: Any) -> str:
    """RFC 3339 in UTC with microseconds (four-digit years, unlike strftime's %Y)."""
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


@given(stamp=timestamps())
def test_an_event_timestamp_is_answered_and_found_by_the_ranges_that_hold_it(
    harness: Harness, stamp: str
) -> None:
    target = harness.fresh(USER_DYNAMIC)
    base = f"/v1/tenants/{target.tenant}/users/{target.user}"
    before = harness.snapshot()
    reply = post(harness, base, {"timestamp": stamp, "source_type": "chat", "digest": "d"})
    if must_be_accepted(stamp):
        assert reply.status == 201, f"{stamp!r} is RFC 3339 but got {reply.data}"
    if reply.status >= 400:
        assert reply.error_code == "INVALID_FIELD", reply.data
        harness.assert_unchanged(before, reply)
        return
    event_id = reply.data["event"]["event_id"]
    moment = instant(stamp)
    if moment is None:
        return  # not RFC 3339: test_accepted_timestamps_are_rfc3339 reports that
    assert instant(reply.data["event"]["timestamp"]) == moment, "stored another instant"
    inside = [
        {"from": stamp},
        {"to": zulu(moment + timedelta(microseconds=1))},
        {"from": zulu(moment), "to": zulu(moment + timedelta(seconds=1))},
    ]
    outside = [{"to": stamp}, {"from": zulu(moment + timedelta(microseconds=1))}]
    for time_range in inside + outside:
        found = search(harness, base, {"time_range": time_range, "top_k": 100})
        assert found.status == 200, (time_range, found.data)
        ids = [r["event"]["event_id"] for r in found.data["results"]]
        assert (event_id in ids) == (time_range in inside), (stamp, time_range, ids)


@given(stamp=timestamps(), endpoint=st.sampled_from(["event", "from", "to"]))
def test_accepted_timestamps_are_rfc3339(harness: Harness, stamp: str, endpoint: str) -> None:
    """docs/api.md: "RFC 3339 with Z or an offset". ISO 8601 forms that are not RFC 3339
    (week or ordinal dates, basic format, hour-only, ``,5`` fractions, offsets without a
    colon or with seconds) are refused: the index and other readers of the record
    cannot be assumed to parse them."""
    target = harness.fresh(USER_DYNAMIC)
    base = f"/v1/tenants/{target.tenant}/users/{target.user}"
    if endpoint == "event":
        reply = post(harness, base, {"timestamp": stamp, "source_type": "chat", "digest": "d"})
    else:
        reply = search(harness, base, {"time_range": {endpoint: stamp}})
    if reply.status < 300:
        assert is_rfc3339_shaped(stamp), f"accepted {stamp!r}, which is not RFC 3339"
    else:
        assert reply.status == 400 and reply.error_code == "INVALID_FIELD", reply.data


@given(
    low=timestamps(),
    high=timestamps(),
    text=st.one_of(st.none(), texts(max_size=50)),
    extra=st.dictionaries(
        st.sampled_from(
            [
                "top_k",
                "keywords",
                "service_id",
                "project_id",
                "source_type",
                "recency_half_life_days",
            ]
        ),
        json_values(max_leaves=4),
        max_size=2,
    ),
)
def test_any_search_is_answered_without_changing_anything(
    harness: Harness, low: str, high: str, text: str | None, extra: dict[str, Any]
) -> None:
    target = harness.fresh(USER_DYNAMIC)
    base = f"/v1/tenants/{target.tenant}/users/{target.user}"
    post(harness, base, {"timestamp": "2026-01-01T00:00:00Z", "source_type": "chat", "digest": "d"})
    body: dict[str, Any] = {"time_range": {"from": low, "to": high}, **extra}
    if text is not None:
        body["text"] = text
    before = harness.snapshot()
    reply = search(harness, base, body)
    low_at, high_at = instant(low), instant(high)
    if low_at is not None and high_at is not None and low_at >= high_at:
        assert reply.status == 400, f"from {low!r} is not before to {high!r}: {reply.data}"
    harness.assert_unchanged(before, reply)


event_fields = st.fixed_dictionaries(
    {
        "timestamp": st.one_of(st.just("2026-11-20T09:30:00Z"), timestamps()),
        "source_type": st.one_of(st.just("chat"), texts(max_size=10)),
        "digest": st.one_of(texts(1, 60), st.just(" "), st.just("x" * 4001)),
    },
    optional={
        "event_id": st.one_of(st.just("evt_1"), texts(max_size=10)),
        "service_id": st.one_of(st.just("assistant-a"), texts(max_size=10)),
        "keywords": st.one_of(st.lists(texts(max_size=10), max_size=3), json_values(4)),
        "project_ids": st.one_of(st.lists(st.just("alpha"), max_size=2), json_values(4)),
        "snapshot_uri": st.one_of(
            st.just("blob://tenants/t1/users/u1/snapshots/c.json"),
            st.just("blob://tenants/t1/users/u1/snapshots/../../u2/x.json"),
            st.just("blob://tenants/t2/users/u1/snapshots/c.json"),
            texts(max_size=20),
        ),
        "evidence": st.one_of(
            st.fixed_dictionaries(
                {},
                optional={
                    "message_ids": st.lists(texts(max_size=10), max_size=3),
                    "span": st.fixed_dictionaries(
                        {"start": st.integers(-2, 5), "end": st.integers(-2, 5)}
                    ),
                },
            ),
            json_values(4),
        ),
        "tenant_id": st.sampled_from(["t1", "t2"]),
        "user_id": texts(max_size=5),
        "surprise": json_values(3),
    },
)


@given(body=event_fields)
def test_any_event_is_answered_and_an_accepted_one_reads_back(
    harness: Harness, body: dict[str, Any]
) -> None:
    target = harness.fresh(USER_DYNAMIC)
    base = f"/v1/tenants/{target.tenant}/users/{target.user}"
    before = harness.snapshot()
    reply = post(harness, base, body)
    if reply.status >= 400:
        harness.assert_unchanged(before, reply)
        return
    event = reply.data["event"]
    assert (event["tenant_id"], event["user_id"]) == (target.tenant, target.user)
    got = harness.call(harness.agent, "GET", f"{base}/events/{event['event_id']}")
    assert got.status == 200 and got.data == event
    retried = post(harness, base, body)
    assert retried.headers.get("idempotent-replayed") == "true"
    assert (retried.status, retried.data) == (reply.status, reply.data)
