"""Shared fixtures: services on a temporary data directory, and API clients that reach the
real functions of ``function_app.py`` either directly (a real ``func.HttpRequest``) or over
real HTTP through the local host."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.services.compaction import COMPACT_QUEUE
from memnet.services.event_index import INDEX_QUEUE
from memnet.services.forget_ledger import FORGET_QUEUE
from memnet.services.replay_writes import REPLAY_QUEUE
from memnet.settings import Settings
from tests.azurite import azurite, azurite_queue
from tests.clients import ApiClient, DirectClient, HttpClient

REPO = Path(__file__).resolve().parent.parent
AGENT_KEY, ADMIN_KEY = "dev-agent-key", "dev-admin-key"
PRIVACY_KEY = "dev-privacy-key"  # the forget role only

__all__ = ["azurite", "azurite_queue"]


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    base = Settings(
        data_dir=data_dir, profiles_dir=REPO / "profiles", callers_file=REPO / "callers.dev.json"
    )
    return Settings(**{**base.__dict__, **overrides})  # type: ignore[arg-type]


def backend_settings(request: pytest.FixtureRequest, backend: str, data_dir: Path) -> Settings:
    """Settings for one storage backend: local files and SQLite, or Azure Blob and Azure
    Storage Queues on the session's Azurite (the search index is the embedded one on both)."""
    if backend == "local":
        return make_settings(data_dir)
    server = request.getfixturevalue("azurite_queue")
    empty_index_queues(server.queue_connection_string)
    return make_settings(
        data_dir,
        storage="azure",
        blob_connection_string=server.blob_connection_string,
        queue_connection_string=server.queue_connection_string,
        blob_container=f"api-{uuid.uuid4().hex}",
    )


def empty_index_queues(connection_string: str) -> None:
    """The session's Azurite holds one index queue and one replay queue for every test:
    a message one test left invisible (a job that failed on purpose) must not show up in
    the next test."""
    from azure.core.exceptions import ResourceNotFoundError
    from azure.storage.queue import QueueClient

    for base in (INDEX_QUEUE, REPLAY_QUEUE, FORGET_QUEUE, COMPACT_QUEUE):
        for name in (base, base + "-poison"):
            client = QueueClient.from_connection_string(connection_string, name)
            with contextlib.suppress(ResourceNotFoundError):
                client.clear_messages()


@pytest.fixture(params=["local", "azurite"])
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    """The whole service on each storage backend."""
    settings = backend_settings(request, request.param, tmp_path / "data")
    built = bootstrap.build(settings)
    bootstrap.install(built)
    yield built
    bootstrap.install(None)


@pytest.fixture(scope="session")
def http_server() -> Iterator[str]:
    import function_app
    from funchost import start_in_thread

    server = start_in_thread(function_app.app, route_prefix="")
    yield server.url
    server.stop()


@pytest.fixture(params=["direct", "http"])
def client(request: pytest.FixtureRequest, services: Services) -> ApiClient:
    """The API as an agent sees it, through each transport."""
    if request.param == "direct":
        return DirectClient(AGENT_KEY)
    return HttpClient(request.getfixturevalue("http_server"), AGENT_KEY)


@pytest.fixture
def admin(client: ApiClient) -> ApiClient:
    return client.as_key(ADMIN_KEY)


def doc_url(path: str = "user/user_dynamic.json", tenant: str = "t1", user: str = "u1") -> str:
    return f"/v1/tenants/{tenant}/users/{user}/documents/{path}"


def dumps(value: object) -> bytes:
    return json.dumps(value).encode()
