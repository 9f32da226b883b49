"""The azd hooks (scripts/azd_hooks.py, issue 26 items 8, 9 and 11), run against what
they talk to: the app's own startup checks for the preflight, the real Azure SDK clients
over transports that answer as Azure AI Search and Azure Resource Manager do, and a clock
that does not sleep. No Azure is reachable here: the answers follow the REST references
(Search 2026-04-01, Microsoft.Web 2024-04-01, Microsoft.EventGrid 2022-06-15)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from azure.core.rest import HttpRequest

from memnet.adapters.azure.search import AzureSearchIndex
from memnet.adapters.local.apikeys import hash_key
from memnet.ports import StorageError
from scripts import azd_hooks, preflight
from scripts.arm import Arm, ArmError
from scripts.retrying import GaveUp, Patience
from tests.contract.canned import CannedResponse, InMemoryTransport
from tests.contract.test_azure_search_transport import ENDPOINT, RecordingTransport
from tests.contract.test_keyvault_transport import StaticCredential
from tests.deploy.bicep_tree import ROOT
from tests.secret_scan import PLANTED

KEY = PLANTED["blobs extension key"]


@dataclass
class Clock:
    """Time that moves only when the code under test sleeps."""

    now: float = 0.0
    slept: list[float] = field(default_factory=list)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def patience(clock: Clock, deadline_s: float = 600) -> Patience:
    return Patience(deadline_s=deadline_s, sleep=clock.sleep, clock=lambda: clock.now)


# -- preflight: the deployed app would start ---------------------------------------------------

SERVICE = {
    "caller_id": "assistant-web",
    "entra_app_id": "11111111-1111-4111-8111-111111111111",
    "tenants": ["acme"],
    "profiles": ["project-copilot-v1"],
    "roles": ["read", "write"],
}
KEYED = {
    "caller_id": "ops",
    "key_sha256": hash_key("a-production-key"),
    "tenants": ["*"],
    "profiles": ["*"],
    "roles": ["admin"],
}
ENTRA = {"MEMNET_AUTH": "entra", "MEMNET_ENTRA_AUDIENCES": "api://memnet"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A package root: the real .funcignore, profiles and development callers."""
    for name in (".funcignore", preflight.DEV_CALLERS):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "profiles").symlink_to(ROOT / "profiles")
    return tmp_path


def registry(repo: Path, *entries: dict[str, Any], name: str = "callers.json") -> None:
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(json.dumps({"callers": list(entries)}))


def test_a_registry_the_app_accepts_passes(repo: Path) -> None:
    registry(repo, SERVICE, KEYED)
    assert preflight.problems(ENTRA, repo) == []
    assert preflight.problems({**ENTRA, "MEMNET_AUTH": "entra,apikeys"}, repo) == []


@pytest.mark.parametrize(
    ("callers_file", "says"),
    [
        (None, "callers.json does not exist"),
        ("callers.dev.json", "holds the development keys"),
        ("/etc/callers.json", "must be a path inside the package"),
        ("../callers.json", "must be a path inside the package"),
        ("docs/callers.json", "excluded by .funcignore"),  # written, but it would not ship
    ],
)
def test_a_registry_that_would_not_reach_the_app_is_refused(
    repo: Path, callers_file: str | None, says: str
) -> None:
    registry(repo, SERVICE, name="docs/callers.json")
    env = ENTRA if callers_file is None else {**ENTRA, "MEMNET_CALLERS_FILE": callers_file}
    (problem,) = preflight.problems(env, repo)
    assert problem.startswith("MEMNET_CALLERS_FILE") and says in problem


def test_the_apps_own_checks_refuse_what_would_stop_startup(repo: Path) -> None:
    (repo / "callers.json").write_text("{not json")
    (problem,) = preflight.problems(ENTRA, repo)
    assert "(file): not readable JSON" in problem
    registry(repo, {**SERVICE, "roles": ["superuser"]})
    (problem,) = preflight.problems(ENTRA, repo)
    assert "/callers/0" in problem
    registry(repo, {**SERVICE, "clearance": "top-secret"})  # no profile has that class
    (problem,) = preflight.problems(ENTRA, repo)
    assert "/callers/0/clearance" in problem


def test_every_authentication_mode_needs_a_caller_it_can_prove(repo: Path) -> None:
    registry(repo, KEYED)
    (problem,) = preflight.problems(ENTRA, repo)
    assert "no entry has entra_app_id or entra_object_id" in problem
    registry(repo, SERVICE)
    (problem,) = preflight.problems({**ENTRA, "MEMNET_AUTH": "apikeys"}, repo)
    assert "no entry has key_sha256" in problem


def test_the_development_keys_are_refused_under_any_name(repo: Path) -> None:
    dev = json.loads((ROOT / preflight.DEV_CALLERS).read_text())["callers"]
    registry(repo, SERVICE, dev[0])
    (problem,) = preflight.problems({**ENTRA, "MEMNET_AUTH": "entra,apikeys"}, repo)
    assert "holds a development key" in problem


