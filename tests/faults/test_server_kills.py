"""The real server is killed (SIGKILL) at random moments while a writer PATCHes, and
restarted on the same data directory, several times: no acknowledged write is lost.

SIGKILL tests a crash of the process, not a power loss: what a dead process wrote is
still in the kernel's page cache. That ``fsync`` covers power loss is shown by the store's
own tests (each write fsyncs the file, then its directory) and the fault tests in
``test_fsync_failures.py``; docs/testing.md says why a test cannot pull the plug.
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memnet.domain.audit_records import AuditRecord, fold
from tests.conftest import REPO
from tests.served import ServedHost, request, wait_until

KILLS = 6
DEADLINE_S = 45.0  # the whole test, on a slow 2-core machine
MAX_WRITES = 1500  # 16 characters each: the project document's 32,000 stay far off
URL = "/v1/tenants/t1/users/u1/documents/projects/crash.json"


@dataclass
class Writer:
    """PATCHes one facet per request, each with its own Idempotency-Key and If-Match from
    the last response. A request cut off by a kill is sent again, same key and ETag, until
    the restarted server answers: it lands exactly once either way."""

    server: ServedHost
    etag: str
    acknowledged: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    cut_off: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        for n in range(MAX_WRITES):
            if self.stop.is_set():
                return
            self.write(f"w{n:04d}")

    def write(self, name: str) -> None:
        ops = [{"op": "add", "path": f"/content/facets/{name}", "value": name}]
        headers = {"If-Match": self.etag, "Idempotency-Key": f"key-{name}"}
        deadline = time.monotonic() + 30  # finish it even when stopped: know its outcome
        while time.monotonic() < deadline:
            try:
                status, etag, body = request(
                    self.server.port, "PATCH", URL, {"ops": ops}, **headers
                )
            except ConnectionRefusedError:
                time.sleep(0.02)  # not restarted yet: the same request again
                continue
            except (OSError, http.client.HTTPException):
                self.cut_off += 1  # killed mid-request: the same request again
                continue
            if status != 200:
                self.problems.append(f"{name}: {status} {body}")
                self.stop.set()
                return
            self.etag, self.acknowledged[name] = etag, name
            return
        self.problems.append(f"{name}: no answer in 30 s")
        self.stop.set()


@pytest.fixture
def server(tmp_path: Path, subprocess_log: Path) -> Iterator[ServedHost]:
    env = {
        "MEMNET_PROFILES_DIR": str(REPO / "profiles"),
        "MEMNET_CALLERS_FILE": str(REPO / "callers.dev.json"),
        # A retry may take over the claim a killed request left pending at once.
        "MEMNET_IDEMPOTENCY_LEASE_SECONDS": "0",
    }
    args = ["--data-dir", str(tmp_path / "data"), "--settings", "none.json"]
    running = ServedHost(subprocess_log, args, env)
    running.start()
    yield running
    if running.process is not None and running.process.poll() is None:
        running.kill()


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_no_acknowledged_patch(server: ServedHost):
    started = time.monotonic()
    create = [{"op": "replace", "path": "/content/summary", "value": "crash test"}]
    status, etag, _ = request(
        server.port, "PATCH", URL, {"ops": create}, **{"If-None-Match": "*", "Idempotency-Key": "c"}
    )
    assert status == 201
    writer = Writer(server, etag)
    thread = threading.Thread(target=writer.run, daemon=True)
    thread.start()
    for _ in range(KILLS):
        wait_for_writes(writer)
        time.sleep(random.uniform(0.0, 0.3))  # then kill, most likely mid-PATCH
        server.kill()
        server.start()
    wait_for_writes(writer)
    writer.stop.set()
    thread.join(timeout=20)

    assert writer.problems == []
    assert writer.cut_off >= KILLS // 2  # most kills landed in the middle of a request
    document, changes = read_back(server.port)
    facets = document["content"]["facets"]
    lost = sorted(set(writer.acknowledged) - set(facets))
    unacknowledged = sorted(set(facets) - set(writer.acknowledged))
    assert (lost, unacknowledged) == ([], [])
    assert facets == writer.acknowledged  # every acknowledged write, and nothing else
    assert [c["ops"][0]["value"] for c in reversed(changes[:-1])] == sorted(facets)
    assert fold(map(AuditRecord.from_json, reversed(changes))) == document
    assert time.monotonic() - started < DEADLINE_S


def wait_for_writes(writer: Writer, count: int = 3) -> None:
    """Until the writer has ``count`` more acknowledged writes (or gave up)."""
    done = len(writer.acknowledged) + count
    wait_until(lambda: len(writer.acknowledged) >= done or writer.stop.is_set(), 20)


def read_back(port: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The document and its whole history, newest first (paged)."""
    status, _, body = request(port, "GET", URL)
    assert status == 200
    changes: list[dict[str, Any]] = []
    query = "?limit=1000"
    while query:
        status, _, page = request(port, "GET", f"{URL}:history{query}")
        assert status == 200, page
        changes += page["changes"]
        query = f"?limit=1000&before={page['next_before']}" if page.get("next_before") else ""
    return body["document"], changes
