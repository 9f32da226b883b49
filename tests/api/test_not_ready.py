"""A process whose services cannot be built (a broken setting, an unreachable vault)
answers 503 NOT_READY, health included, and retries the build at most every
RETRY_BUILD_SECONDS instead of on every request (issue 12 review)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.settings import Settings
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import ADMIN_KEY, doc_url


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


# -- what stopped startup, in /v1/health/details (issue 26: azd up succeeded, then every
#    request failed and nothing said why) --------------------------------------------------


@pytest.fixture(params=["direct", "http"])
def fresh(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[ApiClient]:
    """An admin's client of an app that starts from the environment the test sets."""
    monkeypatch.setenv("MEMNET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("MEMNET_CALLERS_FILE", "callers.dev.json")
    monkeypatch.delenv("WEBSITE_AUTH_ENABLED", raising=False)
    bootstrap.install(None)
    if request.param == "direct":
        yield DirectClient(ADMIN_KEY)
    else:
        yield HttpClient(request.getfixturevalue("http_server"), ADMIN_KEY)
    bootstrap.install(None)


def test_a_missing_callers_file_is_named_by_health_details_only(
    fresh: ApiClient, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MEMNET_CALLERS_FILE", str(tmp_path / "callers.json"))
    health = fresh.as_key(None).request("GET", "/v1/health")
    assert health.status == 503 and "callers" not in health.body.decode()
    for key in (None, ADMIN_KEY):  # no caller can be checked: the registry is what is missing
        details = fresh.as_key(key).request("GET", "/v1/health/details")
        assert details.status == 503 and details.error_code == "NOT_READY"
        cause = details.data["error"]["details"]["cause"]
        assert cause["source"] == str(tmp_path / "callers.json") and cause["field"] == "(file)"
        assert "not readable" in cause["problem"]


def test_appservice_auth_without_the_platforms_authentication_refuses_to_start(
    fresh: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMNET_AUTH", "appservice,apikeys")
    monkeypatch.setenv("MEMNET_ENTRA_TENANT_ID", "77777777-7777-4777-8777-777777777777")
    forged = {"X-MS-CLIENT-PRINCIPAL": "eyJhdXRoX3R5cCI6ImFhZCJ9"}  # anyone can send this
    assert fresh.request("GET", doc_url(), headers=forged).status == 503
    details = fresh.request("GET", "/v1/health/details")
    assert details.status == 503
    cause = details.data["error"]["details"]["cause"]
    assert (cause["source"], cause["field"]) == ("settings", "MEMNET_AUTH")
    assert "WEBSITE_AUTH_ENABLED" in cause["problem"]
    monkeypatch.setenv("WEBSITE_AUTH_ENABLED", "True")  # what App Service sets when it is on
    monkeypatch.setattr(bootstrap, "RETRY_BUILD_SECONDS", 0.0)
    assert fresh.request("GET", "/v1/health/details").status == 200


def test_once_started_health_details_needs_a_caller_again(fresh: ApiClient) -> None:
    assert fresh.request("GET", "/v1/health/details").status == 200
    reply = fresh.as_key(None).request("GET", "/v1/health/details")
    assert reply.status == 401 and "cause" not in reply.body.decode()


def test_a_failing_dependency_is_named_by_its_kind_only() -> None:
    failure = bootstrap.StartupFailure.of(RuntimeError("vault said planted-vault-secret"))
    assert failure.details() == {
        "source": "dependency",
        "field": "RuntimeError",
        "problem": "see the log",
    }
