"""An :class:`~memnet.ports.Embedder` over an embeddings endpoint (issue 16, hybrid
retrieval): any OpenAI-compatible server (OpenAI, Ollama, vLLM) or Azure OpenAI.

``embed`` cuts each text to its first ``max_input_chars`` characters (code points; the
server refuses an input over its token limit, 8,192 for OpenAI's models, and 8,000 chars
of English are about 2,000 tokens) and sends the texts ``batch_size`` at a time as
``POST /embeddings`` with ``encoding_format: "float"`` and, only when configured,
``dimensions``. Every answer is parsed here as strict JSON (no ``NaN``) and checked
before anything is returned: one vector per text, matched by its ``index`` (answers
may come in any order), all of one size, every number finite, none all zero. Vectors
come back as the server gives them, not normalised (OpenAI's are unit length, other
models' may not be): compare by cosine.

The client's own retries (``max_retries``, exponential backoff from 0.5 s, or the
server's ``Retry-After``) cover timeouts, 429 and 5xx; what still fails is mapped once
(:func:`~memnet.adapters.openai.errors.map_openai_errors`) onto
:class:`~memnet.ports.EmbedderError`. No message carries input text.

Worst case per request: ``(max_retries + 1) * timeout_seconds`` plus the backoff
between tries (0.5 s, 1 s, 2 s, ... up to 8 s, or what ``Retry-After`` asks, at most
120 s); ``embed`` makes ``ceil(len(texts) / batch_size)`` requests, one after another.
A request carries at most ``batch_size * max_input_chars`` characters (by default
64 * 8,000 = 512,000, about 128,000 tokens of English, under OpenAI's 300,000 tokens
per request; text of nearly a token per character needs a smaller ``batch_size``).
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable
from typing import Any

import openai

from memnet.adapters.openai.errors import (
    MAX_RETRIES_LIMIT,
    MAX_TIMEOUT_SECONDS,
    azure_client,
    map_openai_errors,
)
from memnet.domain.errors import ConfigError
from memnet.ports import EmbedderError, ExtractorError

MAX_BATCH_SIZE = 256
DEFAULT_BATCH_SIZE = 64
MAX_INPUT_CHARS_LIMIT = 32_000
DEFAULT_MAX_INPUT_CHARS = 8_000
MAX_DIMENSIONS = 8_192
PROBE_TEXT = "dimensions probe"


class OpenAIEmbedder:
    """Embeds texts with ``model`` (for Azure OpenAI, the deployment). ``client`` is a
    built ``openai.OpenAI`` (or ``openai.AzureOpenAI``); this class sets its timeout and
    retries. ``dimensions``: the vector size to ask for (models that can shorten their
    vectors, such as ``text-embedding-3-*``); without it the server's own size is used
    and the first answer fixes it: a later answer of another size is an error."""

    name = "openai-embeddings"

    def __init__(
        self,
        client: openai.OpenAI,
        model: str,
        *,
        dimensions: int | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
        timeout_seconds: float = 30.0,
        max_retries: int = 2,
    ) -> None:
        _check_bounds(model, dimensions, batch_size, max_input_chars, timeout_seconds, max_retries)
        self._client = client.with_options(timeout=timeout_seconds, max_retries=max_retries)
        self._model, self._asked, self._dimensions = model, dimensions, dimensions
        self._batch_size, self._max_input_chars = batch_size, max_input_chars
        self._timeout, self._retries = timeout_seconds, max_retries
        self._fixing = threading.Lock()

    @property
    def model(self) -> str:
        """The model and its vector size, ``"<model>@<dimensions>"``."""
        return f"{self._model}@{self.dimensions}"

    @property
    def dimensions(self) -> int:
        """The configured size, else the size of the first answer; read before any
        answer, it asks the server once (one short text) and may raise
        :class:`EmbedderError`."""
        if self._dimensions is None:
            return len(self.embed([PROBE_TEXT])[0])  # which fixed it
        return self._dimensions

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One vector per text, in order (see the module docstring)."""
        _refuse_empty(texts)
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            vectors.extend(self._embed_batch([text[: self._max_input_chars] for text in batch]))
        return vectors

    def describe(self) -> str:
        size = self._dimensions if self._dimensions is not None else "?"
        return f"{self.name} {self._model}@{size} batch_size={self._batch_size}"

    def _embed_batch(self, batch: list[str]) -> list[list[float]]:
        with map_openai_errors(self._timeout, self._retries, EmbedderError):
            response = self._client.embeddings.with_raw_response.create(
                model=self._model, input=batch, encoding_format="float", **self._size_option()
            )
            body = response.content
        vectors = read_vectors(strict_json(body), len(batch))
        self._fix_dimensions(len(vectors[0]))
        return vectors

    def _size_option(self) -> dict[str, Any]:
        return {} if self._asked is None else {"dimensions": self._asked}

    def _fix_dimensions(self, size: int) -> None:
        """The first answer fixes the size when none was configured; every answer after
        it must match (a server that changed model under the same name)."""
        with self._fixing:
            if self._dimensions is None:
                self._dimensions = size
        if size != self._dimensions:
            message = f"the answer's vectors have {size} dimensions, not {self._dimensions}"
            raise EmbedderError(message, transient=False)


