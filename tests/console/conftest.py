"""The console in a real browser (issue 28; docs/console.md "Tests"): Debian's Chromium,
driven by Playwright, against ``memnet serve`` on the embedded default, signed in with
the development keys. Each test gets a fresh browser context (an empty session storage),
fails on any console error or uncaught exception of the page, and leaves a screenshot
in ``.pytest-logs/console/`` when it fails."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
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
    assert not [e for e in errors if not _expected(e, request)], errors


def _keep_error(message: ConsoleMessage, errors: list[str]) -> None:
    if message.type == "error":
        errors.append(message.text)


def _expected(error: str, request: pytest.FixtureRequest) -> bool:
    """Errors a test says it causes (``@pytest.mark.page_errors("401")``): a failed fetch
    is logged by the browser itself."""
    marker = request.node.get_closest_marker("page_errors")
    return marker is not None and any(part in error for part in marker.args)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "page_errors(*texts): page errors a test expects")
