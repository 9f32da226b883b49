"""The related-system profiles (related/profiles, docs/related/) served on each backend,
with their development callers and a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from tests.api.forgetting import MovableClock
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import REPO, backend_settings

RELATED = REPO / "related"
SOORMA_KEY, ADMIN_KEY = "soorma-agent-key", "related-admin-key"
PRIVACY_KEY = "related-privacy-key"


@dataclass
class World:
    services: Services
    clock: MovableClock


@pytest.fixture(params=["local", "azurite"])
def related(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    settings = backend_settings(request, request.param, tmp_path / "data")
    settings = replace(
        settings,
        profiles_dir=RELATED / "profiles",
        callers_file=RELATED / "callers.dev.json",
        sweep_page_size=3,
    )
    clock = MovableClock()
    services = bootstrap.build(settings, clock=clock)
    bootstrap.install(services)
    yield World(services, clock)
    bootstrap.install(None)


@pytest.fixture(params=["direct", "http"])
def soorma(request: pytest.FixtureRequest, related: World) -> ApiClient:
    """soorma-coala-v1's agent, through each transport."""
    if request.param == "direct":
        return DirectClient(SOORMA_KEY)
    return HttpClient(request.getfixturevalue("http_server"), SOORMA_KEY)
