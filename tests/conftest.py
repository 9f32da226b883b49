"""Shared fixtures: services on a temporary data directory, and API clients that reach the
real functions of ``function_app.py`` either directly (a real ``func.HttpRequest``) or over
real HTTP through the local host."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.services.compaction.service import COMPACT_QUEUE
from memnet.services.exports.service import EXPORT_QUEUE
from memnet.services.forget.ledger import FORGET_QUEUE
from memnet.services.replay.writes import REPLAY_QUEUE
from memnet.services.search.index import INDEX_QUEUE
from memnet.settings import Settings
from tests import secret_scan
from tests.azurite import azurite, azurite_queue
from tests.clients import ApiClient, DirectClient, HttpClient

REPO = Path(__file__).resolve().parent.parent
AGENT_KEY, ADMIN_KEY = "dev-agent-key", "dev-admin-key"
PRIVACY_KEY = "dev-privacy-key"  # the forget role only

__all__ = ["azurite", "azurite_queue"]


STARTER = "project-copilot-v1"

# Where a service-level test runs when storage is not what it is about: blobs and queues in
# memory, no disk (docs/testing.md). MEMNET_TEST_BACKENDS=memory,local,azurite runs such
# tests on the file store and SQLite queue, and on Azurite, too.
SERVICE_BACKENDS = os.environ.get("MEMNET_TEST_BACKENDS", "memory").split(",")
# Where a test about storage runs (what a forget or the retention sweep leaves behind).
STORAGE_BACKENDS = ["local", "azurite"]


def starter_profiles(target: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of ``profiles/`` at ``target`` with the starter profile changed by ``edit``
    (the tests' one way to vary a shipped profile)."""
    shutil.copytree(REPO / "profiles", target)
    path = target / f"{STARTER}.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    edit(raw)
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return target


def trusting_guard(raw: dict[str, Any]) -> None:
    """The starter's poisoning guard raised as far as it goes (every section ``all``, no
    lexical support asked, no rate met): what tests of the replay's mechanics (conflicts,
    retries, crashes) write with, so that only the guard's own tests are about it."""
    sections = {
        "user_dynamic": ["/preferences", "/durable_facts"],
        "project_doc": ["/summary", "/facets", "/recent_notes"],
    }
    raw["guard_rules"] = {
        **raw["guard_rules"],
        "replay_ceiling": {b: dict.fromkeys(s, "all") for b, s in sections.items()},
        "min_support": 0,
        "replay_rates": {"per_conversation": 1000, "per_day": 100000},
    }


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    base = Settings(
        data_dir=data_dir, profiles_dir=REPO / "profiles", callers_file=REPO / "callers.dev.json"
    )
    return Settings(**{**base.__dict__, **overrides})  # type: ignore[arg-type]


def backend_settings(request: pytest.FixtureRequest, backend: str, data_dir: Path) -> Settings:
    """Settings for one storage backend: memory, local files and SQLite, or Azure Blob and
    Azure Storage Queues on the session's Azurite (the search index is the embedded one on
    each)."""
    if backend in ("memory", "local"):
        return make_settings(data_dir, storage=backend)
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

    for base in (INDEX_QUEUE, REPLAY_QUEUE, FORGET_QUEUE, COMPACT_QUEUE, EXPORT_QUEUE):
        for name in (base, base + "-poison"):
            client = QueueClient.from_connection_string(connection_string, name)
            with contextlib.suppress(ResourceNotFoundError):
                client.clear_messages()


@pytest.fixture(params=SERVICE_BACKENDS)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    """The whole service on each of :data:`SERVICE_BACKENDS`."""
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


# --- Nothing secret is logged (tests/secret_scan.py) -----------------------------------
# Every record of every logger, at every level, goes to <run dir>/<worker>.log; the
# controller (or the only process) scans the run's logs when the session ends and fails
# it on a planted secret or a JWT. Its cost on the full suite is in tests/secret_scan.py.

LOG_ROOT = REPO / ".pytest-logs"
# The root logger's level during the run: below DEBUG, so every record is made, and
# distinct from any level a test sets, so the gate below can tell it is ours.
CAPTURE_LEVEL = 1
_RUN_DIR = pytest.StashKey[Path]()
_CAPTURE = pytest.StashKey["LogCapture"]()
_FINDINGS = pytest.StashKey[list[secret_scan.Finding]]()


