"""``GET /v1/health/details`` through the real HTTP host: who may read it, and the
embedder it reports, whose reachability comes from a probe cached per process (one
model call per five minutes at most, never one per request; health never waits long).
The embedder is the real OpenAI-compatible adapter against tests/fake_openai.py."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.adapters.clock import SystemClock
from memnet.ports import EmbedderError
from memnet.services.search.embedder_probe import PROBE_TEXT, EmbedderProbe
from tests.clients import HttpClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, REPO, make_settings
from tests.fake_openai import Answer, FakeOpenAIServer, serving

DETAILS = "/v1/health/details"
MODEL = "text-embedding-3-small"


def vectors(request: Any) -> Any:
    data = [{"object": "embedding", "index": i, "embedding": [0.5, 0.5, 0.5, 0.5]}
            for i, _ in enumerate(request["input"])]  # fmt: skip
    return {"object": "list", "data": data, "model": MODEL, "usage": {"total_tokens": 1}}


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    with serving("embeddings") as server:
        yield server


def serve(tmp_path: Path, **overrides: Any) -> None:
    settings = replace(make_settings(tmp_path / "data"), **overrides)
    bootstrap.install(bootstrap.build(settings))


@pytest.fixture
def with_embedder(tmp_path: Path, fake: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    serve(
        tmp_path,
        embedder="openai",
        embedder_base_url=f"{fake.url}/v1",
        embedder_model=MODEL,
        embedder_dimensions=4,
    )
    yield fake
    bootstrap.install(None)


@pytest.fixture
def without_embedder(tmp_path: Path) -> Iterator[None]:
    serve(tmp_path)
    yield
    bootstrap.install(None)


def details(server: str, key: str = AGENT_KEY) -> Any:
    reply = HttpClient(server, key).request("GET", DETAILS)
    assert reply.status == 200, reply.body
    return reply.data


def test_the_admin_and_the_debug_role_read_details_and_no_one_else(
    http_server: str, without_embedder: None
):
    assert details(http_server, ADMIN_KEY)["status"] == "ok"
    assert details(http_server, AGENT_KEY)["embedder"] == {"kind": "none"}  # debug role
    reply = HttpClient(http_server, PRIVACY_KEY).request("GET", DETAILS)
    assert (reply.status, reply.error_code) == (403, "ROLE_FORBIDDEN")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "`GET /v1/health/details` (the `admin` or `debug` role)" in readme


def test_the_embedder_is_reported_with_one_model_call_for_many_requests(
    http_server: str, with_embedder: FakeOpenAIServer
):
    with_embedder.queue(Answer(vectors))
    first = details(http_server)["embedder"]
    for _ in range(4):
        assert details(http_server)["embedder"] == first
    assert first["kind"] == "openai" and first["model"] == MODEL
    assert MODEL in first["describe"]
    assert (first["reachable"], first["error"]) == (True, None)
    assert datetime.fromisoformat(first["checked_at"]) <= datetime.now(UTC)
    assert [r.body["input"] for r in with_embedder.received] == [[PROBE_TEXT]]


def test_an_embedder_that_refuses_is_reported_unreachable_with_its_status(
    http_server: str, with_embedder: FakeOpenAIServer
):
    refusal = json.loads((REPO / "tests/data/openai/unauthorized.json").read_text())
    with_embedder.queue(Answer(refusal, 401))
    embedder = details(http_server)["embedder"]
    assert embedder["reachable"] is False
    assert "401" in embedder["error"] and "sk-wrong" not in embedder["error"]


def test_a_slow_embedder_never_makes_health_slow(http_server: str, with_embedder: FakeOpenAIServer):
    with_embedder.queue(Answer(vectors, delay=3.0))
    started = time.monotonic()
    assert details(http_server)["embedder"]["reachable"] is None  # still checking
    assert details(http_server)["embedder"]["reachable"] is None
    assert time.monotonic() - started < 2 * 1.0 + 1.0  # each waited at most 1 s
    deadline = time.monotonic() + 10
    while details(http_server)["embedder"]["reachable"] is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert details(http_server)["embedder"]["reachable"] is True
    assert len(with_embedder.received) == 1  # one probe, however many asked meanwhile


class Counting:
    """An embedder that answers (or fails) and counts its calls, for the probe's clock."""

    model, dimensions = "counting@1", 1

    def __init__(self) -> None:
        self.calls, self.fail = 0, False
        self.lock = threading.Lock()
        self.gate = threading.Event()  # a failing call waits here until the test lets it
        self.gate.set()

    def embed(self, texts: list[str]) -> list[list[float]]:
        with self.lock:
            self.calls += 1
        self.gate.wait(5)
        if self.fail:
            raise EmbedderError("the model server answered 503", transient=True)
        return [[1.0] for _ in texts]

    def describe(self) -> str:
        return "counting"


def test_an_expired_answer_is_given_at_once_while_a_new_probe_runs() -> None:
    now = [0.0]
    embedder = Counting()
    probe = EmbedderProbe(embedder, SystemClock(), ttl=300, wait=1, monotonic=lambda: now[0])
    assert probe.status().reachable is True and embedder.calls == 1
    now[0] = 299.0
    assert probe.status().reachable is True and embedder.calls == 1  # cached
    embedder.fail, now[0] = True, 300.0
    embedder.gate.clear()  # the new probe is still running when health is asked
    assert probe.status().reachable is True  # the last answer, without waiting
    embedder.gate.set()
    deadline = time.monotonic() + 5
    while probe.status().reachable is not False:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert embedder.calls == 2 and "503" in (probe.status().error or "")
