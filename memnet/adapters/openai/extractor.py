"""An :class:`~memnet.ports.Extractor` over a chat-completions model (spec 13, 9.3): any
OpenAI-compatible server (OpenAI, Ollama, vLLM) or Azure OpenAI (docs/extractors.md).

One call per replay: the profile-derived system prompt and JSON Schema
(:mod:`memnet.adapters.openai.prompt`), the bounded documents and transcript, and a
bounded answer. The answer is parsed as strict JSON and returned as it is; the replay
worker checks it against the contract. The client's own retries (``max_retries``,
exponential backoff from 0.5 s, or the server's ``Retry-After``) cover timeouts, 429 and
5xx; what still fails is mapped once, in :func:`map_openai_errors`, onto
:class:`~memnet.ports.ExtractorError`. No message carries transcript or answer text.

Worst case per replay: ``(max_retries + 1) * timeout_seconds`` plus the backoff between
tries (0.5 s, 1 s, 2 s, ... up to 8 s, or what ``Retry-After`` asks, at most 120 s).
The timeout bounds each wait for bytes, not the whole answer: a server that trickles
bytes faster than that can take longer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionMessage
from openai.types.chat.chat_completion import Choice

from memnet.adapters.openai.errors import (
    MAX_RETRIES_LIMIT,
    MAX_TIMEOUT_SECONDS,
    azure_client,
    map_openai_errors,
)
from memnet.adapters.openai.prompt import (
    PROMPT_VERSION,
    SchemaKey,
    output_schema,
    system_prompt,
    user_message,
)
from memnet.domain.errors import ConfigError
from memnet.domain.replay_contract import ExtractionRequest
from memnet.ports import ExtractorError

log = logging.getLogger(__name__)

ADAPTER_VERSION = "1.0.0"
MAX_TOKENS_LIMIT = 32_768
MIN_PROMPT_CHARS = 4_000
DEFAULT_PROMPT_CHARS = 60_000
TokenParameter = Literal["max_tokens", "max_completion_tokens"]


class ChatExtractor:
    """Asks a chat model for the replay output. ``client`` is a built ``openai.OpenAI``
    (or ``openai.AzureOpenAI``); this class sets its timeout and retries. ``schemas``
    (content JSON Schemas by ``(schema_id, schema_version)``) put each writable
    section's schema in the prompt; without them the model sees the current documents
    only. ``token_parameter``: ``max_completion_tokens`` for reasoning models that refuse
    ``max_tokens`` (Ollama knows only ``max_tokens``)."""

    name = "openai-chat"

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        max_tokens: int = 4096,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        max_prompt_chars: int = DEFAULT_PROMPT_CHARS,
        schemas: Mapping[SchemaKey, Mapping[str, Any]] | None = None,
        token_parameter: TokenParameter = "max_tokens",
    ) -> None:
        _check_bounds(model, max_tokens, timeout_seconds, max_retries, max_prompt_chars)
        self._client = client.with_options(timeout=timeout_seconds, max_retries=max_retries)
        self._model, self._max_tokens, self._token_parameter = model, max_tokens, token_parameter
        self._max_prompt_chars, self._schemas = max_prompt_chars, dict(schemas or {})
        self._timeout, self._retries = timeout_seconds, max_retries
        self.version = f"{ADAPTER_VERSION}+prompt{PROMPT_VERSION}.{model}"

    def extract(self, request: ExtractionRequest) -> Any:
        """The model's answer as parsed JSON, unchecked; :class:`ExtractorError` when
        there is none (transient: timeout, connection, 429, 5xx after the retries)."""
        with map_openai_errors(self._timeout, self._retries, ExtractorError):
            completion = self._client.chat.completions.create(
                model=self._model,
                messages=[
                    {"role": "system", "content": system_prompt(request.profile, self._schemas)},
                    {"role": "user", "content": user_message(request, self._max_prompt_chars)},
                ],
                response_format={
                    "type": "json_schema",
                    "json_schema": {
                        "name": "memnet_replay",
                        "schema": output_schema(request.profile),
                        "strict": False,
                    },
                },
                **self._token_limit(),
            )
        return parse_answer(completion, self._max_tokens)

    def _token_limit(self) -> dict[str, Any]:
        return {self._token_parameter: self._max_tokens}

    def describe(self) -> str:
        return f"{self.name} {self.version}"


def _check_bounds(
    model: str, max_tokens: int, timeout: float, retries: int, prompt_chars: int
) -> None:
    """Refuse settings that would make a replay unbounded or useless (a startup error)."""
    checks = [
        ("model", bool(model), "a model or deployment name"),
        ("max_tokens", 1 <= max_tokens <= MAX_TOKENS_LIMIT, f"1 to {MAX_TOKENS_LIMIT}"),
        ("timeout_seconds", 0 < timeout <= MAX_TIMEOUT_SECONDS, f"0 to {MAX_TIMEOUT_SECONDS} s"),
        ("max_retries", 0 <= retries <= MAX_RETRIES_LIMIT, f"0 to {MAX_RETRIES_LIMIT}"),
        ("max_prompt_chars", prompt_chars >= MIN_PROMPT_CHARS, f"at least {MIN_PROMPT_CHARS}"),
    ]
    for field, ok, expected in checks:
        if not ok:
            raise ConfigError("openai-chat extractor", field, f"must be {expected}")


def parse_answer(completion: ChatCompletion, max_tokens: int) -> Any:
    """The first choice's content as strict JSON (no NaN, no repeated keys), or a
    permanent :class:`ExtractorError` saying why there is none."""
    choice = _first_choice(completion)
    _log_usage(completion, choice.finish_reason)
    if choice.finish_reason == "length":
        raise ExtractorError(
            f"the answer was cut at max_tokens ({max_tokens}): raise it", transient=False
        )
    if choice.finish_reason == "content_filter":
        raise ExtractorError("the server's content filter stopped the answer", transient=False)
    if choice.message.refusal:
        raise ExtractorError("the model refused to answer", transient=False)
    content = choice.message.content
    if not isinstance(content, str) or not content.strip():
        raise ExtractorError("the answer has no content", transient=False)
    return strict_json(content)


def _first_choice(completion: ChatCompletion) -> Choice:
    """The SDK does not validate answers, so a server's odd body is checked here."""
    choices = getattr(completion, "choices", None)
    choice = choices[0] if isinstance(choices, list) and choices else None
    if not isinstance(choice, Choice) or not isinstance(
        getattr(choice, "message", None), ChatCompletionMessage
    ):
        raise ExtractorError("the model server answered without a choice", transient=False)
    return choice


