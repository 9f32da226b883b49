"""Sequences of writes to one document, by an agent, an admin and a write-only caller,
with hostile ops, contents and preconditions (stateful).

No request gets a 5xx or takes longer than the bound. After every accepted write: the
response, a GET and both folds (history endpoint, audit chain) agree, the document still
satisfies its binding (schema, max_chars, array limits, no denylisted field in any
spelling), and its doc_id and created_at never change. After every rejected request: no
stored blob changed. A retried request gets its first answer; a key reused for another
request is 409; another caller's same key is its own; a stale ETag is 412; what an admin
reads, it can put back.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
)

from tests.clients import ApiClient, Reply
from tests.property.harness import TARGETS, USER_DYNAMIC, Harness, Target
from tests.property.strategies import (
    DEEP_HOMES,
    contents,
    garbage_if_match,
    nest,
    patch_extras,
    patches,
    plausible_patches,
)

DEEPEST_BUILT = 700  # beyond this the test's own recursive helpers would be the limit


@dataclass(frozen=True)
class Sent:
    client: ApiClient
    method: str
    raw: bytes
    headers: dict[str, str]
    reply: Reply


class DocumentLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self._dir = tempfile.TemporaryDirectory(prefix="memnet-property-")
        self.h = Harness(Path(self._dir.name))
        self.target: Target = USER_DYNAMIC
        self.etag: str | None = None
        self.identity: tuple[str, str] | None = None  # doc_id, created_at
        self.old_etags: list[str] = []
        self.accepted: list[Sent] = []
        self.used: set[tuple[str | None, str]] = set()  # (API key, idempotency key) sent
        self.keys = 0

    def teardown(self) -> None:
        self.h.close()
        self._dir.cleanup()

    @initialize(binding_id=st.sampled_from(sorted(TARGETS)))
    def choose_document(self, binding_id: str) -> None:
        self.target = TARGETS[binding_id]

    # -- helpers -------------------------------------------------------------------

    def content(self) -> Any:
        found = self.h.stored(self.target)
        return found[1]["content"] if found else self.target.binding["initial_content"]

    def new_key(self) -> str:
        self.keys += 1
        return f"key-{self.keys}"

    def preconditions(self, data: st.DataObject) -> dict[str, str]:
        """Usually the right precondition; now and then a wrong or malformed one."""
        if data.draw(st.integers(0, 5), label="odd precondition") > 0:
            return {"If-Match": self.etag} if self.etag else {"If-None-Match": "*"}
        return data.draw(
            st.one_of(
                garbage_if_match(self.etag).map(lambda v: {"If-Match": v}),
                st.sampled_from(
                    [
                        {},
                        {"If-None-Match": "*"},
                        {"If-None-Match": 'W/"x"'},
                        {"If-Match": self.etag or '"0x1"', "If-None-Match": "*"},
                    ]
                ),
            ),
            label="precondition",
        )

    def send(
        self, client: ApiClient, method: str, body: Any, headers: dict[str, str], reader: bool
    ) -> Reply:
        """Send ``body`` with a fresh idempotency key and judge the answer."""
        headers = {"Idempotency-Key": self.new_key(), **headers}
        return self.deliver(client, method, json.dumps(body).encode(), headers, reader)

    def deliver(
        self, client: ApiClient, method: str, raw: bytes, headers: dict[str, str], reader: bool
    ) -> Reply:
        before = self.h.snapshot()
        self.used.add((client.key, headers.get("Idempotency-Key", "")))
        reply = self.h.call(client, method, self.target.url, raw=raw, headers=headers)
        event(f"{method} {reply.status} {reply.error_code or ''}".strip())
        if 200 <= reply.status < 300:
            assert "idempotent-replayed" not in reply.headers, "a new request was replayed"
            assert reply.status == (201 if self.etag is None else 200)
            self.h.assert_committed(self.target, reply, reader=reader)
            if self.etag is not None and self.etag != reply.data["etag"]:
                self.old_etags.append(self.etag)
            self.etag = reply.data["etag"]
            self.accepted.append(Sent(client, method, raw, headers, reply))
            found = self.h.stored(self.target)
            assert found is not None
            identity = (found[1]["doc_id"], found[1]["created_at"])
            self.identity = self.identity or identity
            assert identity == self.identity, "doc_id or created_at changed"
        else:
            self.h.assert_unchanged(before, reply)
        return reply

    # -- rules ---------------------------------------------------------------------

    @rule(data=st.data())
    def agent_patches_as_intended(self, data: st.DataObject) -> None:
        body = data.draw(plausible_patches(self.target, self.content()), label="body")
        self.send(self.h.agent, "PATCH", body, self.preconditions(data), reader=True)

    @rule(data=st.data())
    def agent_patches(self, data: st.DataObject) -> None:
        ops = data.draw(patches(self.target, self.content()), label="ops")
        body = {"ops": ops, **data.draw(patch_extras(), label="extras")}
        self.send(self.h.agent, "PATCH", body, self.preconditions(data), reader=True)

    @rule(data=st.data())
    def write_only_caller_patches(self, data: st.DataObject) -> None:
        ops = data.draw(patches(self.target, self.content()), label="ops")
        body = {"ops": ops, **data.draw(patch_extras(), label="extras")}
        self.send(self.h.writer, "PATCH", body, self.preconditions(data), reader=False)

    @rule(data=st.data())
    def admin_replaces(self, data: st.DataObject) -> None:
        body = {"content": data.draw(contents(self.target), label="content")}
        self.send(self.h.admin, "PUT", body, self.preconditions(data), reader=True)

    @precondition(lambda self: self.target.binding_id in DEEP_HOMES and self.etag is not None)
    @rule(data=st.data())
    def agent_nests_deeper_with_chained_ops(self, data: st.DataObject) -> None:
        """Each op adds a nest inside the one the previous op added; each body stays
        within the API's nesting limit, the document need not."""
        section, member = DEEP_HOMES[self.target.binding_id]
        items = self.content().get(section, [])
        index, depth = deepest(items, member)
        steps = data.draw(st.lists(st.sampled_from([5, 20, 40, 55]), min_size=1, max_size=12))
        base = f"/content/{section}/{index}/{member}"
        ops = []
        if index == len(items):  # no nest yet: start one in a new item
            item: dict[str, Any] = {member: nest(steps[0])}
            if member == "candidate":
                item.update(target_path="/durable_facts/-", proposed_at="2026-01-01T00:00:00Z")
            else:
                item["note"] = "deep"
            ops.append({"op": "add", "path": f"/content/{section}/-", "value": item})
            depth, steps = steps[0], steps[1:]
        for size in steps:
            if depth + size > DEEPEST_BUILT:
                break
            ops.append({"op": "replace", "path": base + "/a" * depth, "value": nest(size)})
            depth += size
        self.send(self.h.agent, "PATCH", {"ops": ops}, {"If-Match": self.etag}, reader=True)

    @precondition(lambda self: self.etag is not None)
    @rule()
    def admin_puts_back_what_it_reads(self) -> None:
        got = self.h.call(self.h.admin, "GET", self.target.url)
        body = {"content": got.data["document"]["content"]}
        reply = self.send(self.h.admin, "PUT", body, {"If-Match": got.data["etag"]}, reader=True)
        assert reply.status == 200, f"the service refused its own document back: {reply.data}"

    @precondition(lambda self: bool(self.old_etags))
    @rule(data=st.data())
    def a_stale_etag_is_412(self, data: st.DataObject) -> None:
        stale = data.draw(st.sampled_from(self.old_etags), label="stale etag")
        ops = [{"op": "test", "path": "/content", "value": 0}]
        reply = self.send(self.h.agent, "PATCH", {"ops": ops}, {"If-Match": stale}, reader=True)
        assert reply.status == 412 and reply.error_code == "ETAG_MISMATCH", reply.data
        assert reply.data["error"]["details"]["latest_etag"] == self.etag

    @precondition(lambda self: bool(self.accepted))
    @rule(data=st.data())
    def a_retry_gets_the_first_answer(self, data: st.DataObject) -> None:
        sent = data.draw(st.sampled_from(self.accepted), label="retried request")
        before = self.h.snapshot()
        reply = self.h.call(sent.client, sent.method, self.target.url, None, sent.headers, sent.raw)
        assert (reply.status, reply.data) == (sent.reply.status, sent.reply.data)
        assert reply.headers.get("idempotent-replayed") == "true"
        self.h.assert_unchanged(before, reply)

    @precondition(lambda self: bool(self.accepted))
    @rule(data=st.data())
    def a_key_reused_for_another_request_is_409(self, data: st.DataObject) -> None:
        sent = data.draw(st.sampled_from(self.accepted), label="original request")
        body = json.loads(sent.raw)
        body["evidence"] = {"conversation_id": f"other-{self.new_key()}"}
        before = self.h.snapshot()
        raw = json.dumps(body).encode()
        reply = self.h.call(sent.client, sent.method, self.target.url, None, sent.headers, raw)
        assert reply.status == 409 and reply.error_code == "IDEMPOTENCY_KEY_REUSED", reply.data
        self.h.assert_unchanged(before, reply)

    @precondition(lambda self: bool(self.accepted))
    @rule(data=st.data())
    def another_caller_with_the_same_key_gets_its_own_answer(self, data: st.DataObject) -> None:
        """Keys are the caller's own: another caller sending the very same request with
        the same key is neither served the first caller's stored answer nor refused."""
        sent = data.draw(st.sampled_from(self.accepted), label="original request")
        key = sent.headers.get("Idempotency-Key", "")
        others = [
            c for c in (self.h.agent, self.h.admin, self.h.writer) if (c.key, key) not in self.used
        ]
        if not others:
            return  # every caller has sent this key already: its own retries are replays
        other = data.draw(st.sampled_from(others), label="other caller")
        reply = self.deliver(other, sent.method, sent.raw, sent.headers, other is not self.h.writer)
        assert reply.error_code != "IDEMPOTENCY_KEY_REUSED", "another caller's key blocked it"


def deepest(items: list[Any], member: str) -> tuple[int, int]:
    """(index, depth) of the item whose ``member`` is the deepest chain of ``{"a": ...}``;
    (len(items), 0) when there is none."""
    best = (len(items), 0)
    for index, item in enumerate(items):
        node, depth = item.get(member) if isinstance(item, dict) else None, 0
        while isinstance(node, dict) and isinstance(node.get("a"), dict | str):
            node, depth = node["a"], depth + 1
        if depth > best[1]:
            best = (index, depth)
    return best


TestDocumentLife = DocumentLife.TestCase
TestDocumentLife.pytestmark = [pytest.mark.slow(60)]  # seconds on this machine
