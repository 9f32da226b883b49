"""A process whose services cannot be built (a broken setting, an unreachable vault)
answers 503 NOT_READY, health included, and retries the build at most every
RETRY_BUILD_SECONDS instead of on every request (issue 12 review)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.settings import Settings
from tests.clients import DirectClient
from tests.conftest import doc_url


@pytest.fixture
def broken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[int]]:
    """Settings that stop startup; the list counts attempts to read them."""
    attempts: list[int] = []
    real = Settings.from_env

    def counting(env: Mapping[str, str] | None = None) -> Settings:
        attempts.append(1)
        return real(env)

    monkeypatch.setattr(bootstrap.Settings, "from_env", counting)
    monkeypatch.setenv("MEMNET_CALLERS_FILE", "callers.dev.json")
    monkeypatch.setenv("MEMNET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMNET_STORAGE", "s3")
    bootstrap.install(None)
    yield attempts
    bootstrap.install(None)


def test_a_broken_setting_is_503_not_ready_and_not_rebuilt_per_request(broken: list[int]):
    health = DirectClient(None).request("GET", "/v1/health")
    assert health.status == 503 and health.error_code == "NOT_READY"
    assert health.headers["retry-after"] == "30"
    assert "s3" not in health.body.decode()  # the reason is in the log, not the answer
    for _ in range(5):
        assert DirectClient("dev-agent-key").request("GET", doc_url()).status == 503
    assert len(broken) == 1  # one attempt; the rest were answered from the failure


def test_the_build_is_retried_after_the_pause(broken: list[int], monkeypatch: pytest.MonkeyPatch):
    assert DirectClient(None).request("GET", "/v1/health").status == 503
    monkeypatch.setenv("MEMNET_STORAGE", "local")
    assert DirectClient(None).request("GET", "/v1/health").status == 503  # within the pause
    monkeypatch.setattr(bootstrap, "RETRY_BUILD_SECONDS", 0.0)
    assert DirectClient(None).request("GET", "/v1/health").status == 200
