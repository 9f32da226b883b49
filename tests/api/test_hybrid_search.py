"""Hybrid retrieval through the API (issue 16): events posted over each transport, the
index worker embeds them from the queue (never the write path), a search fuses BM25 with
cosine. The embedder is an in-process stand-in that maps words onto a few concepts, so a
paraphrase shares a concept and no word; the OpenAI-compatible adapter is tested over
HTTP on its own (tests/contract/test_openai_embedder.py)."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.search_words import STOP_WORDS
from memnet.ports import EmbedderError, StorageError, StorageUnavailable
from tests.api.test_events import ids, post, search
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import AGENT_KEY, REPO, make_settings

CONCEPTS = {
    "worktop": "counter", "countertop": "counter", "counter": "counter",
    "oak": "wood", "timber": "wood", "wooden": "wood",
    "kitchen": "kitchen", "marathon": "running", "race": "running", "run": "running",
}  # fmt: skip


class ConceptEmbedder:
    model = "concepts@256"
    dimensions = 256

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.failing: EmbedderError | None = None

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.failing is not None:
            raise self.failing
        return [self._vector(text) for text in texts]

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for word in text.lower().replace(",", " ").replace(".", " ").split():
            if word in STOP_WORDS:
                continue
            concept = CONCEPTS.get(word, word)
            vector[int.from_bytes(hashlib.sha256(concept.encode()).digest()[:4]) % 256] += 1.0
        return vector if any(vector) else [1.0] + [0.0] * (self.dimensions - 1)

    def describe(self) -> str:
        return self.model


@pytest.fixture
def embedder() -> ConceptEmbedder:
    return ConceptEmbedder()


@pytest.fixture(params=["direct", "http"])
def hybrid(request: pytest.FixtureRequest, tmp_path: Path, embedder: ConceptEmbedder) -> Iterator[
    tuple[ApiClient, Services]
]:  # fmt: skip
    profiles = tmp_path / "profiles"  # the starter profile, with dense_weight 0.4
    shutil.copytree(REPO / "profiles", profiles)
    starter = profiles / "project-copilot-v1.json"
    raw = json.loads(starter.read_text())
    starter.write_text(json.dumps({**raw, "search_rules": {"dense_weight": 0.4}}))
    settings = make_settings(tmp_path / "data", profiles_dir=profiles)
    built = bootstrap.build(settings, embedder=embedder)
    bootstrap.install(built)
    client: ApiClient = DirectClient(AGENT_KEY)
    if request.param == "http":
        client = HttpClient(request.getfixturevalue("http_server"), AGENT_KEY)
    yield client, built
    bootstrap.install(None)


EVENTS = [
    ("Went with oak for the countertop; delivery in three weeks.", ["kitchen"]),
    ("Kitchen budget review: appliances came in under the quote.", ["kitchen", "budget"]),
    ("Signed up for the Berlin marathon in September.", ["running"]),
]


def load(client: ApiClient) -> list[str]:
    out = []
    for n, (digest, keywords) in enumerate(EVENTS):
        body = {"digest": digest, "keywords": keywords, "timestamp": f"2026-01-0{n + 1}T10:00:00Z"}
        reply = post(client, {**body, "source_type": "chat"}, f"hybrid-{n}")
        assert reply.status == 201 and reply.data["indexed"] is True, reply.data
        out.append(reply.data["event"]["event_id"])
    return out


def test_the_write_path_embeds_nothing_the_worker_does(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    load(client)
    assert embedder.calls == []
    report = built.events.drain()
    assert report.embedded == 3 and sum(map(len, embedder.calls)) == 3
    assert built.events.drain().embedded == 0  # nothing left: embedded once


def test_a_paraphrase_is_found_by_the_fused_ranking(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    oak, _, _ = load(client)
    lexical = ids(search(client, text="which timber did I pick for the worktop"))
    assert oak not in lexical  # not one word in common
    built.events.drain()
    assert ids(search(client, text="which timber did I pick for the worktop"))[0] == oak


def test_an_embedder_failure_at_query_time_falls_back_to_lexical(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    _, budget, _ = load(client)
    built.events.drain()
    embedder.failing = EmbedderError("down", transient=True)
    assert ids(search(client, text="budget"))[0] == budget


def job(action: str, event_ids: list[str]) -> str:
    body = {"action": action, "tenant_id": "t1", "user_id": "u1", "event_ids": event_ids}
    return json.dumps(body)


def test_a_transient_failure_fails_the_job_and_its_retry_embeds(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    event_ids = load(client)
    embedder.failing = EmbedderError("429", transient=True)
    with pytest.raises(EmbedderError):
        built.events.handle_job(job("embed", event_ids))
    embedder.failing = EmbedderError("401 bad key", transient=False)
    with pytest.raises(EmbedderError):  # every text refused: the model's fault, the job fails
        built.events.handle_job(job("embed", event_ids))
    embedder.failing = None
    assert built.events.handle_job(job("embed", event_ids)).embedded == 3


def test_a_new_model_reembeds_through_the_reindex_jobs(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    event_ids = load(client)
    built.events.drain()
    calls = len(embedder.calls)
    index = built.events.handle_job(job("index", event_ids))  # an index job asks no model
    assert (index.indexed, index.embedded, len(embedder.calls)) == (3, 0, calls)
    assert built.events.drain().embedded == 0  # its embed job: every vector still fresh
    embedder.model = "concepts-v2@256"
    built.events.handle_job(job("index", event_ids))
    assert built.events.drain().embedded == 3  # the embed job it queued re-embeds
    oak = event_ids[0]
    assert ids(search(client, text="which timber did I pick for the worktop"))[0] == oak


def test_deleted_events_leave_no_vector_behind(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    oak, *_ = load(client)
    built.events.drain()
    built.events.handle_job(job("delete", [oak]))
    assert oak not in ids(search(client, text="which timber did I pick for the worktop"))


PARAPHRASE = "which timber did I pick for the worktop"


def test_the_weight_comes_from_the_request_then_the_profile(
    hybrid: tuple[ApiClient, Services],
) -> None:
    client, built = hybrid
    oak, *_ = load(client)
    built.events.drain()
    assert ids(search(client, text=PARAPHRASE))[0] == oak  # the profile's 0.4
    assert oak not in ids(search(client, text=PARAPHRASE, dense_weight=0))  # lexical alone
    assert ids(search(client, text=PARAPHRASE, dense_weight=1))[0] == oak
    refused = search(client, text=PARAPHRASE, dense_weight=1.5)
    assert refused.status == 400 and refused.error_code == "INVALID_FIELD"


def test_a_worker_with_another_model_queues_the_reembedding_of_everything(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder, tmp_path: Path
) -> None:
    client, built = hybrid
    load(client)
    built.events.drain()
    embedder.model = "concepts-v2@256"
    again = bootstrap.build(built.settings, embedder=embedder)  # a new worker process
    assert again.events.drain().embedded == 3
    assert bootstrap.build(built.settings, embedder=embedder).events.drain().embedded == 0


def test_only_embed_jobs_ask_the_model_so_a_model_outage_holds_up_nothing_else(
    hybrid: tuple[ApiClient, Services], embedder: ConceptEmbedder
) -> None:
    client, built = hybrid
    oak, budget, _ = load(client)
    embedder.failing = EmbedderError("503", transient=True)
    assert built.events.handle_job(job("index", [oak, budget])).indexed == 2
    assert built.events.handle_job(job("delete", [budget])).removed == 1
    with pytest.raises(EmbedderError):
        built.events.handle_job(job("embed", [oak]))


def test_the_index_refusing_vectors_falls_back_to_words(
    hybrid: tuple[ApiClient, Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, built = hybrid
    _, budget, _ = load(client)
    built.events.drain()

    def refused(*_: object) -> None:
        raise StorageError("search service error: HttpResponseError (400)")

    monkeypatch.setattr(built.index, "nearest", refused)
    reply = search(client, text="budget")
    assert reply.status == 200 and ids(reply)[0] == budget


def test_an_event_is_recorded_and_indexed_when_its_embed_job_cannot_be_queued(
    hybrid: tuple[ApiClient, Services], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, built = hybrid
    send = built.queue.send

    def no_embed_jobs(queue: str, body: str, **options: object) -> None:
        if '"embed"' in body:
            raise StorageUnavailable("queue down")
        send(queue, body, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(built.queue, "send", no_embed_jobs)
    body = {"digest": "Oak countertop.", "source_type": "chat", "timestamp": "2026-01-09T10:00:00Z"}
    reply = post(client, body, "no-embed")
    assert reply.status == 201 and reply.data["indexed"] is True