def test_appservice_needs_the_apis_client_id(repo: Path) -> None:
    registry(repo, SERVICE)
    env = {**ENTRA, "MEMNET_AUTH": "appservice"}
    (problem,) = preflight.problems(env, repo)
    assert problem.startswith("MEMNET_ENTRA_CLIENT_ID")
    assert preflight.problems({**env, "MEMNET_ENTRA_CLIENT_ID": "c"}, repo) == []


def test_the_consoles_entra_sign_in_needs_entra_and_a_delegated_entry(repo: Path) -> None:
    console = {**SERVICE, "caller_id": "console", "entra_app_id": "c0", "delegated": True}
    env = {**ENTRA, "MEMNET_CONSOLE_CLIENT_ID": "c0"}
    registry(repo, SERVICE)
    (problem,) = preflight.problems(env, repo)
    assert "MEMNET_CONSOLE_CLIENT_ID is set but no entry" in problem
    registry(repo, SERVICE, console, KEYED)
    assert preflight.problems(env, repo) == []
    (problem,) = preflight.problems({**env, "MEMNET_AUTH": "apikeys"}, repo)
    assert "MEMNET_AUTH" in problem and "console" in problem


def test_the_check_hook_fails_with_the_cause(capsys: pytest.CaptureFixture[str]) -> None:
    env = {**ENTRA, "MEMNET_CALLERS_FILE": "no-such-callers.json"}
    assert azd_hooks.main(["check"], env) == 1
    assert "not deployable: MEMNET_CALLERS_FILE: no-such-callers.json" in capsys.readouterr().err


# -- search-index: the role assigned seconds earlier -------------------------------------------

SEARCH_ENV = {"MEMNET_SEARCH_ENDPOINT": ENDPOINT, "MEMNET_SEARCH_INDEX": "memnet-events"}
FORBIDDEN = {"error": {"code": "Forbidden", "message": "Authorization failed."}}


def search_index(transport: RecordingTransport) -> AzureSearchIndex:
    return AzureSearchIndex(
        ENDPOINT, "memnet-events", StaticCredential(), transport=transport, retry_total=0
    )


def test_the_index_is_created_once_the_new_role_takes_effect(clock: Clock) -> None:
    transport = RecordingTransport([(403, FORBIDDEN), (403, FORBIDDEN), (201, {})])
    index = search_index(transport)
    assert azd_hooks.create_search_index(SEARCH_ENV, index, patience(clock)) == 0
    assert [s.method for s in transport.sent] == ["PUT"] * 3
    assert clock.slept == [5, 10]
    assert all(s.headers["authorization"].startswith("Bearer ") for s in transport.sent)


def test_a_refusal_that_waiting_cannot_fix_fails_at_once(clock: Clock) -> None:
    transport = RecordingTransport([(400, {"error": {"code": "InvalidField"}})])
    with pytest.raises(StorageError):
        azd_hooks.create_search_index(SEARCH_ENV, search_index(transport), patience(clock))
    assert clock.slept == []


def test_no_login_at_all_fails_at_once(clock: Clock) -> None:
    from azure.identity import CredentialUnavailableError

    signed_out = StaticCredential(failure=CredentialUnavailableError("run azd auth login"))
    index = AzureSearchIndex(ENDPOINT, "memnet-events", signed_out, retry_total=0)
    with pytest.raises(StorageError, match="credential unavailable"):
        azd_hooks.create_search_index(SEARCH_ENV, index, patience(clock))
    assert clock.slept == []


def test_waiting_for_the_role_is_bounded(clock: Clock) -> None:
    transport = RecordingTransport([(403, FORBIDDEN)] * 100)
    with pytest.raises(GaveUp, match="gave up after 600 s"):
        azd_hooks.create_search_index(SEARCH_ENV, search_index(transport), patience(clock))
    assert clock.now <= 600 and len(transport.sent) > 5


def test_the_hooks_use_azds_login_not_whichever_login_comes_first() -> None:
    from azure.identity import AzureDeveloperCliCredential

    credential = azd_hooks.azd_credential({"AZURE_TENANT_ID": "t"})
    assert type(credential) is AzureDeveloperCliCredential


# -- snapshot-events: the Event Grid subscription ----------------------------------------------

APP = "func-memnet-x"
HOOK_ENV = {
    "AZURE_SUBSCRIPTION_ID": "sub",
    "AZURE_RESOURCE_GROUP": "rg",
    "AZURE_FUNCTION_APP_NAME": APP,
    "AZURE_FUNCTION_URL": f"https://{APP}.azurewebsites.net",
    "MEMNET_EVENTGRID_TOPIC": "evgt-memnet-x",
    "MEMNET_BLOB_CONTAINER": "memnet",
}
SITE = f"/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Web/sites/{APP}"
TOPIC = (
    "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.EventGrid/systemTopics/evgt-memnet-x"
)
OPERATION = "https://management.azure.com/operations/create-1"
JSON = {"Content-Type": "application/json"}


