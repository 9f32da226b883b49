"""The console in a real browser (issue 28; docs/console.md "Tests"): Debian's Chromium,
driven by Playwright, against ``memnet serve`` on the embedded default, signed in with
the development keys. Each test gets a fresh browser context (an empty session storage),
fails on any console error or uncaught exception of the page, and leaves a screenshot
in ``.pytest-logs/console/`` when it fails."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

from tests.conftest import REPO
from tests.oidc import LocalEntra
from tests.served import ServedHost

SHOTS = REPO / ".pytest-logs" / "console"
SETTINGS = {
    "MEMNET_PROFILES_DIR": str(REPO / "profiles"),
    "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
    "MEMNET_FORGET_GRACE_SECONDS": "0",
}
CHROMIUM_ARGS = [  # as root, in a closed network: no sandbox, no background traffic
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.fail("Chromium is missing: scripts/setup installs Debian's chromium package")
    return found


@contextmanager
def local_host(
    factory: pytest.TempPathFactory, name: str, settings: dict[str, str]
) -> Iterator[ServedHost]:
    """A local host on a data directory of its own, with ``settings``, while in use."""
    data = factory.mktemp(f"{name}-data")
    log = factory.mktemp(f"{name}-log") / "host.log"
    served = ServedHost(log, ["--data-dir", str(data), "--settings", "none.json"], settings)
    served.start()
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    """One local host per test process, on its own data directory."""
    with local_host(tmp_path_factory, "console", SETTINGS) as served:
        yield served


@pytest.fixture(scope="session")
def base_url(host: ServedHost) -> str:
    return f"http://127.0.0.1:{host.port}"


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Per module, not per session: while Playwright's sync API runs, its event loop
    runs in this thread (in a greenlet), so a later test of the same process that runs
    an event loop of its own (the MCP client's ``anyio.run``) or parses deep source
    (``ast.parse`` counts recursion across the greenlet switch) would fail. Leaving the
    module stops it."""
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(executable_path=chromium(), args=CHROMIUM_ARGS)
    yield launched
    launched.close()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    item.stash.setdefault(_FAILED, False)
    if report.failed:
        item.stash[_FAILED] = True
    return report


_FAILED = pytest.StashKey[bool]()


@pytest.fixture
def page(browser: Browser, base_url: str, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A fresh tab of a fresh context; the test fails on any error the page logs."""
    with open_tab(browser, base_url, request) as tab:
        yield tab


@contextmanager
def open_tab(browser: Browser, base_url: str, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A tab of a fresh context on ``base_url``; the test fails on any error the page
    logs, and leaves a screenshot when it fails."""
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda message: _keep_error(message, errors))
    tab.on("pageerror", lambda error: errors.append(f"uncaught: {error}"))
    tab.set_default_timeout(15_000)
    yield tab
    if request.node.stash.get(_FAILED, False):
        SHOTS.mkdir(parents=True, exist_ok=True)
        name = request.node.nodeid.replace("/", "_").replace(":", "_")
        tab.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    context.close()
    assert not errors, errors


ANSWERED = "Failed to load resource: the server responded with a status of"
"""How Chromium logs any HTTP answer that is not 2xx. The console expects some (404 for a
document not written yet, 403 for what is hidden, 409 for a conflict) and says so on the
page, which the tests check; a request that fails to reach the server is still an error."""


def _keep_error(message: ConsoleMessage, errors: list[str]) -> None:
    if message.type == "error" and not message.text.startswith(ANSWERED):
        errors.append(message.text)


# Entra ID sign-in (tests/console/test_entra.py): the console's own app registration, and
# the caller its users' tokens map to.
CONSOLE_CLIENT_ID = "c0c0c0c0-0000-4000-8000-000000000028"
CONSOLE_CALLER = "console-people"


@pytest.fixture(scope="session")
def entra_tenant() -> Iterator[LocalEntra]:
    """The tenant's signing keys, OpenID configuration and JWKS (tests/oidc.py), served on
    127.0.0.1 for the host; the browser's view of Microsoft is routed in the tests."""
    with LocalEntra() as tenant:
        yield tenant


@pytest.fixture(scope="session")
def entra_host(
    tmp_path_factory: pytest.TempPathFactory, entra_tenant: LocalEntra
) -> Iterator[ServedHost]:
    """A second local host that takes the local tenant's tokens besides the development
    keys (``MEMNET_AUTH=entra,apikeys``) and offers the console's Entra sign-in
    (``MEMNET_CONSOLE_CLIENT_ID``). People signing in to the console are the delegated
    caller ``console-people`` of tenant ``acme``."""
    folder = tmp_path_factory.mktemp("console-entra")
    callers = json.loads((REPO / "callers.dev.json").read_text(encoding="utf-8"))["callers"]
    people = {
        "caller_id": CONSOLE_CALLER,
        "entra_app_id": CONSOLE_CLIENT_ID,
        "tenants": ["acme"],
        "profiles": ["*"],
        "roles": ["read", "write"],
        "delegated": True,
    }
    (folder / "callers.json").write_text(json.dumps({"callers": [*callers, people]}))
    settings = {
        **SETTINGS,
        "MEMNET_CALLERS_FILE": str(folder / "callers.json"),
        "MEMNET_AUTH": "entra,apikeys",
        "MEMNET_ENTRA_TENANT_ID": entra_tenant.tenant_id,
        "MEMNET_ENTRA_METADATA_URL": entra_tenant.metadata_url,
        "MEMNET_ENTRA_AUDIENCES": entra_tenant.audience,
        "MEMNET_CONSOLE_CLIENT_ID": CONSOLE_CLIENT_ID,
    }
    args = ["--data-dir", str(folder / "data"), "--settings", "none.json"]
    served = ServedHost(folder / "host.log", args, settings)
    served.start()
    yield served
    served.stop()


@pytest.fixture
def entra_page(
    browser: Browser, entra_host: ServedHost, request: pytest.FixtureRequest
) -> Iterator[Page]:
    """A fresh tab on the Entra host, as ``page`` is on the default one."""
    with open_tab(browser, f"http://127.0.0.1:{entra_host.port}", request) as tab:
        yield tab
