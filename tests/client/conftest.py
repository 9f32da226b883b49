"""Clients of the real local server: ``funchost`` serving ``function_app.app`` over
HTTP (the session's ``http_server``), on services built for each test on its own data
directory (blobs and queues in memory: the client's behaviour does not depend on storage,
which the contract suites cover)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
from memnet_client import MemnetClient, RetryPolicy

from memnet import bootstrap
from memnet.bootstrap import Services
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, make_settings

FAST = RetryPolicy(max_retries=3, max_wait=5.0, backoff=0.0)


def install(tmp_path: Path, **overrides: Any) -> Services:
    settings = make_settings(tmp_path / "data", storage="memory", forget_grace_seconds=0)
    services = bootstrap.build(replace(settings, **overrides))
    bootstrap.install(services)
    return services


@pytest.fixture
def services(tmp_path: Path) -> Iterator[Services]:
    yield install(tmp_path)
    bootstrap.install(None)


def connect(url: str, key: str, **options: Any) -> MemnetClient:
    return MemnetClient(url, api_key=key, tenant="t1", user="u1", **{"retry": FAST, **options})


@pytest.fixture
def memnet(http_server: str, services: Services) -> Iterator[MemnetClient]:
    """The agent: read, write and debug on any tenant, profile project-copilot-v1."""
    with connect(http_server, AGENT_KEY) as client:
        yield client


@pytest.fixture
def admin(http_server: str, services: Services) -> Iterator[MemnetClient]:
    with connect(http_server, ADMIN_KEY, profile="project-copilot-v1") as client:
        yield client


@pytest.fixture
def privacy(http_server: str, services: Services) -> Iterator[MemnetClient]:
    with connect(http_server, PRIVACY_KEY) as client:
        yield client


def append_preference(text: str) -> Any:
    """A ``change`` for ``update``: append one preference (commutes with other appends)."""
    return lambda content: [
        {"op": "add", "path": "/content/preferences/-", "value": {"text": text}}
    ]


class Recording(httpx.BaseTransport):
    """A real HTTP transport that remembers what it sent."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()
