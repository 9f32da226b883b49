"""What the poisoning suite shares (issue 31, docs/testing.md "Poisoning suite"): the
real local host serving ``function_app.app`` on a fresh data directory with the shipped
profiles (the starter's ``guard_rules`` as they are), snapshots uploaded over real HTTP
and replayed by the host's own queue trigger, and the reads a test checks a plant with:
the replay record, the user's documents, the digest events, ``context:assemble``.

Each case writes as a user of its own, so the cases of one module share one host and
are uploaded together: the host works off the replay queue in turn, and each test then
reads what its replay did (a host per case would cost a queue poll, about a second,
per replay)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import function_app
from funchost import RunningServer, start_in_thread
from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.timestamps import InvalidTimestamp, parse_timestamp
from tests.clients import HttpClient, Reply
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, make_settings

TENANT = "poison"
PROFILE = "project-copilot-v1"
PENDING = (
    "pending_confirmations"  # the starter's pending section (profiles/project-copilot-v1.json)
)
SKEW = timedelta(seconds=300)  # the starter's guard_rules.max_clock_skew_seconds
FINAL = frozenset({"applied", "partially_applied", "unresolved", "failed"})
WAIT_SECONDS = 120.0


@dataclass
class Host:
    """The local host and the services it runs; clients for each role."""

    services: Services
    server: RunningServer

    def client(self, key: str = AGENT_KEY) -> HttpClient:
        return HttpClient(self.server.url, key)

    @property
    def agent(self) -> HttpClient:
        return self.client(AGENT_KEY)

    @property
    def admin(self) -> HttpClient:
        return self.client(ADMIN_KEY)

    @property
    def privacy(self) -> HttpClient:
        return self.client(PRIVACY_KEY)


@contextmanager
def running_host(data_dir: Path, **settings: Any) -> Iterator[Host]:
    """The host with its queue triggers (replay, compaction, forget) on ``data_dir``;
    forgets start at once (no grace period). No blob poller: uploads queue their replay."""
    options = {"storage": "memory", "forget_grace_seconds": 0, **settings}
    built = bootstrap.build(make_settings(data_dir, **options))
    bootstrap.install(built)
    server = start_in_thread(
        function_app.app, route_prefix="", queues=built.queue, blob_poll_seconds=0
    )
    try:
        yield Host(built, server)
    finally:
        server.stop()
        bootstrap.install(None)


# -- addresses --------------------------------------------------------------------------


def user_url(user: str) -> str:
    return f"/v1/tenants/{TENANT}/users/{user}"


def doc_url(user: str, path: str = "user/user_dynamic.json") -> str:
    return f"{user_url(user)}/documents/{path}"


def project_url(user: str, project: str = "alpha") -> str:
    return doc_url(user, f"projects/{project}.json")


def snapshot_url(user: str, conversation: str, snapshot: str = "s1") -> str:
    return f"{user_url(user)}/snapshots/{conversation}/{snapshot}"


def snapshot_uri(user: str, conversation: str, snapshot: str = "s1") -> str:
    return f"blob://tenants/{TENANT}/users/{user}/snapshots/{conversation}/{snapshot}.json"


# -- transcripts and uploads --------------------------------------------------------------

Said = tuple[str, str]  # (role, text)


def transcript(
    said: list[Said],
    *,
    hint: str | None = None,
    stamp: str = "2026-11-24T10:{:02d}:00Z",
    **extra: Any,
) -> dict[str, Any]:
    """Messages ``m1``, ``m2``, ... of ``said``, a minute apart (``stamp`` formats the
    minute), with the profile named and an optional project hint."""
    messages = [
        {"id": f"m{n}", "role": role, "text": text, "timestamp": stamp.format(n)}
        for n, (role, text) in enumerate(said, 1)
    ]
    body: dict[str, Any] = {"messages": messages, "profile_id": PROFILE, **extra}
    if hint is not None:
        body["project_hint"] = hint
    return body


def upload(host: Host, user: str, conversation: str, body: dict[str, Any]) -> None:
    reply = host.agent.request("PUT", snapshot_url(user, conversation), body)
    assert reply.status == 202, reply.data


def settle(host: Host, urls: list[str], seconds: float = WAIT_SECONDS) -> dict[str, Any]:
    """Each replay record at ``urls`` once it is finished, by URL."""
    deadline, done = time.monotonic() + seconds, {}
    while True:
        for url in [u for u in urls if u not in done]:
            reply = host.agent.request("GET", url + "/replay")
            if reply.status == 200 and reply.data["status"] in FINAL:
                done[url] = reply.data
        if len(done) == len(urls):
            return done
        assert time.monotonic() < deadline, f"{len(urls) - len(done)} replays did not finish"
        time.sleep(0.05)


def wait_for(check: Callable[[], Any], seconds: float = 60.0, what: str = "a condition") -> Any:
    """``check()``'s first truthy answer, polled."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def forget_conversation(host: Host, user: str, conversation: str) -> None:
    """Forget one conversation (the privacy role) and wait until the job is done."""
    reply = host.privacy.request("DELETE", f"{user_url(user)}/conversations/{conversation}")
    assert reply.status == 202, reply.data

    def done() -> bool:
        status = host.privacy.request("GET", reply.data["status_url"]).data
        return bool(status["status"] == "done")

    wait_for(done, what=f"the forget of conversation {conversation}")