@dataclass
class LogCapture:
    """The file handler on the root logger; the level the root logger had before, and
    the level it would have had in the run without the capture."""

    handler: logging.Handler
    original_level: int
    root_level: int

    def gate(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` would have been made without the capture: what keeps every
        other handler (pytest's ``caplog`` and report sections) seeing what it saw."""
        level = logging.getLogger(record.name).getEffectiveLevel()
        return record.levelno >= (self.root_level if level == CAPTURE_LEVEL else level)


def worker_id(config: pytest.Config) -> str:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else "main"


# --- Long tests start first ---------------------------------------------------------------
# A test marked ``slow`` runs for tens of seconds alone (the fuzz, the state machine, the
# crash loops, the server kills). Under ``-n 2`` it starts first, so the short tests fill
# in around it on the other worker, rather than one worker running it at the end while the
# other idles (docs/testing.md). ``slow(seconds)`` puts the longest first (xdist hands out
# its first tests in turn, so the two longest start at once, one on each worker); the
# order among the rest is unchanged. Not for a test that shares a module-scoped fixture
# with others: moved away from them, it would set the fixture up a second time.


def _start_order(item: pytest.Item) -> tuple[bool, float]:
    slow = item.get_closest_marker("slow")
    return slow is None, -float(slow.args[0]) if slow is not None and slow.args else 0.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_start_order)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: runs for tens of seconds; started first")
    workerinput = getattr(config, "workerinput", None)
    if workerinput:
        run_dir = Path(workerinput["memnet_log_dir"])
    else:
        run_dir = secret_scan.new_run_dir(LOG_ROOT)
    config.stash[_RUN_DIR] = run_dir
    root = logging.getLogger()
    handler = secret_scan.capture(run_dir / f"{worker_id(config)}.log")
    capture = LogCapture(handler, root.level, min([root.level, *configured_log_levels(config)]))
    config.stash[_CAPTURE] = capture
    root.addHandler(capture.handler)
    root.setLevel(CAPTURE_LEVEL)


def configured_log_levels(config: pytest.Config) -> list[int]:
    """The levels of pytest's ``--log-level``, ``--log-cli-level`` and ``--log-file-level``
    that are set: pytest lowers the root logger to the lowest of them, so the gate must."""
    levels = []
    for name in ("log_level", "log_cli_level", "log_file_level"):
        text = str(config.getoption(name) or config.getini(name) or "").upper()
        level = int(text) if text.isdigit() else logging.getLevelName(text)
        if text and isinstance(level, int):
            levels.append(level)
    return levels


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:  # xdist: each worker logs into this run's dir
    node.workerinput["memnet_log_dir"] = str(node.config.stash[_RUN_DIR])


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Gate pytest's handlers, which it attaches around each test phase (the same
    objects all session long, so each gets the filter once)."""
    capture = item.config.stash[_CAPTURE]
    for handler in logging.getLogger().handlers:
        if handler is not capture.handler and capture.gate not in handler.filters:
            handler.addFilter(capture.gate)


@pytest.fixture
def subprocess_log(request: pytest.FixtureRequest) -> Path:
    """A file in this run's log directory for a subprocess's stdout and stderr, so the
    secret scan reads it too."""
    config = request.config
    name = request.node.nodeid
    return secret_scan.subprocess_log_path(config.stash[_RUN_DIR], worker_id(config), name)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The controller (or the only process) scans every log of the run, after the
    workers have finished; a finding fails the session."""
    config = session.config
    if hasattr(config, "workerinput"):
        return
    config.stash[_CAPTURE].handler.flush()
    findings = secret_scan.scan(config.stash[_RUN_DIR].glob("*.log"))
    config.stash[_FINDINGS] = findings
    if findings:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    findings = config.stash.get(_FINDINGS, [])
    if findings:
        terminalreporter.section("secret scan", sep="=", red=True, bold=True)
        terminalreporter.line(secret_scan.report(findings), red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    capture = config.stash.get(_CAPTURE, None)
    if capture is None:
        return
    root = logging.getLogger()
    root.removeHandler(capture.handler)
    capture.handler.close()
    if root.level == CAPTURE_LEVEL:
        root.setLevel(capture.original_level)
