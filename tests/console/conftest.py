"""The console in a real browser (issue 28; docs/console.md "Tests"): Debian's Chromium,
driven by Playwright, against ``memnet serve`` on the embedded default, signed in with
the development keys. Each test gets a fresh browser context (an empty session storage),
fails on any console error or uncaught exception of the page, and leaves a screenshot
in ``.pytest-logs/console/`` when it fails."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, ConsoleMessage, Page, Playwright, sync_playwright

from tests.conftest import REPO
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


@pytest.fixture(scope="session")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    """One local host per test process, on its own data directory."""
    data = tmp_path_factory.mktemp("console-data")
    log = tmp_path_factory.mktemp("console-log") / "host.log"
    served = ServedHost(log, ["--data-dir", str(data), "--settings", "none.json"], SETTINGS)
    served.start()
    yield served
    served.stop()


@pytest.fixture(scope="session")
def base_url(host: ServedHost) -> str:
    return f"http://127.0.0.1:{host.port}"


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as driver:
        yield driver


@pytest.fixture(scope="session")
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
