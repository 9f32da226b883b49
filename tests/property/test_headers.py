"""Hostile request headers through the real functions: idempotency keys, preconditions
and content types in every shape (the HTTP tests add what only the wire can carry).

docs/api.md: ``Idempotency-Key`` is 1-255 visible ASCII characters; ``If-Match`` must
name the current ETag. A request breaking either is refused and changes nothing; one
that is accepted is what storage holds.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tests.property.harness import Harness
from tests.property.strategies import (
    CONTENT_TYPES,
    VALID_KEY,
    garbage_if_match,
    idempotency_keys,
)
from tests.property.test_bodies import prepared

BODY = {"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": "headers"}}]}


@given(
    key=st.one_of(st.none(), idempotency_keys()),
    data=st.data(),
    content_type=st.one_of(st.none(), st.sampled_from(sorted(CONTENT_TYPES))),
    none_match=st.sampled_from([None, None, "*", " * ", "W/*", '"x"']),
)
def test_hostile_headers_are_refused_or_committed(
    harness: Harness,
    key: str | None,
    data: st.DataObject,
    content_type: str | None,
    none_match: str | None,
) -> None:
    target, etag = prepared(harness)
    if_match = data.draw(st.one_of(st.none(), garbage_if_match(etag)), label="If-Match")
    headers = {"Content-Type": content_type} if content_type is not None else {}
    for name, value in (
        ("Idempotency-Key", key),
        ("If-Match", if_match),
        ("If-None-Match", none_match),
    ):
        if value is not None:
            headers[name] = value
    before = harness.snapshot()
    reply = harness.call(harness.agent, "PATCH", target.url, BODY, headers)
    if content_type is not None and not CONTENT_TYPES[content_type]:
        assert reply.status == 415, f"a body sent as {content_type!r}: {reply.data}"
    if key is None or not VALID_KEY.fullmatch(key):
        assert reply.status >= 400, f"accepted with Idempotency-Key {key!r}"
    if (if_match or "").strip() != etag:
        assert reply.status >= 400, f"accepted with If-Match {if_match!r} (current {etag})"
    if reply.status >= 400:
        harness.assert_unchanged(before, reply)
    else:
        harness.assert_committed(target, reply)
