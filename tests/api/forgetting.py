"""What the forget tests share: services with a clock the test moves, seeding a user with
every kind of data through the API, and working off the forget queue as its trigger would."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.api.workers import handle_forget_job
from memnet.bootstrap import Services
from memnet.domain.layout import audit_horizon_name, user_prefix
from memnet.ports import Condition
from memnet.services.forget.ledger import FORGET_QUEUE
from tests.api.test_documents import create
from tests.api.test_events import event, post
from tests.clients import ApiClient
from tests.conftest import backend_settings, doc_url


class MovableClock:
    def __init__(self) -> None:
        self.moment = datetime.now(UTC)

    def now(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


def build(request: pytest.FixtureRequest, data: Path, **overrides: Any) -> Services:
    settings = backend_settings(request, request.param, data)
    options = {"forget_grace_seconds": 0, "sweep_page_size": 3, **overrides}
    clock = MovableClock()
    services = bootstrap.build(replace(settings, **options), clock=clock)
    _clocks[id(services)] = clock
    bootstrap.install(services)
    return services


_clocks: dict[int, MovableClock] = {}


def clock_of(services: Services) -> MovableClock:
    """The clock :func:`build` gave these services."""
    return _clocks[id(services)]


def drain_forget(services: Services, limit: int = 500) -> int:
    """Work off the forget queue here (visible messages only), as the trigger would."""
    done = 0
    while done < limit:
        messages = services.queue.receive(FORGET_QUEUE, max_messages=16)
        if not messages:
            return done
        for message in messages:
            handle_forget_job(bootstrap.services(), message.body)
            services.queue.delete(FORGET_QUEUE, message)
            done += 1
    raise AssertionError("the forget queue did not drain")


def snapshot_url(tenant: str, user: str, conversation: str, snapshot: str) -> str:
    return f"/v1/tenants/{tenant}/users/{user}/snapshots/{conversation}/{snapshot}"


TRANSCRIPT = {
    "messages": [
        {"id": "m1", "role": "user", "text": "Hello there", "timestamp": "2026-11-24T10:00:00Z"}
    ]
}


def seed(agent: ApiClient, services: Services, tenant: str = "t1", user: str = "u1") -> None:
    """Every kind of a user's data: a document (with audit and idempotency records),
    events (with index entries), a snapshot and its replay record, an audit horizon and
    one blob of no known kind."""
    url = doc_url(tenant=tenant, user=user)
    assert create(agent, url, key=f"seed-{tenant}-{user}").status == 201
    base = f"/v1/tenants/{tenant}/users/{user}"
    for n in range(4):
        assert post(agent, event(digest=f"Event {n} of {user}"), f"ev-{n}", base).status == 201
    reply = agent.request("PUT", snapshot_url(tenant, user, "conv-1", "snap-1"), TRANSCRIPT)
    assert reply.status in (201, 202), reply.data
    prefix = user_prefix(tenant, user)
    services.blobs.write(audit_horizon_name(tenant, user), b"{}", Condition.unconditional())
    services.blobs.write(prefix + "misc/left-over.json", b"{}", Condition.unconditional())


def names(services: Services, tenant: str = "t1", user: str = "u1") -> list[str]:
    return list(services.blobs.list_names(user_prefix(tenant, user)))


def index_ids(services: Services, tenant: str = "t1", user: str = "u1") -> list[str]:
    return [e for _, _, e in services.index.list_event_ids(tenant, user)]
