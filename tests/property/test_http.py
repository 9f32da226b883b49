"""Headers and framing over real HTTP, through the local host (raw sockets, so that
requests can carry what ``http.client`` refuses to send: duplicate headers, unknown
methods, conflicting lengths, bytes beyond ASCII).

Every well-formed HTTP request gets a JSON answer in the project's error shape with its
``x-request-id`` (the host's own answers included), within the time bound, never a 5xx
(an unknown method may be 501 Not Implemented, RFC 9110 section 15.6.2, but as JSON).
Ambiguous requests (two different API keys, two different idempotency keys, two
different Content-Lengths) are refused; a rejected request changes nothing.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.clients import Reply
from tests.conftest import ADMIN_KEY, AGENT_KEY
from tests.property.harness import MAX_SECONDS, Harness
from tests.property.strategies import (
    CONTENT_TYPES,
    ENCODINGS,
    budget,
    document_paths,
    encode,
    garbage_if_match,
    idempotency_keys,
    identifiers,
    must_refuse_encoding,
    valid_document_path,
    valid_identifier,
)
from tests.property.test_bodies import prepared

Header = tuple[str, str]
BODY = {"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": "over http"}}]}


@dataclass
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    seconds: float

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def reply(self) -> Reply:
        return Reply(self.status, dict(self.headers), self.body)


def exchange(
    base_url: str,
    method: str,
    target: str,
    headers: list[Header],
    body: bytes = b"",
    length: bool = True,
) -> Answer:
    """One request on its own connection: the request line, ``headers`` as given (in
    order, duplicates kept, values sent as UTF-8), Content-Length unless told not to."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers]
    if length:
        lines.append(f"Content-Length: {len(body)}")
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + body
    parts = urlsplit(base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        started = time.perf_counter()
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        response = http.client.HTTPResponse(sock, method=method)
        response.begin()
        data = response.read()
        seconds = time.perf_counter() - started
    return Answer(response.status, response.getheaders(), data, seconds)


def assert_answered(answer: Answer, method: str, unknown_method: bool = False) -> None:
    """Within the bound, no 5xx (but a JSON 501 for an unknown method), and a JSON body
    (the error shape naming its x-request-id when it is an error)."""
    what = f"{method} -> {answer.status} {answer.body[:200]!r}"
    assert answer.seconds < MAX_SECONDS, f"{what} took {answer.seconds:.2f} s"
    assert answer.status < 500 or (unknown_method and answer.status == 501), what
    if method == "HEAD":
        return
    assert (answer.header("content-type") or "").startswith("application/json"), what
    payload = json.loads(answer.body)
    if answer.status >= 400:
        error = payload.get("error", {})
        assert isinstance(error.get("code"), str), what
        assert error.get("request_id") == answer.header("x-request-id"), what


@pytest.fixture
def served(harness: Harness, http_server: str) -> Iterator[tuple[Harness, str]]:
    yield harness, http_server


def auth(key: str = AGENT_KEY) -> Header:
    return ("Authorization", f"Bearer {key}")


KNOWN_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
methods = st.one_of(
    st.sampled_from(
        [*KNOWN_METHODS, "TRACE", "CONNECT", "PROPFIND", "PURGE", "M-SEARCH", "get", "patch"]
    ),
    st.from_regex(r"[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]{0,15}", fullmatch=True),
)


@settings(max_examples=budget(0.5))
@given(method=methods, where=st.sampled_from(["document", "history", "events", "health"]))
def test_any_method_gets_a_json_answer_and_changes_nothing(
    served: tuple[Harness, str], method: str, where: str
) -> None:
    harness, url = served
    target, _ = prepared(harness)
    path = {
        "document": target.url,
        "history": target.url + ":history",
        "events": f"/v1/tenants/{target.tenant}/users/{target.user}/events",
        "health": "/v1/health",
    }[where]
    before = harness.snapshot()
    answer = exchange(url, method, path, [auth()])
    assert_answered(answer, method, unknown_method=method not in KNOWN_METHODS)
    harness.assert_unchanged(before, answer.reply())


def printable(value: str) -> bool:
    """What can travel in a header line at all (no line breaks, no NUL)."""
    return not any(c in value for c in "\r\n\x00")


@st.composite
def header_sets(draw: st.DrawFn, etag: str) -> list[Header]:
    """Authorization, Idempotency-Key, If-Match and Content-Type, each usually right,
    sometimes hostile, sometimes repeated."""
    keys = st.one_of(st.just("k-http"), idempotency_keys().filter(printable))
    choices: dict[str, list[str]] = {
        "Authorization": draw(
            st.lists(
                st.sampled_from(
                    [
                        f"Bearer {AGENT_KEY}",
                        f"Bearer {ADMIN_KEY}",
                        f"bearer {AGENT_KEY}",
                        f"Bearer  {AGENT_KEY}",
                        f"Basic {AGENT_KEY}",
                        "Bearer",
                        f"Bearer {AGENT_KEY}\u200b",
                    ]
                ),
                min_size=1,
                max_size=2,
            )
        ),
        "Idempotency-Key": draw(st.lists(keys, min_size=1, max_size=2)),
        "If-Match": draw(
            st.lists(
                st.one_of(st.just(etag), garbage_if_match(etag).filter(printable)),
                min_size=1,
                max_size=2,
            )
        ),
        "Content-Type": draw(
            st.lists(st.sampled_from(sorted(CONTENT_TYPES)), min_size=1, max_size=2)
        ),
    }
    headers = [(name, value) for name, values in choices.items() for value in values]
    return draw(st.permutations(headers))


@settings(max_examples=budget(0.5))
@given(data=st.data(), encoding=st.sampled_from(ENCODINGS))
def test_hostile_headers_over_http_are_answered_and_refusals_change_nothing(
    served: tuple[Harness, str], data: st.DataObject, encoding: str
) -> None:
    harness, url = served
    target, etag = prepared(harness)
    headers = data.draw(header_sets(etag), label="headers")
    text = json.dumps(BODY)
    before = harness.snapshot()
    answer = exchange(url, "PATCH", target.url, headers, encode(text, encoding))
    assert_answered(answer, "PATCH")
    ambiguous = [
        name
        for name in ("Authorization", "Idempotency-Key")
        if len({v for n, v in headers if n == name}) > 1
    ]
    if ambiguous:
        assert answer.status >= 400, f"accepted with two different {ambiguous}: {headers}"
    if must_refuse_encoding(text, encoding):
        assert answer.status >= 400, f"accepted a {encoding} body"
    if not all(CONTENT_TYPES[v] for n, v in headers if n == "Content-Type"):
        assert answer.status >= 400, f"accepted a body sent as {headers}"
    if answer.status >= 400:
        harness.assert_unchanged(before, answer.reply())
    else:
        harness.assert_committed(target, answer.reply())


@settings(max_examples=budget(0.2))
@given(
    declared=st.lists(st.integers(0, 200), min_size=1, max_size=2, unique=True),
    same_header=st.booleans(),
)
def test_conflicting_content_lengths_are_refused(
    served: tuple[Harness, str], declared: list[int], same_header: bool
) -> None:
    """RFC 9112 section 6.3: differing Content-Length values make the framing invalid;
    reading one of them lets the rest of the body be taken for another request."""
    harness, url = served
    target, etag = prepared(harness)
    body = json.dumps(BODY).encode()
    lengths = [len(body), *(n for n in declared if n != len(body))]
    if len(lengths) == 1:
        lengths.append(len(body) + 1)
    if same_header:
        framing = [("Content-Length", ", ".join(map(str, lengths)))]
    else:
        framing = [("Content-Length", str(n)) for n in lengths]
    headers = [auth(), ("If-Match", etag), ("Idempotency-Key", "cl"), *framing]
    before = harness.snapshot()
    answer = exchange(url, "PATCH", target.url, headers, body, length=False)
    assert answer.status == 400, f"{framing} -> {answer.status} {answer.body[:200]!r}"
    assert_answered(answer, "PATCH")
    harness.assert_unchanged(before, answer.reply())


@settings(max_examples=budget(0.5))
@given(
    tenant=identifiers(),
    user=identifiers(),
    namespace=st.one_of(st.just("user"), identifiers()),
    path=st.one_of(st.just("user_dynamic.json"), document_paths()),
    create=st.booleans(),
)
def test_identifiers_over_http_follow_the_documented_grammar(
    served: tuple[Harness, str],
    tenant: str,
    user: str,
    namespace: str,
    path: str,
    create: bool,
) -> None:
    harness, url = served
    target = f"/v1/tenants/{tenant}/users/{user}/documents/{namespace}/{path}"
    valid = (
        valid_identifier(tenant)
        and valid_identifier(user)
        and valid_identifier(namespace)
        and valid_document_path(path.rstrip("/"))
    )
    before = harness.snapshot()
    if create:
        headers = [
            auth(),
            ("If-None-Match", "*"),
            ("Idempotency-Key", harness.key()),
            ("Content-Type", "application/json"),
        ]
        answer = exchange(url, "PATCH", target, headers, b'{"ops":[]}')
    else:
        answer = exchange(url, "GET", target, [auth()])
    assert_answered(answer, "PATCH" if create else "GET")
    code = json.loads(answer.body).get("error", {}).get("code")
    if not valid:
        assert answer.status == 400 and code in {"INVALID_IDENTIFIER", "INVALID_PATH"}, (
            f"{target[:300]} -> {answer.status} {code}"
        )
    else:
        assert code not in {"INVALID_IDENTIFIER", "INVALID_PATH"}, target[:300]
    if answer.status >= 300:
        harness.assert_unchanged(before, answer.reply())
    else:
        prefix = f"tenants/{unquote(tenant)}/users/{unquote(user)}/"
        assert all(n.startswith(prefix) for n in set(harness.snapshot()) - set(before))
