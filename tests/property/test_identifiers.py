"""Hostile identifiers in URLs: tenant, user, namespace, document path, event id, and
query values. The documented grammar (docs/api.md, Identifiers: URL-decoded exactly
once, then ``^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`` per identifier or path segment, a path
ending in ``.json`` of at most 8 segments and 512 characters without ``..``) is the
oracle: what breaks it is 400 INVALID_IDENTIFIER / INVALID_PATH, what keeps it is never
called invalid, and an accepted write lands exactly under the decoded names."""

from __future__ import annotations

from urllib.parse import quote, unquote

from hypothesis import given
from hypothesis import strategies as st

from tests.property.harness import Harness
from tests.property.strategies import (
    document_paths,
    identifiers,
    texts,
    valid_document_path,
    valid_identifier,
)

INVALID = {"INVALID_IDENTIFIER", "INVALID_PATH"}
EVENT = {"timestamp": "2026-11-20T09:30:00Z", "source_type": "chat", "digest": "d"}
KNOWN = ("user_dynamic.json", "user_static.json", "alpha.json", "alpha%2Ejson", "alpha%252Ejson")


@given(
    tenant=identifiers(),
    user=identifiers(),
    namespace=st.one_of(st.sampled_from(["user", "projects"]), identifiers()),
    path=st.one_of(st.sampled_from(KNOWN), document_paths()),
    action=st.sampled_from(["get", "history", "create", "put"]),
)
def test_document_identifiers_follow_the_documented_grammar(
    harness: Harness, tenant: str, user: str, namespace: str, path: str, action: str
) -> None:
    url = f"/v1/tenants/{tenant}/users/{user}/documents/{namespace}/{path}"
    valid = (
        valid_identifier(tenant)
        and valid_identifier(user)
        and valid_identifier(namespace)
        # a trailing slash is part of the path (400 INVALID_PATH, docs/api.md): one
        # address per resource
        and valid_document_path(path)
    )
    before = harness.snapshot()
    if action == "get":
        reply = harness.call(harness.agent, "GET", url)
    elif action == "history":
        reply = harness.call(harness.agent, "GET", url + ":history")
    else:
        body = {"ops": []} if action == "create" else {"content": {}}
        reply = harness.call(
            harness.agent if action == "create" else harness.admin,
            "PATCH" if action == "create" else "PUT",
            url,
            body,
            {"If-None-Match": "*", "Idempotency-Key": harness.key()},
        )
    if not valid:
        assert reply.status == 400 and reply.error_code in INVALID, (
            f"{url[:300]} breaks the grammar but got {reply.status} {reply.error_code}"
        )
    else:
        assert reply.error_code not in INVALID, f"{url[:300]} keeps the grammar: {reply.data}"
    if reply.status >= 300:
        harness.assert_unchanged(before, reply)
        return
    if action in ("create", "put"):
        prefix = f"tenants/{unquote(tenant)}/users/{unquote(user)}/"
        document = f"{prefix}documents/{unquote(namespace)}/{unquote(path)}"
        after = harness.snapshot()
        new = sorted(set(after) - set(before))
        assert document in new, f"the document was not stored at {document}: {new}"
        assert all(name.startswith(prefix) for name in new), new


@given(
    tenant=identifiers(),
    user=identifiers(),
    event_id=identifiers(),
    action=st.sampled_from(["post", "get", "search", "assemble"]),
)
def test_user_scoped_identifiers_follow_the_documented_grammar(
    harness: Harness, tenant: str, user: str, event_id: str, action: str
) -> None:
    base = f"/v1/tenants/{tenant}/users/{user}"
    valid = valid_identifier(tenant) and valid_identifier(user)
    before = harness.snapshot()
    if action == "post":
        reply = harness.call(
            harness.agent, "POST", base + "/events", EVENT, {"Idempotency-Key": harness.key()}
        )
    elif action == "get":
        valid = valid and valid_identifier(event_id)
        reply = harness.call(harness.agent, "GET", f"{base}/events/{event_id}")
    elif action == "search":
        reply = harness.call(harness.agent, "POST", base + "/events:search", {"text": "d"})
    else:
        reply = harness.call(harness.agent, "POST", base + "/context:assemble", {})
    if not valid:
        assert reply.status == 400 and reply.error_code in INVALID, (
            f"{base[:300]} breaks the grammar but got {reply.status} {reply.error_code}"
        )
    else:
        assert reply.error_code not in INVALID, f"{base[:300]} keeps the grammar: {reply.data}"
    if reply.status >= 300:
        harness.assert_unchanged(before, reply)
    elif action == "post":
        prefix = f"tenants/{unquote(tenant)}/users/{unquote(user)}/"
        new = sorted(set(harness.snapshot()) - set(before))
        assert new and all(name.startswith(prefix) for name in new), new


@given(
    name=st.sampled_from(["limit", "before", "profile_id"]),
    value=st.one_of(
        st.sampled_from(
            [
                "0",
                "1",
                "1000",
                "1001",
                "-1",
                "01",
                "1e3",
                "%C2%B2",
                "\uff11",  # full-width 1
                "99999999999999999999",
                "chg_" + "0" * 28,
                "chg_" + "f" * 27 + "%00",
                "project-copilot-v1",
                "..%2F",
                "",
            ]
        ),
        texts(max_size=40).map(lambda s: quote(s, safe="")),
    ),
    history=st.booleans(),
)
def test_hostile_query_values_are_answered(
    harness: Harness, name: str, value: str, history: bool
) -> None:
    harness.call(
        harness.agent,
        "PATCH",
        "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json",
        {"ops": []},
        {"If-None-Match": "*", "Idempotency-Key": "seed"},
    )
    suffix = ":history" if history else ""
    url = f"/v1/tenants/t1/users/u1/documents/user/user_dynamic.json{suffix}?{name}={value}"
    before = harness.snapshot()
    reply = harness.call(harness.agent, "GET", url)
    decoded = unquote(value)
    in_range = decoded.isascii() and decoded.isdigit() and 1 <= int(decoded) <= 1000
    if history and name == "limit" and decoded and not in_range:  # (the client drops "")
        assert reply.status == 400 and reply.error_code == "INVALID_QUERY", reply.data
    harness.assert_unchanged(before, reply)
