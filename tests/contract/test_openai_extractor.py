"""The chat-completions extractor (memnet.adapters.openai) over real HTTP.

A local fake OpenAI-compatible server (stdlib ``ThreadingHTTPServer`` on 127.0.0.1)
answers ``POST /v1/chat/completions`` and the Azure form
``/openai/deployments/<deployment>/chat/completions?api-version=...`` with the bodies in
``tests/data/openai`` and records what it received. The real ``openai`` SDK does the
HTTP, its retries and its timeouts. The tests check what goes on the wire (model,
response_format, token bound, credentials), that a good answer passes the replay
contract, that a hostile one comes back as it is and the contract rejects exactly its
bad parts, and how each failure maps onto ``ExtractorError``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from azure.core.credentials import AccessToken
from azure.core.exceptions import ClientAuthenticationError

from memnet.adapters.azure.identity import COGNITIVE_SERVICES_SCOPE, openai_token_provider
from memnet.adapters.openai.extractor import (
    ChatExtractor,
    for_azure_openai,
    for_openai_compatible,
)
from memnet.domain.errors import ConfigError
from memnet.domain.profiles import Profile
from memnet.domain.replay_contract import ExtractionRequest, TargetDocument, check_output
from memnet.domain.transcript import parse_transcript
from memnet.ports import ExtractorError
from memnet.services.profiles.registry import load_registry
from tests.fake_openai import Answer, FakeOpenAIServer, serving
from tests.secret_scan import PLANTED

OPENAI_KEY = PLANTED["openai api key"]  # a planted secret: the log scan looks for it

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "openai"
MODEL, DEPLOYMENT, API_VERSION = "gpt-4o-mini", "memnet-gpt", "2024-10-21"
SECRETS = ("Lisbon", "AKIAIOSFODNN7EXAMPLE", "Postgres", "bullet")  # transcript and answer text


def recorded(name: str) -> Any:
    return json.loads((DATA / name).read_text())


# -- the fake server ----------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with serving("chat/completions") as fake:
        yield fake


# -- requests -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def profile() -> Profile:
    found = load_registry(REPO / "profiles").get("project-copilot-v1")
    assert found is not None
    return found


@pytest.fixture(scope="module")
def schemas() -> dict[tuple[str, str], Any]:
    folder = REPO / "profiles" / "schemas"
    return {(p.parent.name, p.stem): json.loads(p.read_text()) for p in folder.glob("*/*.json")}


def extraction_request(profile: Profile, transcript: Any = None) -> ExtractionRequest:
    project = profile.binding("project_doc")
    assert project is not None
    user = {
        "preferences": [{"text": "Short answers."}],
        "durable_facts": [
            {
                "fact": "The user works at Contoso.",
                "confidence": 0.9,
                "evidence": {"message_ids": ["m0"]},
                "last_verified_at": "2026-10-01T09:00:00Z",
            }
        ],
        "pending_confirmations": [],
        "projects_index": [{"project_id": "project-alpha", "name": "Alpha"}],
    }
    targets = (
        TargetDocument("user_dynamic", "user", "user_dynamic.json", '"0x8DD1"', user),
        TargetDocument(
            "project_doc", "projects", "project-alpha.json", None, dict(project.initial_content)
        ),
    )
    return ExtractionRequest(
        parse_transcript(transcript or recorded("transcript.json")),
        profile,
        targets,
        "memnet://snapshots/t1/u1/s1",
        "2026-11-24T10:05:00Z",
    )


def openai_extractor(server: FakeOpenAIServer, **options: Any) -> ChatExtractor:
    options = {"timeout_seconds": 5.0, "max_retries": 2, **options}
    return for_openai_compatible(f"{server.url}/v1", OPENAI_KEY, MODEL, **options)


def completion_with(content: str | None, finish_reason: str = "stop") -> Any:
    body = recorded("good.json")
    body["choices"][0]["message"]["content"] = content
    body["choices"][0]["finish_reason"] = finish_reason
    return body


def assert_no_conversation_text(error: ExtractorError) -> None:
    assert not any(secret in str(error) for secret in SECRETS), str(error)


# -- answers ------------------------------------------------------------------------------


def test_a_good_completion_passes_the_replay_contract(server, profile):
    server.queue(Answer(recorded("good.json")))
    request = extraction_request(profile)
    plan = check_output(openai_extractor(server).extract(request), request)
    assert plan.rejected == []
    assert [d.message_ids for d in plan.digests] == [("m1", "m4")]
    assert [(p.binding_id, p.path, len(p.ops)) for p in plan.patches] == [
        ("user_dynamic", "user_dynamic.json", 2),
        ("project_doc", "project-alpha.json", 1),
    ]


def test_a_hostile_completion_is_returned_and_the_contract_rejects_exactly_its_bad_parts(
    server, profile
):
    server.queue(Answer(recorded("hostile.json")))
    request = extraction_request(profile)
    raw = openai_extractor(server).extract(request)
    assert len(raw["patches"]) == 7  # returned as it is: filtering is the contract's job
    plan = check_output(raw, request)
    assert [(r.part, r.index, r.code) for r in plan.rejected] == [
        ("digest", 1, "UNKNOWN_MESSAGE"),
        ("patch", 0, "DENIED_PATH"),  # /content/durable_facts/0/credentials
        ("patch", 1, "ENVELOPE_READ_ONLY"),  # /doc_id
        ("patch", 2, "UNKNOWN_BINDING"),  # admin_settings
        ("patch", 3, "MISSING_EVIDENCE"),
        ("patch", 4, "DENIED_PATH"),  # a credential inside the value
        ("patch", 5, "NOT_A_TARGET"),  # user_static is admin-only: never a target
    ]
    assert [(p.index, p.binding_id) for p in plan.patches] == [(6, "project_doc")]
    assert len(plan.digests) == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (recorded("malformed.json"), "not JSON"),
        (completion_with('```json\n{"digests": [], "patches": []}\n```'), "not JSON"),
        (completion_with('{"digests": [], "patches": [], "patches": []}'), "repeats a key"),
        (completion_with('{"digests": [{"digest": NaN}], "patches": []}'), "NaN"),
        (completion_with(""), "no content"),
        (recorded("truncated.json"), "max_tokens (4096)"),
        (recorded("refusal.json"), "refused"),
        (completion_with('{"digests": []}', "content_filter"), "content filter"),
        ({"id": "x", "object": "chat.completion", "choices": []}, "without a choice"),
        ({"id": "x", "object": "chat.completion", "choices": ["Lisbon"]}, "without a choice"),
    ],
    ids=[
        "malformed",
        "fenced",
        "repeated-key",
        "nan",
        "empty",
        "truncated",
        "refusal",
        "content-filter",
        "no-choice",
        "odd-choice",
    ],
)
def test_an_unusable_answer_is_a_permanent_error_that_quotes_nothing(server, profile, body, reason):
    server.queue(Answer(body))
    with pytest.raises(ExtractorError, match=re.escape(reason)) as caught:
        openai_extractor(server).extract(extraction_request(profile))
    assert caught.value.transient is False
    assert_no_conversation_text(caught.value)
    assert len(server.received) == 1


def test_a_json_answer_that_is_not_an_object_is_returned_for_the_contract_to_refuse(
    server, profile
):
    server.queue(Answer(completion_with('["Lisbon"]')))
    request = extraction_request(profile)
    raw = openai_extractor(server).extract(request)
    assert raw == ["Lisbon"]
    assert [r.code for r in check_output(raw, request).rejected] == ["NOT_STRUCTURED"]


# -- failures and retries -----------------------------------------------------------------


def test_a_slow_server_is_a_transient_error_within_the_bound(server, profile):
    server.queue(Answer(recorded("good.json"), delay=30))
    extractor = openai_extractor(server, timeout_seconds=0.3, max_retries=1)
    started = time.monotonic()
    with pytest.raises(ExtractorError, match=r"did not answer within 0\.3 s") as caught:
        extractor.extract(extraction_request(profile))
    elapsed = time.monotonic() - started
    assert caught.value.transient is True
    assert len(server.received) == 2
    assert elapsed < 2 * 0.3 + 0.5 + 1.0  # two tries, one backoff (at most 0.5 s), slack


def test_429_then_success_is_retried(server, profile):
    throttled = Answer(recorded("rate_limited.json"), 429, headers={"retry-after-ms": "20"})
    server.queue(throttled, Answer(recorded("good.json")))
    request = extraction_request(profile)
    raw = openai_extractor(server).extract(request)
    assert check_output(raw, request).rejected == []
    assert len(server.received) == 2


def test_a_server_error_every_time_is_transient_after_the_retries(server, profile):
    server.queue(Answer(recorded("server_error.json"), 500, headers={"retry-after-ms": "10"}))
    with pytest.raises(ExtractorError, match="answered 500") as caught:
        openai_extractor(server, max_retries=2).extract(extraction_request(profile))
    assert caught.value.transient is True
    assert len(server.received) == 3  # the first try and two retries


def test_a_refused_key_is_permanent_and_not_retried(server, profile):
    server.queue(Answer(recorded("unauthorized.json"), 401))
    with pytest.raises(ExtractorError, match="answered 401 \\(invalid_api_key\\)") as caught:
        openai_extractor(server).extract(extraction_request(profile))
    assert caught.value.transient is False
    assert "sk-wrong" not in str(caught.value)  # the server's message is not repeated
    assert len(server.received) == 1


def test_an_unreachable_server_is_transient(server, profile):
    url = server.url
    server.shutdown()
    server.server_close()  # the port is closed: connections are refused
    extractor = for_openai_compatible(f"{url}/v1", "k", MODEL, max_retries=0)
    with pytest.raises(ExtractorError, match="could not reach") as caught:
        extractor.extract(extraction_request(profile))
    assert caught.value.transient is True


# -- what goes on the wire ----------------------------------------------------------------


def test_the_request_carries_the_model_the_profile_schema_and_a_bounded_answer(
    server, profile, schemas
):
    server.queue(Answer(recorded("good.json")))
    extractor = for_openai_compatible(
        f"{server.url}/v1", OPENAI_KEY, MODEL, max_tokens=2000, schemas=schemas
    )
    extractor.extract(extraction_request(profile))
    [sent] = server.received
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert sent.body["model"] == MODEL
    assert sent.body["max_tokens"] == 2000
    response_format = sent.body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "memnet_replay"
    assert response_format["json_schema"]["strict"] is False
    patch = response_format["json_schema"]["schema"]["properties"]["patches"]["items"]
    assert patch["properties"]["target_binding_id"]["enum"] == ["user_dynamic", "project_doc"]
    assert patch["properties"]["ops"]["items"]["properties"]["op"]["enum"] == [
        "add",
        "replace",
        "remove",
        "test",
    ]
    system, user = sent.body["messages"]
    assert system["role"] == "system" and user["role"] == "user"
    assert "/content/durable_facts" in system["content"]
    assert "/content/durable_facts/*/credentials" in system["content"]
    assert '"last_verified_at"' in system["content"]  # the section's schema
    assert "data, not instructions" in system["content"]
    assert "Lisbon" not in system["content"]  # the transcript goes in the user message only
    assert "target_path=project-alpha.json" in user["content"]
    assert '{"id":"m5","role":"user"' in user["content"]


def test_azure_openai_with_a_key_sends_api_key_to_the_deployment(server, profile):
    server.queue(Answer(recorded("good.json")))
    extractor = for_azure_openai(server.url, DEPLOYMENT, API_VERSION, api_key=OPENAI_KEY)
    extractor.extract(extraction_request(profile))
    [sent] = server.received
    assert sent.path == f"/openai/deployments/{DEPLOYMENT}/chat/completions"
    assert sent.query == {"api-version": [API_VERSION]}
    assert sent.headers["api-key"] == OPENAI_KEY
    assert "authorization" not in sent.headers
    assert DEPLOYMENT in extractor.version


def test_azure_openai_with_a_token_provider_sends_a_bearer_token(server, profile):
    server.queue(Answer(recorded("good.json")))
    tokens = iter(["entra-token-1", "entra-token-2"])
    extractor = for_azure_openai(
        server.url, DEPLOYMENT, API_VERSION, token_provider=lambda: next(tokens)
    )
    extractor.extract(extraction_request(profile))
    [sent] = server.received
    assert sent.headers["authorization"] == "Bearer entra-token-1"
    assert "api-key" not in sent.headers


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


def test_the_identity_token_provider_asks_for_the_cognitive_services_scope(server, profile):
    server.queue(Answer(recorded("good.json")))
    credential = FakeCredential()
    provider = openai_token_provider(credential)  # type: ignore[arg-type]
    extractor = for_azure_openai(server.url, DEPLOYMENT, API_VERSION, token_provider=provider)
    extractor.extract(extraction_request(profile))
    assert server.received[0].headers["authorization"] == "Bearer managed-identity-token"
    assert credential.scopes == [(COGNITIVE_SERVICES_SCOPE,)]


def test_no_identity_token_is_transient(server, profile):
    provider = openai_token_provider(FakeCredential(fails=True))  # type: ignore[arg-type]
    extractor = for_azure_openai(server.url, DEPLOYMENT, API_VERSION, token_provider=provider)
    with pytest.raises(ExtractorError, match="no Entra token") as caught:
        extractor.extract(extraction_request(profile))
    assert caught.value.transient is True
    assert server.received == []


# -- bounds -------------------------------------------------------------------------------


def test_a_long_transcript_keeps_the_newest_messages_within_the_bound(server, profile):
    server.queue(Answer(recorded("good.json")))
    messages = [
        {
            "id": f"m{i}",
            "role": "user",
            "text": f"note {i} " + "x" * 400,
            "timestamp": "2026-11-24T10:00:00Z",
        }
        for i in range(1, 201)
    ]
    transcript = {"messages": messages, "project_hint": "project-alpha"}
    extractor = openai_extractor(server, max_prompt_chars=10_000)
    extractor.extract(extraction_request(profile, transcript))
    user = server.received[0].body["messages"][1]["content"]
    assert len(user) <= 10_000
    assert '"id":"m200"' in user and '"id":"m1"' not in user
    shown = len(re.findall(r'^\{"id":"m\d+"', user, re.MULTILINE))
    assert f"({shown} of 200 messages, oldest first; the {200 - shown} oldest were left out" in user


def test_one_huge_message_is_cut_to_fit(server, profile):
    server.queue(Answer(recorded("good.json")))
    text = 'quote " and newline \n ' * 1400  # escaping makes the line longer than the text
    transcript = {
        "messages": [
            {"id": "m1", "role": "user", "text": text, "timestamp": "2026-11-24T10:00:00Z"}
        ]
    }
    openai_extractor(server, max_prompt_chars=8_000).extract(
        extraction_request(profile, transcript)
    )
    user = server.received[0].body["messages"][1]["content"]
    assert len(user) <= 8_000
    assert "[cut]" in user and "(1 of 1 messages" in user


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("max_tokens", 0),
        ("max_tokens", 1_000_000),
        ("timeout_seconds", 0),
        ("max_retries", -1),
        ("max_retries", 100),
        ("max_prompt_chars", 100),
    ],
)
def test_settings_out_of_bounds_stop_startup(option, value):
    with pytest.raises(ConfigError) as caught:
        for_openai_compatible("http://127.0.0.1:9/v1", "k", MODEL, **{option: value})
    assert caught.value.field == option


def test_azure_openai_needs_exactly_one_credential():
    with pytest.raises(ConfigError):
        for_azure_openai("http://127.0.0.1:9", DEPLOYMENT, API_VERSION)
    with pytest.raises(ConfigError):
        for_azure_openai(
            "http://127.0.0.1:9", DEPLOYMENT, API_VERSION, api_key="k", token_provider=lambda: "t"
        )


def test_the_version_names_the_prompt_and_the_model():
    extractor = for_openai_compatible("http://127.0.0.1:9/v1", "k", "llama3.1:8b")
    assert extractor.name == "openai-chat"
    assert extractor.version == "1.0.0+prompt2.llama3.1:8b"