def strict_json(text: str) -> Any:
    """``text`` parsed as RFC 8259 JSON; the error names the position, never the text."""
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as error:
        message = f"the answer is not JSON ({error.msg} at char {error.pos})"
        raise ExtractorError(message, transient=False) from error
    except _NotStrict as error:
        raise ExtractorError(f"the answer is not strict JSON ({error})", transient=False) from error


class _NotStrict(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _NotStrict("NaN and Infinity are not JSON")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _NotStrict("an object repeats a key")
    return found


def _log_usage(completion: ChatCompletion, finish_reason: str) -> None:
    usage = getattr(completion, "usage", None)
    log.info(
        "openai-chat answer: finish_reason=%s prompt_tokens=%s completion_tokens=%s",
        finish_reason,
        getattr(usage, "prompt_tokens", None),
        getattr(usage, "completion_tokens", None),
    )


def for_openai_compatible(base_url: str, api_key: str, model: str, **options: Any) -> ChatExtractor:
    """An extractor on an OpenAI-compatible server: ``https://api.openai.com/v1``,
    Ollama's ``http://localhost:11434/v1``, vLLM's ``http://host:8000/v1``. ``api_key``
    goes out as ``Authorization: Bearer``; Ollama and an unsecured vLLM ignore it.
    ``options``: the :class:`ChatExtractor` keywords."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "none")
    return ChatExtractor(client, model, **options)


def for_azure_openai(
    endpoint: str,
    deployment: str,
    api_version: str,
    api_key: str | None = None,
    token_provider: Callable[[], str] | None = None,
    **options: Any,
) -> ChatExtractor:
    """An extractor on an Azure OpenAI deployment, authenticated by exactly one of
    ``api_key`` (the ``api-key`` header) or ``token_provider`` (an Entra bearer token,
    see :func:`memnet.adapters.azure.identity.openai_token_provider`)."""
    client = azure_client(
        "azure-openai extractor", endpoint, deployment, api_version, api_key, token_provider
    )
    return ChatExtractor(client, deployment, **options)
