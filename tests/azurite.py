"""Azurite, the Azure Storage emulator, as a real local server for the contract tests.

It comes from the npm package pinned in ``package.json`` (``npm install``). Each service
(``azurite-blob``, ``azurite-queue``) runs as its own process on a free port, in memory,
and is terminated when the test session ends.

The fixtures are defined here so any test directory can use them: import them into a
``conftest.py`` (``from tests.azurite import azurite, azurite_queue``). ``azurite`` is
the blob service; ``azurite_queue`` adds the queue service to it, started only when a
test asks for it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BIN_DIR = REPO_ROOT / "node_modules" / ".bin"
ACCOUNT = "devstoreaccount1"
# The emulator's well-known development key (public, documented by Microsoft).
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
START_TIMEOUT_S = 30.0
HOST = "127.0.0.1"


@dataclass
class AzuriteService:
    """One running Azurite service process (``blob`` or ``queue``)."""

    kind: str
    port: int
    process: subprocess.Popen[bytes]
    workdir: Path

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}/{ACCOUNT}"

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.workdir, ignore_errors=True)


@dataclass
class Azurite:
    """What tests need to reach the emulator."""

    blob: AzuriteService
    queue: AzuriteService | None = None

    @property
    def blob_port(self) -> int:
        return self.blob.port

    @property
    def blob_connection_string(self) -> str:
        return connection_string(BlobEndpoint=self.blob.endpoint)

    @property
    def queue_connection_string(self) -> str:
        """Blob and queue endpoints (the queue service must run: ``azurite_queue``)."""
        if self.queue is None:
            raise RuntimeError("the Azurite queue service runs only for `azurite_queue` users")
        return connection_string(BlobEndpoint=self.blob.endpoint, QueueEndpoint=self.queue.endpoint)

    def stop(self) -> None:
        if self.queue is not None:
            self.queue.stop()
        self.blob.stop()


def connection_string(**endpoints: str) -> str:
    """The development-account connection string for the given ``*Endpoint`` keys."""
    parts = ["DefaultEndpointsProtocol=http", f"AccountName={ACCOUNT}", f"AccountKey={ACCOUNT_KEY}"]
    parts += [f"{key}={value}" for key, value in endpoints.items()]
    return ";".join(parts) + ";"


def missing_prerequisite(kind: str) -> str | None:
    """Why Azurite cannot start here, or ``None`` when it can."""
    if not (BIN_DIR / f"azurite-{kind}").exists():
        return f"{BIN_DIR / f'azurite-{kind}'} is missing: run `npm install` in {REPO_ROOT}"
    if shutil.which("node") is None:
        return "node is not on PATH (Azurite is a Node.js program)"
    return None


def start_service(kind: str, attempts: int = 3) -> AzuriteService:
    """Start ``azurite-<kind>`` on a free port and wait until it accepts connections.

    Retried, since another process may take the free port before Azurite binds it."""
    for attempt in range(1, attempts + 1):
        try:
            return _start_once(kind)
        except AzuriteExitedError:
            if attempt == attempts:
                raise
    raise AssertionError("unreachable")


class AzuriteExitedError(RuntimeError):
    """The Azurite process ended before it was listening."""


def _start_once(kind: str) -> AzuriteService:
    port = free_port()
    workdir = Path(tempfile.mkdtemp(prefix=f"azurite-{kind}-"))
    command = [str(BIN_DIR / f"azurite-{kind}"), f"--{kind}Host", HOST, f"--{kind}Port", str(port)]
    command += ["--inMemoryPersistence", "--skipApiVersionCheck"]  # workdir is its cwd
    command += ["--loose", "--silent", "--disableTelemetry"]
    with (workdir / "azurite.log").open("wb") as log:
        process = subprocess.Popen(command, cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    service = AzuriteService(kind=kind, port=port, process=process, workdir=workdir)
    _wait_until_listening(service)
    return service


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_until_listening(service: AzuriteService) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if service.process.poll() is not None:
            message = f"azurite-{service.kind} exited early:\n{_log(service)}"
            service.stop()
            raise AzuriteExitedError(message)
        if _accepts_connections(service.port):
            return
        time.sleep(0.1)
    service.stop()
    raise RuntimeError(f"azurite-{service.kind} not listening after {START_TIMEOUT_S:.0f} s")


def _accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


def _log(service: AzuriteService) -> str:
    try:
        return (service.workdir / "azurite.log").read_text(errors="replace")[-4000:]
    except OSError:
        return "(no log)"


def require(kind: str) -> None:
    """Skip when Azurite is not installed; fail instead on CI, where it must be."""
    reason = missing_prerequisite(kind)
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"Azurite is required on CI: {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def azurite() -> Iterator[Azurite]:
    """A real Azurite (blob service) for the whole session, stopped at the end."""
    require("blob")
    server = Azurite(blob=start_service("blob"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azurite_queue(azurite: Azurite) -> Iterator[Azurite]:
    """The session's Azurite with its queue service running too (started on first use)."""
    require("queue")
    azurite.queue = start_service("queue")
    try:
        yield azurite
    finally:
        azurite.queue.stop()
        azurite.queue = None