@dataclass
class FakeArm(InMemoryTransport):
    """ARM as the hook meets it after a deploy: the host answers 404 for its keys while it
    restarts, then keys without ``blobs_extension`` until the blob trigger has loaded;
    Event Grid's handshake fails while the host is still coming up."""

    restarting: int = 1
    keyless: int = 2
    failed_handshakes: int = 1
    refuse_keys: bool = False
    puts: list[dict[str, Any]] = field(default_factory=list)
    authorized: list[bool] = field(default_factory=list)
    _polls: int = 0

    def send(self, request: HttpRequest, **kwargs: Any) -> CannedResponse:
        self.authorized.append(request.headers.get("Authorization", "").startswith("Bearer "))
        status, body, headers = self._answer(request.method, urlsplit(request.url).path, request)
        return CannedResponse(request, status, body, {**JSON, **headers})

    def _answer(
        self, method: str, path: str, request: HttpRequest
    ) -> tuple[int, Any, dict[str, str]]:
        if (method, path) == ("POST", f"{SITE}/host/default/listkeys"):
            return self._keys()
        if (method, path) == ("PUT", f"{TOPIC}/eventSubscriptions/memnet-snapshots"):
            self.puts.append(json.loads(request.content))
            self._polls = 0
            creating = {"properties": {"provisioningState": "Creating"}}
            return 201, creating, {"Azure-AsyncOperation": OPERATION}
        if (method, path) == ("GET", "/operations/create-1"):
            return 200, self._operation(), {}
        return 404, {"error": {"code": "NotFound", "message": path}}, {}

    def _keys(self) -> tuple[int, Any, dict[str, str]]:
        if self.refuse_keys:
            return 403, {"error": {"code": "AuthorizationFailed", "message": "no"}}, {}
        if self.restarting:
            self.restarting -= 1
            return 404, {"error": {"code": "NotFound", "message": "host not running"}}, {}
        if self.keyless:
            self.keyless -= 1
            return 200, {"masterKey": "m", "systemKeys": {}}, {}
        return 200, {"masterKey": "m", "systemKeys": {"blobs_extension": KEY}}, {}

    def _operation(self) -> dict[str, Any]:
        self._polls += 1
        if self._polls == 1:
            return {"status": "InProgress"}
        if self.failed_handshakes:
            self.failed_handshakes -= 1
            endpoint = self.puts[-1]["properties"]["destination"]["properties"]["endpointUrl"]
            message = f"The attempt to validate the provided endpoint {endpoint} failed."
            return {"status": "Failed", "error": {"code": "Url validation", "message": message}}
        return {"status": "Succeeded"}


def arm(fake: FakeArm) -> Arm:
    return Arm(StaticCredential(), transport=fake, retry_total=0)


def test_the_subscription_waits_for_the_key_and_retries_the_handshake(
    clock: Clock, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeArm()
    assert azd_hooks.subscribe_snapshot_events(HOOK_ENV, arm(fake), patience(clock)) == 0
    assert len(fake.puts) == 2  # the first handshake failed; the same PUT again
    assert fake.puts[0] == fake.puts[1]
    endpoint = fake.puts[-1]["properties"]["destination"]["properties"]["endpointUrl"]
    assert endpoint == (
        f"https://{APP}.azurewebsites.net/runtime/webhooks/blobs"
        f"?functionName=Host.Functions.snapshot_written&code={KEY}"
    )
    assert all(fake.authorized)
    out = capsys.readouterr().out
    assert "event subscription Failed" in out and "code=***" in out  # the cause, masked
    assert KEY not in out


def test_a_refused_key_request_fails_at_once(clock: Clock) -> None:
    with pytest.raises(ArmError, match="403 AuthorizationFailed"):
        azd_hooks.subscribe_snapshot_events(
            HOOK_ENV, arm(FakeArm(refuse_keys=True)), patience(clock)
        )
    assert clock.slept == []


def test_a_host_that_never_makes_the_key_is_given_up_on(clock: Clock) -> None:
    fake = FakeArm(keyless=10_000)
    with pytest.raises(GaveUp, match="blobs_extension key: gave up after 600 s"):
        azd_hooks.subscribe_snapshot_events(HOOK_ENV, arm(fake), patience(clock))
    assert fake.puts == []


def test_a_handshake_that_never_succeeds_is_given_up_on(clock: Clock) -> None:
    fake = FakeArm(failed_handshakes=10_000)
    with pytest.raises(GaveUp, match="event subscription memnet-snapshots"):
        azd_hooks.subscribe_snapshot_events(HOOK_ENV, arm(fake), patience(clock))
    assert len(fake.puts) > 1 and clock.now <= 600 + 180


def test_an_unknown_command_prints_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert azd_hooks.main(["no-such-command"]) == 2
    assert "usage: python -m scripts.azd_hooks {check|" in capsys.readouterr().err