def _check_bounds(
    model: str,
    dimensions: int | None,
    batch_size: int,
    max_input_chars: int,
    timeout: float,
    retries: int,
) -> None:
    """Refuse settings that would make a call unbounded or useless (a startup error)."""
    checks = [
        ("model", bool(model), "a model or deployment name"),
        ("dimensions", dimensions is None or 1 <= dimensions <= MAX_DIMENSIONS, "1 to 8192"),
        ("batch_size", 1 <= batch_size <= MAX_BATCH_SIZE, f"1 to {MAX_BATCH_SIZE}"),
        ("max_input_chars", 1 <= max_input_chars <= MAX_INPUT_CHARS_LIMIT, "1 to 32000"),
        ("timeout_seconds", 0 < timeout <= MAX_TIMEOUT_SECONDS, f"0 to {MAX_TIMEOUT_SECONDS} s"),
        ("max_retries", 0 <= retries <= MAX_RETRIES_LIMIT, f"0 to {MAX_RETRIES_LIMIT}"),
    ]
    for field, ok, expected in checks:
        if not ok:
            raise ConfigError("openai-embeddings embedder", field, f"must be {expected}")


def _refuse_empty(texts: list[str]) -> None:
    """An empty text has no meaning to embed, and OpenAI refuses the whole request."""
    for position, text in enumerate(texts):
        if not text:
            raise EmbedderError(f"text {position} is empty", transient=False)


def strict_json(body: bytes) -> Any:
    """The answer's body parsed here, not by the SDK: its models coerce what they read
    (``true`` becomes 1.0, a huge integer raises ``OverflowError``), and its parser
    takes ``NaN``. The error names the position, never the text."""
    try:
        return json.loads(body, parse_constant=_no_constant)
    except json.JSONDecodeError as error:
        message = f"the answer is not JSON ({error.msg} at char {error.pos})"
        raise EmbedderError(message, transient=False) from error
    except UnicodeDecodeError as error:
        raise EmbedderError("the answer is not UTF-8 JSON", transient=False) from error


def _no_constant(name: str) -> Any:
    raise EmbedderError("the answer is not strict JSON (NaN or Infinity)", transient=False)


def read_vectors(answer: Any, count: int) -> list[list[float]]:
    """The answer's ``count`` vectors in input order, or a permanent
    :class:`EmbedderError` saying what is wrong."""
    data = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(data, list):
        raise EmbedderError("the model server answered without data", transient=False)
    if len(data) != count:
        message = f"the answer has {len(data)} vectors for {count} texts"
        raise EmbedderError(message, transient=False)
    by_index = {_index(item, count): item for item in data}
    if len(by_index) != count:
        raise EmbedderError("the answer repeats an index", transient=False)
    vectors = [_vector(by_index[i], i) for i in range(count)]
    if len({len(vector) for vector in vectors}) != 1:
        raise EmbedderError("the answer's vectors differ in size", transient=False)
    return vectors


def _index(item: Any, count: int) -> int:
    index = item.get("index") if isinstance(item, dict) else None
    if type(index) is not int or not 0 <= index < count:
        raise EmbedderError(f"the answer has an index outside 0 to {count - 1}", transient=False)
    return index


def _vector(item: Any, index: int) -> list[float]:
    numbers = item.get("embedding")
    if not isinstance(numbers, list) or not numbers:
        raise EmbedderError(f"the answer has no vector at index {index}", transient=False)
    if not all(_finite(x) for x in numbers):
        message = f"the vector at index {index} has a value that is not a finite number"
        raise EmbedderError(message, transient=False)
    if not any(numbers):
        raise EmbedderError(f"the vector at index {index} is all zero", transient=False)
    return [float(x) for x in numbers]


def _finite(number: Any) -> bool:
    """A JSON number a float can hold: not a bool, NaN, an infinity or a huge integer."""
    if type(number) is int:
        return number.bit_length() < 1024
    return type(number) is float and math.isfinite(number)


def for_openai_compatible(
    base_url: str, api_key: str, model: str, dimensions: int | None = None, **options: Any
) -> OpenAIEmbedder:
    """An embedder on an OpenAI-compatible server: ``https://api.openai.com/v1``,
    Ollama's ``http://localhost:11434/v1``, vLLM's ``http://host:8000/v1``. ``api_key``
    goes out as ``Authorization: Bearer``; Ollama and an unsecured vLLM ignore it.
    ``options``: the :class:`OpenAIEmbedder` keywords."""
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "none")
    return OpenAIEmbedder(client, model, dimensions=dimensions, **options)


def for_azure_openai(
    endpoint: str,
    deployment: str,
    api_version: str,
    api_key: str | None = None,
    token_provider: Callable[[], str] | None = None,
    dimensions: int | None = None,
    **options: Any,
) -> OpenAIEmbedder:
    """An embedder on an Azure OpenAI deployment, authenticated by exactly one of
    ``api_key`` (the ``api-key`` header) or ``token_provider`` (an Entra bearer token,
    see :func:`memnet.adapters.azure.identity.openai_token_provider`)."""
    provider = _embedder_token(token_provider) if token_provider else None
    client = azure_client(
        "azure-openai embedder", endpoint, deployment, api_version, api_key, provider
    )
    return OpenAIEmbedder(client, deployment, dimensions=dimensions, **options)


def _embedder_token(provider: Callable[[], str]) -> Callable[[], str]:
    """``provider`` with the identity helper's failure (an :class:`ExtractorError`, the
    error of its first user) raised as the :class:`EmbedderError` it means."""

    def token() -> str:
        try:
            return provider()
        except ExtractorError as error:
            raise EmbedderError(str(error), transient=error.transient) from error

    return token
