"""The related-system profiles (related/profiles, docs/related/) served on each backend,
with their development callers and a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from memnet_client import MemnetClient

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.document_model import Precondition, WriteCommand
from memnet.domain.layout import DocumentRef
from memnet.domain.patching import parse_ops
from tests.api.forgetting import MovableClock
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import REPO, SERVICE_BACKENDS, backend_settings

RELATED = REPO / "related"
SOORMA_KEY, ADMIN_KEY = "soorma-agent-key", "related-admin-key"
PRIVACY_KEY = "related-privacy-key"


@dataclass
class World:
    services: Services
    clock: MovableClock


@pytest.fixture(params=SERVICE_BACKENDS)
def related(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    settings = backend_settings(request, request.param, tmp_path / "data")
    settings = replace(
        settings,
        profiles_dir=RELATED / "profiles",
        callers_file=RELATED / "callers.dev.json",
        sweep_page_size=3,
        idempotency_ttl_seconds=3 * 86400,  # outlives a day-long TTL: replays of expired writes
        promote_delay_seconds=0.0,  # promotion jobs visible at once (the tests drain them)
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


A2P_AGENT_KEY, A2P_USER_KEY = "a2p-agent-key", "a2p-user-key"


@pytest.fixture(params=["direct", "http"])
def a2p(request: pytest.FixtureRequest, related: World) -> ApiClient:
    """a2p-v1's agent (read, write), through each transport; ``as_key(A2P_USER_KEY)``
    is the user's own app (read, write, review)."""
    if request.param == "direct":
        return DirectClient(A2P_AGENT_KEY)
    return HttpClient(request.getfixturevalue("http_server"), A2P_AGENT_KEY)


MOSAIC_KEY = "mosaic-agent-key"


@pytest.fixture(params=["direct", "http"])
def mosaic(request: pytest.FixtureRequest, related: World) -> ApiClient:
    """mosaic-v1's agent (read, write), through each transport."""
    if request.param == "direct":
        return DirectClient(MOSAIC_KEY)
    return HttpClient(request.getfixturevalue("http_server"), MOSAIC_KEY)


def command(
    ref: DocumentRef,
    profile_id: str,
    ops: list[dict[str, Any]],
    *,
    reason: str = "live_update",
    etag: str | None = None,
    **extra: Any,
) -> WriteCommand:
    """A write as a service caller (a job, or a test standing in for a token the HTTP
    routes cannot mint) hands it to DocumentService."""
    return WriteCommand(
        ref=ref,
        profile_id=profile_id,
        binding_id=None,
        precondition=Precondition(if_match=etag, create=etag is None),
        idempotency_key=f"{reason}-{len(ops)}",
        fingerprint="f",
        reason=reason,
        request_id="r",
        ops=parse_ops(ops),
        **extra,
    )


def connect(url: str, key: str, user: str = "u1", **options: Any) -> MemnetClient:
    return MemnetClient(url, api_key=key, tenant=options.pop("tenant", "t1"), user=user, **options)
