"""What the import tests share: a source deployment seeded with every kind of a user's
data through the API, and what a deployment holds, to compare after a round trip."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.cli.export import DirectorySink
from memnet.domain.audit_records import fold
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.layout import user_prefix
from memnet.ports import EventQuery
from memnet.services.transfer.importer import Mapping
from tests import archives
from tests.api.forgetting import TRANSCRIPT, drain_forget, snapshot_url
from tests.api.test_documents import PREF, create, patch
from tests.api.test_events import event, post
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY, backend_settings, doc_url

ADMIN = Caller(
    "importer-test", frozenset({ANY}), frozenset({ANY}), frozenset({"admin", "read", "forget"})
)
AS_NAMED = Mapping()  # into the tenant and user the archive names
WORDS = ("memory", "lifecycle", "pizza", "travel")


def build(request: pytest.FixtureRequest, backend: str, data: Path) -> Services:
    settings = replace(backend_settings(request, backend, data), forget_grace_seconds=0)
    return bootstrap.build(settings)


def seeded(request: pytest.FixtureRequest, data: Path) -> Iterator[Services]:
    """An embedded deployment (local files) holding every kind of t1/u1's data,
    installed while the test runs (the ``source`` fixture of the import tests)."""
    built = build(request, "local", data)
    bootstrap.install(built)
    seed(built)
    yield built
    bootstrap.install(None)


def seed(services: Services) -> None:
    agent = DirectClient(AGENT_KEY)
    first = create(agent).data
    for n in range(3):
        ops = [{"op": "add", "path": PREF, "value": {"text": f"change {n}"}}]
        first = patch(agent, first["etag"], ops, f"p-{n}").data
    project = doc_url("projects/apollo.json")
    assert create(agent, project, [], key="proj").status == 201
    for n, word in enumerate(WORDS * 3):
        body = event(digest=f"The user talked about {word}, time {n}.", keywords=[word])
        assert post(agent, body, f"ev-{n}").status == 201
    for conversation in ("conv-1", "conv-2"):
        reply = agent.request("PUT", snapshot_url("t1", "u1", conversation, "snap-1"), TRANSCRIPT)
        assert reply.status in (201, 202), reply.data
    services.forget_conversation.request(ADMIN, "t1", "u1", "conv-2")
    drain_forget(services)
    services.holds.set("t1", "u1", {"reason": "litigation", "kinds": ["events"]}, "counsel")


def archive_of(services: Services, directory: Path, tenant: str = "t1", user: str = "u1") -> Path:
    return archives.write_archive(services, tenant, user, directory, part_size=5)


def exported(services: Services, directory: Path, tenant: str = "t1", user: str = "u1") -> Path:
    """The user's archive as the real exporter writes it (``memnet export``'s path)."""
    roles = frozenset({"read", "admin", "snapshots"})
    operator = Caller(
        "operator", frozenset({tenant}), frozenset({ANY}), roles, clearance=FULL_CLEARANCE
    )
    directory.mkdir(parents=True)
    services.exports.export_to(
        operator, (tenant, user), None, DirectorySink(directory), lambda kind, done: None
    )
    return directory


def run(target: Services, directory: Path, mapping: Mapping = AS_NAMED) -> Any:
    return bootstrap.importer(target).run(directory, mapping, "operator")


# -- what a deployment holds, to compare ------------------------------------------------


def documents(services: Services, tenant: str = "t1", user: str = "u1") -> dict[str, Any]:
    return {
        f"{r.namespace}/{r.path}": json.loads(services.blobs.read(r.blob_name).data)
        for r in archives.document_refs(services, tenant, user)
    }


def folds(services: Services, tenant: str = "t1", user: str = "u1") -> dict[str, Any]:
    found = {}
    for ref in archives.document_refs(services, tenant, user):
        head = json.loads(services.blobs.read(ref.blob_name).data)["change_id"]
        found[f"{ref.namespace}/{ref.path}"] = fold(reversed(list(services.audit.chain(ref, head))))
    return found


def searches(services: Services, tenant: str = "t1", user: str = "u1") -> dict[str, list[str]]:
    found = {}
    for text in (*WORDS, ""):
        query = EventQuery(tenant, user, text=text, top_k=50)
        results = services.events.search(ADMIN, query).results
        found[text] = sorted(hit.event.event_id for hit in results)
    return found


def without_owner(records: Iterator[Any]) -> list[Any]:
    return [{k: v for k, v in r.items() if k not in ("tenant_id", "user_id")} for r in records]


def replays(services: Services, tenant: str = "t1", user: str = "u1") -> list[Any]:
    return without_owner(archives.stored(services, user_prefix(tenant, user) + "replays/"))


def receipts(services: Services, tenant: str = "t1", user: str = "u1") -> list[Any]:
    return without_owner(archives.receipts(services, tenant, user))


def snapshots(services: Services, tenant: str = "t1", user: str = "u1") -> list[Any]:
    return list(archives.snapshots(services, tenant, user))
