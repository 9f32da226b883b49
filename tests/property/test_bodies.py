"""Hostile request bodies against every JSON endpoint, through the real functions.

A body that is not strict JSON the service can store faithfully (duplicate member
names, NaN/Infinity, numbers that overflow, lone surrogates, nesting beyond the limit)
is 400 MALFORMED_JSON; a strict body is never called malformed. A body that is not JSON
in UTF-8 (UTF-16/32, a byte order mark, Latin-1, or a content type other than JSON) is
415. Megabyte bodies (arrays of hundreds of thousands
of items, huge strings, objects, pointers) are answered within the time bound, and
anything over the limit is 413. Whatever the answer, a rejected request changes no
stored blob and an accepted one leaves a document that folds from its history.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

from tests.clients import ApiClient, Reply
from tests.property.harness import PROJECT, USER_DYNAMIC, Harness, Target
from tests.property.strategies import (
    CONTENT_TYPES,
    ENCODINGS,
    budget,
    encode,
    hostile_bodies,
    must_be_415,
    must_refuse_encoding,
    render,
    texts,
    verdict,
)

LIMIT = 1_048_576  # MEMNET_MAX_BODY_BYTES default (docs/api.md)


@dataclass(frozen=True)
class Endpoint:
    """One JSON endpoint: who calls it, how, and a body it accepts."""

    name: str
    caller: str  # agent | admin
    method: str
    url: Callable[[Target], str]
    body: dict[str, Any]
    keyed: bool = True  # needs an Idempotency-Key
    precondition: bool = False  # needs If-Match

    def headers(
        self, key: str, etag: str, content_type: str = "application/json"
    ) -> dict[str, str]:
        found = {"Content-Type": content_type}
        if self.keyed:
            found["Idempotency-Key"] = key
        if self.precondition:
            found["If-Match"] = etag
        return found


def _user(target: Target) -> str:
    return f"/v1/tenants/{target.tenant}/users/{target.user}"


ENDPOINTS = {
    e.name: e
    for e in (
        Endpoint(
            "patch",
            "agent",
            "PATCH",
            lambda t: t.url,
            {
                "ops": [
                    {"op": "add", "path": "/content/preferences/-", "value": {"text": "Be brief."}}
                ]
            },
            precondition=True,
        ),
        Endpoint(
            "put",
            "admin",
            "PUT",
            lambda t: t.url,
            {
                "content": {
                    "preferences": [{"text": "x"}],
                    "durable_facts": [],
                    "pending_confirmations": [],
                }
            },
            precondition=True,
        ),
        Endpoint(
            "event",
            "agent",
            "POST",
            lambda t: _user(t) + "/events",
            {
                "timestamp": "2026-11-20T09:30:00Z",
                "source_type": "chat",
                "digest": "Agreed on pgvector.",
                "keywords": ["pgvector"],
                "evidence": {"message_ids": ["m1"]},
            },
        ),
        Endpoint(
            "search",
            "agent",
            "POST",
            lambda t: _user(t) + "/events:search",
            {"text": "pgvector", "top_k": 5, "keywords": ["pgvector"]},
            keyed=False,
        ),
        Endpoint(
            "assemble",
            "agent",
            "POST",
            lambda t: _user(t) + "/context:assemble",
            {"conversation_hint": {"text": "alpha"}, "max_docs": 4, "render": "text"},
            keyed=False,
        ),
        Endpoint(
            "reindex",
            "admin",
            "POST",
            lambda t: "/v1/admin/reindex",
            {"tenant_id": "t1", "user_id": "u1"},
            keyed=False,
        ),
    )
}


def prepared(harness: Harness, target: Target = USER_DYNAMIC) -> tuple[Target, str]:
    """A fresh user whose document exists; its ETag."""
    target = harness.fresh(target)
    reply = harness.call(
        harness.agent,
        "PATCH",
        target.url,
        {"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": "seed"}}]}
        if target.binding_id == "user_dynamic"
        else {"ops": []},
        {"If-None-Match": "*", "Idempotency-Key": "seed"},
    )
    assert reply.status == 201, reply.data
    return target, reply.data["etag"]


def client(harness: Harness, endpoint: Endpoint) -> ApiClient:
    return harness.admin if endpoint.caller == "admin" else harness.agent


def judge(harness: Harness, endpoint: Endpoint, target: Target, reply: Reply, before: Any) -> None:
    """Rejected: nothing stored changed. Accepted write: it is what storage holds."""
    if reply.status >= 400:
        harness.assert_unchanged(before, reply)
    elif endpoint.name in ("patch", "put"):
        harness.assert_committed(target, reply)
    elif endpoint.name == "event":
        event = reply.data["event"]
        got = harness.call(harness.agent, "GET", _user(target) + f"/events/{event['event_id']}")
        assert got.status == 200 and got.data == event


@given(name=st.sampled_from(sorted(ENDPOINTS)), data=st.data())
def test_a_body_that_is_not_strict_json_is_400_and_a_strict_one_is_never_malformed(
    harness: Harness, name: str, data: st.DataObject
) -> None:
    endpoint = ENDPOINTS[name]
    target, etag = prepared(harness)
    base = {**endpoint.body, **({"user_id": target.user} if name == "reindex" else {})}
    tree = data.draw(hostile_bodies(base), label="body")
    raw = render(tree, ascii_only=data.draw(st.booleans(), label="ascii only")).encode()
    expected = verdict(tree)
    before = harness.snapshot()
    reply = harness.call(
        client(harness, endpoint),
        endpoint.method,
        endpoint.url(target),
        None,
        endpoint.headers("k1", etag),
        raw,
    )
    if expected == "malformed":
        assert reply.status == 400 and reply.error_code == "MALFORMED_JSON", (
            f"{raw[:300]!r} is not strict JSON but got {reply.status} {reply.error_code}"
        )
    elif expected == "valid":
        assert reply.error_code != "MALFORMED_JSON", f"strict JSON called malformed: {raw[:300]!r}"
    judge(harness, endpoint, target, reply, before)


@given(
    name=st.sampled_from(sorted(ENDPOINTS)),
    encoding=st.sampled_from(ENCODINGS),
    content_type=st.sampled_from(sorted(CONTENT_TYPES)),
    extra=texts(max_size=20),
)
def test_a_body_that_is_not_utf8_json_is_415_and_changes_nothing(
    harness: Harness, name: str, encoding: str, content_type: str, extra: str
) -> None:
    endpoint = ENDPOINTS[name]
    target, etag = prepared(harness)
    body = json.loads(json.dumps(endpoint.body))
    if name == "reindex":
        body["user_id"] = target.user
    elif name == "patch":
        body["ops"][0]["value"] = "Be brief. " + extra
    elif name == "event":
        body["digest"] += extra
    elif name == "search":
        body["text"] = "pgvector " + extra
    elif name == "assemble":
        body["conversation_hint"] = {"text": "alpha " + extra}
    text = json.dumps(body, ensure_ascii=False)
    raw = encode(text, encoding)
    before = harness.snapshot()
    reply = harness.call(
        client(harness, endpoint),
        endpoint.method,
        endpoint.url(target),
        None,
        endpoint.headers("k1", etag, content_type),
        raw,
    )
    sent = f"a {encoding} body sent as {content_type!r}: {reply.status} {reply.error_code}"
    if must_be_415(text, encoding) or not CONTENT_TYPES[content_type]:
        assert reply.status == 415 and reply.error_code == "UNSUPPORTED_MEDIA_TYPE", sent
    elif must_refuse_encoding(text, encoding):
        assert reply.status in (400, 415), sent
    judge(harness, endpoint, target, reply, before)


# -- megabyte bodies ---------------------------------------------------------------------

ITEMS = ("0", '"a"', "{}", "[]", "null", "true", '""', '{"text":"a"}')
ARRAY_SECTIONS = {
    "user_dynamic": ("preferences", "durable_facts", "pending_confirmations", "projects_index"),
    "project_doc": ("recent_notes",),
}


def fill(prefix: str, suffix: str, item: str, count: int, separator: str = ",") -> bytes:
    """``prefix + item,item,... + suffix`` with at most ``count`` items and at most the
    body limit in bytes."""
    room = (LIMIT - len(prefix) - len(suffix)) // (len(item) + len(separator))
    return (prefix + separator.join([item] * min(count, room)) + suffix).encode()


def huge_patch(shape: str, section: str, op: str, item: str, count: int) -> bytes:
    if shape == "array":  # one op whose value is a huge array
        prefix = f'{{"ops":[{{"op":"{op}","path":"/content/{section}","value":['
        return fill(prefix, "]}]}", item, count)
    if shape == "ops":  # a huge list of ops
        one = f'{{"op":"{op}","path":"/content/{section}/-","value":{item}}}'
        return fill('{"ops":[', "]}", one, count)
    if shape == "object":  # one op whose value is an object of many members
        prefix = f'{{"ops":[{{"op":"{op}","path":"/content/{section}/-","value":{{'
        members, size = [], len(prefix) + 10
        for i in range(count):
            member = f'"k{i}":{item}'
            size += len(member) + 1
            if size > LIMIT:
                break
            members.append(member)
        return (prefix + ",".join(members) + "}}]}").encode()
    if shape == "string":  # one huge string
        prefix = f'{{"ops":[{{"op":"{op}","path":"/content/{section}/-","value":"'
        return fill(prefix, '"}]}', "a", count * 4, separator="")
    # a huge pointer
    prefix = f'{{"ops":[{{"op":"{op}","path":"/content/{section}'
    return fill(prefix, '","value":1}]}', "/0", count, separator="")


# Timing failures are not shrunk: each attempt costs as long as the slow request, and the
# generated dimensions are few and readable as they are.
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)


@pytest.mark.slow
@settings(max_examples=budget(0.5), phases=NO_SHRINK)
@given(
    binding_id=st.sampled_from(sorted(ARRAY_SECTIONS)),
    shape=st.sampled_from(["array", "ops", "object", "string", "pointer"]),
    op=st.sampled_from(["replace", "add", "test"]),
    item=st.sampled_from(ITEMS),
    count=st.sampled_from([1, 1_000, 30_000, 100_000, 250_000, 500_000]),
    data=st.data(),
)
@example(  # the reported case: a 1 MiB PATCH replacing an array with 500,000 values
    binding_id="user_dynamic", shape="array", op="replace", item="0", count=500_000, data=None
)
def test_a_megabyte_patch_is_answered_within_the_bound(
    harness: Harness,
    binding_id: str,
    shape: str,
    op: str,
    item: str,
    count: int,
    data: st.DataObject | None,
) -> None:
    target, etag = prepared(harness, USER_DYNAMIC if binding_id == "user_dynamic" else PROJECT)
    sections = ARRAY_SECTIONS[binding_id]
    section = data.draw(st.sampled_from(sections), label="section") if data else sections[0]
    raw = huge_patch(shape, section, op, item, count)
    assert len(raw) <= LIMIT
    before = harness.snapshot()
    reply = harness.call(
        harness.agent, "PATCH", target.url, None, {"If-Match": etag, "Idempotency-Key": "big"}, raw
    )
    judge(harness, ENDPOINTS["patch"], target, reply, before)


def huge_other(name: str, item: str, count: int) -> bytes:
    if name == "put":
        prefix = '{"content":{"durable_facts":[],"pending_confirmations":[],"preferences":['
        return fill(prefix, "]}}", item, count)
    if name == "event":
        prefix = (
            '{"timestamp":"2026-11-20T09:30:00Z","source_type":"chat","digest":"d","keywords":['
        )
        return fill(prefix, "]}", item, count)
    if name == "search":
        return fill('{"text":"a","keywords":[', "]}", item, count)
    if name == "assemble":
        return fill('{"conversation_hint":{"text":"', '"}}', "a", count * 4, separator="")
    return fill('{"tenant_id":"t1","user_id":"u1","x":[', "]}", item, count)


@pytest.mark.slow
@settings(max_examples=budget(0.3), phases=NO_SHRINK)
@given(
    name=st.sampled_from(["put", "event", "search", "assemble", "reindex"]),
    item=st.sampled_from(ITEMS),
    count=st.sampled_from([1_000, 100_000, 500_000]),
)
def test_a_megabyte_body_to_any_endpoint_is_answered_within_the_bound(
    harness: Harness, name: str, item: str, count: int
) -> None:
    endpoint = ENDPOINTS[name]
    target, etag = prepared(harness)
    raw = huge_other(name, item, count)
    before = harness.snapshot()
    reply = harness.call(
        client(harness, endpoint),
        endpoint.method,
        endpoint.url(target),
        None,
        endpoint.headers("big", etag),
        raw,
    )
    judge(harness, endpoint, target, reply, before)


@settings(max_examples=budget(0.2))
@given(name=st.sampled_from(sorted(ENDPOINTS)), over=st.sampled_from([1, 10, 1_000_000]))
def test_a_body_over_the_limit_is_413_and_changes_nothing(
    harness: Harness, name: str, over: int
) -> None:
    endpoint = ENDPOINTS[name]
    target, etag = prepared(harness)
    raw = b'{"x":"' + b"a" * (LIMIT + over - 8) + b'"}'
    before = harness.snapshot()
    reply = harness.call(
        client(harness, endpoint),
        endpoint.method,
        endpoint.url(target),
        None,
        endpoint.headers("big", etag),
        raw,
    )
    assert reply.status == 413 and reply.error_code == "PAYLOAD_TOO_LARGE", reply.data
    harness.assert_unchanged(before, reply)
