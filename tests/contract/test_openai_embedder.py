"""The embeddings adapter (memnet.adapters.openai.embedder) over real HTTP.

A local fake OpenAI-compatible server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1)
answers ``POST /v1/embeddings`` and the Azure form
``/openai/deployments/<deployment>/embeddings?api-version=...`` with the bodies in
``tests/data/openai`` (or bodies made from the request) and records what it received.
The real ``openai`` SDK does the HTTP, its retries and its timeouts. The tests check
what goes on the wire (model, input, encoding, dimensions, credentials), batching and
order, truncation, that every malformed answer is refused without quoting a text, and
how each failure maps onto ``EmbedderError``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError

from memnet.adapters.azure.identity import COGNITIVE_SERVICES_SCOPE, openai_token_provider
from memnet.adapters.openai.embedder import (
    OpenAIEmbedder,
    for_azure_openai,
    for_openai_compatible,
)
from memnet.domain.errors import ConfigError
from memnet.ports import Embedder, EmbedderError
from tests.fake_openai import Answer, FakeOpenAIServer, serving
from tests.secret_scan import PLANTED

OPENAI_KEY = PLANTED["openai api key"]  # a planted secret: the log scan looks for it

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "openai"
MODEL, DEPLOYMENT, API_VERSION = "text-embedding-3-small", "memnet-embed", "2024-10-21"
TEXTS = ["The user lives in Lisbon.", "Ships on Postgres.", "Prefers bullet points."]
SECRETS = ("Lisbon", "Postgres", "bullet")  # input text: never in an error message


def recorded(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def three_with(change: Callable[[Any], None]) -> Any:
    body = recorded("embeddings_three.json")
    change(body)
    return body


# -- the fake server ----------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with serving("embeddings") as fake:
        yield fake


def by_length(request: Any, size: int = 4) -> Any:
    """An answer made from the request: the vector of a text starts with its length,
    and the entries come in reverse index order (the API promises ``index``, not order)."""
    data = [
        {"object": "embedding", "index": i, "embedding": [float(len(text))] + [0.5] * (size - 1)}
        for i, text in enumerate(request["input"])
    ]
    usage = {"prompt_tokens": 1, "total_tokens": 1}
    return {"object": "list", "data": data[::-1], "model": MODEL, "usage": usage}


def embedder(server: FakeOpenAIServer, **options: Any) -> OpenAIEmbedder:
    options = {"timeout_seconds": 5.0, "max_retries": 2, **options}
    return for_openai_compatible(f"{server.url}/v1", OPENAI_KEY, MODEL, **options)


def assert_quotes_no_text(error: EmbedderError) -> None:
    assert not any(secret in str(error) for secret in SECRETS), str(error)


# -- answers ------------------------------------------------------------------------------


def test_a_good_answer_gives_one_vector_per_text_as_the_server_gave_it(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    found: Embedder = embedder(server)
    vectors = found.embed(TEXTS)
    assert vectors == [item["embedding"] for item in recorded("embeddings_three.json")["data"]]
    assert found.dimensions == 8
    assert found.model == f"{MODEL}@8"  # the first answer fixed the size
    assert len(server.received) == 1


def test_an_answer_out_of_index_order_is_put_back_in_input_order(server):
    server.queue(Answer(three_with(lambda body: body["data"].reverse())))
    vectors = embedder(server).embed(TEXTS)
    expected = recorded("embeddings_three.json")["data"]
    assert vectors == [item["embedding"] for item in expected]


def test_no_texts_make_no_request(server):
    assert embedder(server).embed([]) == []
    assert server.received == []


def test_an_empty_text_is_refused_before_any_request(server):
    with pytest.raises(EmbedderError, match="text 1 is empty") as caught:
        embedder(server).embed(["Lisbon", "", "Postgres"])
    assert caught.value.transient is False
    assert server.received == []


def test_a_long_list_goes_in_batches_and_comes_back_in_order(server):
    server.queue(Answer(by_length))
    texts = ["w" * (i + 1) for i in range(10)]
    vectors = embedder(server, batch_size=4).embed(texts)
    assert [sent.body["input"] for sent in server.received] == [
        texts[0:4],
        texts[4:8],
        texts[8:10],
    ]
    assert [vector[0] for vector in vectors] == [float(i + 1) for i in range(10)]


def test_a_failing_batch_fails_the_whole_call(server):
    server.queue(Answer(by_length), Answer(recorded("unauthorized.json"), 401))
    with pytest.raises(EmbedderError, match="answered 401"):
        embedder(server, batch_size=2).embed(["a", "b", "c"])
    assert len(server.received) == 2


def test_each_text_is_cut_to_max_input_chars_keeping_its_start(server):
    server.queue(Answer(by_length))
    long = "Lisbon " + "x" * 300
    vectors = embedder(server, max_input_chars=100).embed([long, "short"])
    assert server.received[0].body["input"] == [long[:100], "short"]
    assert [vector[0] for vector in vectors] == [100.0, 5.0]


def test_without_configured_dimensions_a_later_answer_of_another_size_is_refused(server):
    server.queue(Answer(by_length), Answer(lambda request: by_length(request, size=6)))
    found = embedder(server)
    found.embed(["a"])
    with pytest.raises(EmbedderError, match="6 dimensions, not 4") as caught:
        found.embed(["b"])
    assert caught.value.transient is False
    assert found.model == f"{MODEL}@4"


def test_configured_dimensions_refuse_an_answer_of_another_size(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    with pytest.raises(EmbedderError, match="8 dimensions, not 4") as caught:
        embedder(server, dimensions=4).embed(TEXTS)
    assert caught.value.transient is False
    assert_quotes_no_text(caught.value)


def test_reading_the_size_before_any_answer_asks_the_server_once(server):
    server.queue(Answer(by_length))
    found = embedder(server)
    assert "@?" in found.describe()  # describing never calls the server
    assert server.received == []
    assert found.model == f"{MODEL}@4"
    assert found.dimensions == 4
    assert len(server.received) == 1
    assert server.received[0].body["input"] == ["dimensions probe"]


def test_configured_dimensions_name_the_model_without_a_request(server):
    found = embedder(server, dimensions=256)
    assert (found.model, found.dimensions) == (f"{MODEL}@256", 256)
    assert found.describe() == f"openai-embeddings {MODEL}@256 batch_size=64"
    assert server.received == []


def _set(path: tuple[Any, ...], value: Any) -> Callable[[Any], None]:
    def change(body: Any) -> None:
        target = body
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


BAD_ANSWERS = {
    "too-few": (three_with(lambda b: b["data"].pop()), "2 vectors for 3 texts"),
    "too-many": (three_with(lambda b: b["data"].append(b["data"][0])), "4 vectors for 3"),
    "no-data": (three_with(lambda b: b.pop("data")), "without data"),
    "data-not-a-list": (three_with(_set(("data",), {"0": []})), "without data"),
    "duplicate-index": (three_with(_set(("data", 2, "index"), 0)), "repeats an index"),
    "index-out-of-range": (three_with(_set(("data", 2, "index"), 3)), "index outside 0 to 2"),
    "no-index": (three_with(lambda b: b["data"][1].pop("index")), "index outside"),
    "index-as-text": (three_with(_set(("data", 1, "index"), "1")), "index outside"),
    "short-vector": (three_with(lambda b: b["data"][1]["embedding"].pop()), "differ in size"),
    "nan": (three_with(_set(("data", 1, "embedding", 3), float("nan"))), "NaN or Infinity"),
    "infinity": (three_with(_set(("data", 0, "embedding", 0), float("-inf"))), "NaN or"),
    "huge-integer": (three_with(_set(("data", 0, "embedding", 0), 10**400)), "not a finite"),
    "number-as-text": (three_with(_set(("data", 0, "embedding", 0), "0.5")), "not a finite"),
    "boolean": (three_with(_set(("data", 0, "embedding", 0), True)), "not a finite"),
    "empty-vector": (three_with(_set(("data", 1, "embedding"), [])), "no vector at index 1"),
    "base64-vector": (three_with(_set(("data", 1, "embedding"), "AAAA")), "no vector at index 1"),
    "zero-vector": (three_with(_set(("data", 2, "embedding"), [0] * 8)), "all zero"),
    "not-an-object": (["Lisbon"], "without data"),
}


@pytest.mark.parametrize(("body", "reason"), BAD_ANSWERS.values(), ids=BAD_ANSWERS.keys())
def test_an_unusable_answer_is_a_permanent_error_that_quotes_nothing(server, body, reason):
    server.queue(Answer(body))
    with pytest.raises(EmbedderError, match=re.escape(reason)) as caught:
        embedder(server).embed(TEXTS)
    assert caught.value.transient is False
    assert_quotes_no_text(caught.value)
    assert len(server.received) == 1


@pytest.mark.parametrize(
    ("raw", "content_type", "reason"),
    [
        (b'{"data": [Lisbon', "application/json", "not JSON"),
        (b"Lisbon is not JSON", "text/plain", "not JSON"),
        (b'{"data": [{"index": 0, "embedding": [1e400]}]}', "application/json", "not a finite"),
        (b'{"data": "\xff"}', "application/json", "not UTF-8"),
    ],
    ids=["broken-json", "plain-text", "overflowing-float", "not-utf8"],
)
def test_a_body_that_is_not_json_is_a_permanent_error(server, raw, content_type, reason):
    server.queue(Answer(raw=raw, content_type=content_type))
    with pytest.raises(EmbedderError, match=reason) as caught:
        embedder(server).embed(["Lisbon"])
    assert caught.value.transient is False
    assert_quotes_no_text(caught.value)


# -- failures and retries -----------------------------------------------------------------


def test_a_slow_server_is_a_transient_error_within_the_bound(server):
    server.queue(Answer(recorded("embeddings_three.json"), delay=30))
    found = embedder(server, timeout_seconds=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(EmbedderError, match=r"did not answer within 0\.3 s") as caught:
        found.embed(TEXTS)
    elapsed = time.monotonic() - started
    assert caught.value.transient is True
    assert len(server.received) == 2
    assert elapsed < 2 * 0.3 + 0.5 + 1.0  # two tries, one backoff (at most 0.5 s), slack


def test_429_then_success_is_retried(server):
    throttled = Answer(recorded("rate_limited.json"), 429, headers={"retry-after-ms": "20"})
    server.queue(throttled, Answer(recorded("embeddings_three.json")))
    assert len(embedder(server).embed(TEXTS)) == 3
    assert len(server.received) == 2


@pytest.mark.parametrize("status", [429, 500, 503])
def test_throttling_or_a_server_error_every_time_is_transient_after_the_retries(server, status):
    body = recorded("rate_limited.json" if status == 429 else "server_error.json")
    server.queue(Answer(body, status, headers={"retry-after-ms": "10"}))
    with pytest.raises(EmbedderError, match=f"answered {status}") as caught:
        embedder(server, max_retries=2).embed(TEXTS)
    assert caught.value.transient is True
    assert len(server.received) == 3  # the first try and two retries


def test_a_refused_key_is_permanent_and_not_retried(server):
    server.queue(Answer(recorded("unauthorized.json"), 401))
    with pytest.raises(EmbedderError, match="answered 401 \\(invalid_api_key\\)") as caught:
        embedder(server).embed(TEXTS)
    assert caught.value.transient is False
    assert "sk-wrong" not in str(caught.value)  # the server's message is not repeated
    assert len(server.received) == 1


def test_an_unreachable_server_is_transient(server):
    url = server.url
    server.shutdown()
    server.server_close()  # the port is closed: connections are refused
    found = for_openai_compatible(f"{url}/v1", "k", MODEL, max_retries=0)
    with pytest.raises(EmbedderError, match="could not reach") as caught:
        found.embed(TEXTS)
    assert caught.value.transient is True


# -- what goes on the wire ----------------------------------------------------------------


def test_the_request_carries_the_model_the_texts_and_float_encoding_only(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    embedder(server).embed(TEXTS)
    [sent] = server.received
    assert sent.path == "/v1/embeddings"
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert sent.body == {"model": MODEL, "input": TEXTS, "encoding_format": "float"}


def test_configured_dimensions_go_on_the_wire(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    embedder(server, dimensions=8).embed(TEXTS)
    assert server.received[0].body["dimensions"] == 8


def test_azure_openai_with_a_key_sends_api_key_to_the_deployment(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    found = for_azure_openai(server.url, DEPLOYMENT, API_VERSION, api_key=OPENAI_KEY)
    found.embed(TEXTS)
    [sent] = server.received
    assert sent.path == f"/openai/deployments/{DEPLOYMENT}/embeddings"
    assert sent.query == {"api-version": [API_VERSION]}
    assert sent.headers["api-key"] == OPENAI_KEY
    assert "authorization" not in sent.headers
    assert sent.body["input"] == TEXTS
    assert found.model == f"{DEPLOYMENT}@8"


def test_azure_openai_with_a_token_provider_sends_a_bearer_token(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    tokens = iter(["entra-token-1", "entra-token-2"])
    found = for_azure_openai(
        server.url, DEPLOYMENT, API_VERSION, token_provider=lambda: next(tokens), dimensions=8
    )
    found.embed(TEXTS)
    [sent] = server.received
    assert sent.headers["authorization"] == "Bearer entra-token-1"
    assert "api-key" not in sent.headers
    assert sent.body["dimensions"] == 8


class FakeCredential:
    """An azure.core TokenCredential that hands out one token, or fails as
    DefaultAzureCredential does when no identity is available."""

    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.scopes: list[tuple[str, ...]] = []

    def get_token(self, *scopes: str, **kwargs: Any) -> AccessToken:
        self.scopes.append(scopes)
        if self.fails:
            raise ClientAuthenticationError("no managed identity endpoint")
        return AccessToken("managed-identity-token", int(time.time()) + 3600)


def test_the_identity_token_provider_asks_for_the_cognitive_services_scope(server):
    server.queue(Answer(recorded("embeddings_three.json")))
    credential = FakeCredential()
    provider = openai_token_provider(credential)  # type: ignore[arg-type]
    found = for_azure_openai(server.url, DEPLOYMENT, API_VERSION, token_provider=provider)
    found.embed(TEXTS)
    assert server.received[0].headers["authorization"] == "Bearer managed-identity-token"
    assert credential.scopes == [(COGNITIVE_SERVICES_SCOPE,)]


def test_no_identity_token_is_a_transient_embedder_error(server):
    provider = openai_token_provider(FakeCredential(fails=True))  # type: ignore[arg-type]
    found = for_azure_openai(server.url, DEPLOYMENT, API_VERSION, token_provider=provider)
    with pytest.raises(EmbedderError, match="no Entra token") as caught:
        found.embed(TEXTS)
    assert caught.value.transient is True
    assert server.received == []


# -- bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("dimensions", 0),
        ("dimensions", 100_000),
        ("batch_size", 0),
        ("batch_size", 257),
        ("max_input_chars", 0),
        ("max_input_chars", 1_000_000),
        ("timeout_seconds", 0),
        ("timeout_seconds", 601),
        ("max_retries", -1),
        ("max_retries", 100),
    ],
)
def test_settings_out_of_bounds_stop_startup(option, value):
    with pytest.raises(ConfigError) as caught:
        for_openai_compatible("http://127.0.0.1:9/v1", "k", MODEL, **{option: value})
    assert caught.value.field == option


def test_a_model_name_is_required():
    with pytest.raises(ConfigError) as caught:
        for_openai_compatible("http://127.0.0.1:9/v1", "k", "")
    assert caught.value.field == "model"


def test_azure_openai_needs_exactly_one_credential():
    with pytest.raises(ConfigError):
        for_azure_openai("http://127.0.0.1:9", DEPLOYMENT, API_VERSION)
    with pytest.raises(ConfigError):
        for_azure_openai(
            "http://127.0.0.1:9", DEPLOYMENT, API_VERSION, api_key="k", token_provider=lambda: "t"
        )


def test_a_search_asks_once_where_the_worker_retries(server):
    """bootstrap gives searches their own instance of the model: no retry and at most
    QUERY_EMBED_SECONDS, so a failing model costs a search one short try, after which it
    answers with words alone (tests/api/test_hybrid_search.py)."""
    from memnet import wiring
    from memnet.settings import Settings

    env = {
        "MEMNET_CALLERS_FILE": "callers.dev.json",
        "MEMNET_EMBEDDER": "openai",
        "MEMNET_EMBEDDER_BASE_URL": server.url + "/v1",
        "MEMNET_EMBEDDER_MODEL": MODEL,
        "MEMNET_EMBEDDER_DIMENSIONS": "4",
        "MEMNET_EMBEDDER_TIMEOUT_SECONDS": "60",
    }
    settings = Settings.from_env(env)
    server.queue(Answer(recorded("server_error.json"), 500, headers={"retry-after-ms": "10"}))
    with pytest.raises(EmbedderError):
        wiring.make_embedder(settings, for_queries=True).embed(TEXTS)  # type: ignore[union-attr]
    assert len(server.received) == 1
    with pytest.raises(EmbedderError):
        wiring.make_embedder(settings).embed(TEXTS)  # type: ignore[union-attr]
    assert len(server.received) == 1 + 3
    slow = Answer(recorded("embeddings_three.json"), delay=wiring.QUERY_EMBED_SECONDS + 5)
    server.answers[:] = [slow]
    started = time.monotonic()
    with pytest.raises(EmbedderError):
        wiring.make_embedder(settings, for_queries=True).embed(TEXTS)  # type: ignore[union-attr]
    assert time.monotonic() - started < wiring.QUERY_EMBED_SECONDS + 2