# -- seeding ------------------------------------------------------------------------------


def put_document(host: Host, url: str, content: dict[str, Any]) -> Reply:
    """An admin's PUT of a new document (what an operator or a migration writes)."""
    headers = {"If-None-Match": "*", "Idempotency-Key": f"seed-{url}"}
    reply = host.admin.request("PUT", url, {"content": content}, headers)
    assert reply.status == 201, reply.data
    return reply


# -- what a replay left -------------------------------------------------------------------


@dataclass
class Outcome:
    """What one conversation's replay did, read back over HTTP."""

    user: str
    conversation: str
    record: dict[str, Any]
    dynamic: dict[str, Any]  # user_dynamic.json's content ({} when absent)
    project: dict[str, Any] | None  # projects/<hint>.json's content, None when absent
    events: list[dict[str, Any]] = field(default_factory=list)

    @property
    def applied(self) -> dict[str, Any]:
        """Everything that reaches context unreviewed: the documents less the pending
        section."""
        dynamic = {k: v for k, v in self.dynamic.items() if k != PENDING}
        return {"user_dynamic": dynamic, "project": self.project}

    @property
    def proposals(self) -> list[dict[str, Any]]:
        """The pending items this replay proposed (its conversation in their evidence)."""
        return [item for item in self.dynamic.get(PENDING, []) if learned_from(item, self)]

    def rejected_codes(self) -> set[str]:
        """Every code the replay record rejects a part with (a write-path refusal's
        per-op violation codes included)."""
        codes = set()
        for entry in self.record.get("rejected", []):
            codes.add(entry["code"])
            for violation in (entry.get("details") or {}).get("violations", []):
                codes.add(violation.get("code"))
        return codes

    def rejected(self, part: str) -> list[dict[str, Any]]:
        return [r for r in self.record.get("rejected", []) if r["part"] == part]


def learned_from(item: Any, outcome: Outcome) -> bool:
    """Whether ``item``'s own evidence names the outcome's conversation."""
    evidence = item.get("evidence") if isinstance(item, dict) else None
    pieces = evidence if isinstance(evidence, list) else [evidence]
    uri = snapshot_uri(outcome.user, outcome.conversation)
    return any(
        isinstance(p, dict)
        and (p.get("conversation_id") == outcome.conversation or p.get("snapshot_uri") == uri)
        for p in pieces
    )


def content_of(host: Host, url: str) -> dict[str, Any] | None:
    reply = host.agent.request("GET", url)
    if reply.status == 404:
        return None
    assert reply.status == 200, reply.data
    return dict(reply.data["document"]["content"])


def read_outcome(
    host: Host, user: str, conversation: str, record: dict[str, Any], hint: str | None
) -> Outcome:
    events = []
    for event_id in record.get("events", []):
        reply = host.agent.request("GET", f"{user_url(user)}/events/{event_id}")
        assert reply.status == 200, reply.data
        events.append(reply.data)
    return Outcome(
        user,
        conversation,
        record,
        content_of(host, doc_url(user)) or {},
        None if hint is None else content_of(host, project_url(user, hint)),
        events,
    )


def assemble(host: Host, user: str, project: str | None = None) -> dict[str, Any]:
    """``context:assemble`` as an orchestrator calls it at a conversation's start, with
    the rendered text."""
    hint: dict[str, Any] = {"text": "Let's continue."}
    if project is not None:
        hint["project_id"] = project
    body = {"profile_id": PROFILE, "conversation_hint": hint, "render": "text"}
    reply = host.agent.request("POST", f"{user_url(user)}/context:assemble", body)
    assert reply.status == 200, reply.data
    return dict(reply.data)


# -- looking through values ---------------------------------------------------------------


def text_of(value: Any) -> str:
    """``value`` as JSON text with non-ASCII kept, to look for a planted string in."""
    return json.dumps(value, ensure_ascii=False)


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from strings(child)
    elif isinstance(value, list):
        for child in value:
            yield from strings(child)


def instants(value: Any) -> list[datetime]:
    """Every RFC 3339 date-time among ``value``'s strings."""
    found = []
    for text in strings(value):
        try:
            found.append(parse_timestamp(text))
        except InvalidTimestamp:
            continue
    return found


def latest_allowed() -> datetime:
    """The latest instant a stored timestamp may name: now plus the guard's skew."""
    return datetime.now(UTC) + SKEW
