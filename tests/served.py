"""``memnet serve`` (as ``python -m memnet``) in a process of its own, as a person starts
it: for the tests that need the command line itself (its settings, its working directory,
a kill)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import AGENT_KEY, REPO


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServedHost:
    """The host on a free port: ``args`` after ``serve --port N``, run in ``cwd`` with
    the environment less every ``MEMNET_`` setting, plus ``env``. Restartable."""

    log: Path  # in the run's log directory: the secret scan reads it (tests/secret_scan.py)
    args: list[str]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: Path = REPO
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("MEMNET_")}
        env.update({"PYTHONPATH": str(REPO), **self.env})
        command = [sys.executable, "-m", "memnet", "serve", "--port", str(self.port)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command + self.args, cwd=self.cwd, env=env, stdout=log, stderr=log
            )
        wait_until(lambda: request(self.port, "GET", "/v1/health")[0] == 200, 30, self.process)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=10)


def request(
    port: int, method: str, path: str, body: Any = None, key: str = AGENT_KEY, **headers: str
) -> Any:
    """``(status, ETag, JSON body)``; an OSError or HTTPException when the server is gone."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        payload = json.dumps(body).encode() if body is not None else None
        sent = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        connection.request(method, path, payload, {**sent, **headers})
        response = connection.getresponse()
        data = response.read()
        return response.status, response.getheader("ETag"), json.loads(data or b"null")
    finally:
        connection.close()


def wait_until(
    condition: Callable[[], bool],
    seconds: float,
    process: subprocess.Popen[bytes] | None = None,
) -> None:
    """Until ``condition()`` holds (connection errors count as not yet); fails at once
    if ``process`` has exited."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the server exited with {process.returncode} (see its log)")
        try:
            if condition():
                return
        except (OSError, http.client.HTTPException):
            pass
        time.sleep(0.05)
    raise AssertionError("timed out")
