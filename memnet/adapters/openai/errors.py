"""What the ``openai`` adapters share: SDK failures mapped once onto a port's error (the extractor's
:class:`~memnet.ports.ExtractorError`, the embedder's :class:`~memnet.ports.EmbedderError`).

Both adapters let the client retry first (``max_retries``); what still fails is mapped
here. No message carries the server's error text: it may quote the prompt or the input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

import openai

from memnet.domain.errors import ConfigError

MAX_RETRIES_LIMIT = 10
MAX_TIMEOUT_SECONDS = 600.0
RETRYABLE_STATUSES = frozenset({408, 409, 429})


class PortError(Protocol):
    """A port's error class: ``ExtractorError`` or ``EmbedderError``."""

    def __call__(self, message: str, *, transient: bool) -> Exception: ...


@contextmanager
def map_openai_errors(timeout: float, retries: int, error: PortError) -> Iterator[None]:
    """Every ``openai`` failure as an ``error``, raised after the client's own retries:
    transient for timeouts, connection errors, 408, 409, 429 and 5xx; permanent otherwise
    (a bad request, key or deployment will not heal by retrying)."""
    tries = f"{retries + 1} tries"
    try:
        yield
    except openai.APITimeoutError as caught:
        message = f"the model server did not answer within {timeout} s ({tries})"
        raise error(message, transient=True) from caught
    except openai.APIConnectionError as caught:
        raise error(f"could not reach the model server ({tries})", transient=True) from caught
    except openai.APIStatusError as caught:
        status = caught.status_code
        transient = status in RETRYABLE_STATUSES or status >= 500
        message = f"the model server answered {status}{_error_code(caught)}"
        if transient:
            message += f" ({tries})"
        raise error(message, transient=transient) from caught
    except openai.OpenAIError as caught:
        message = f"the model call failed ({type(caught).__name__})"
        raise error(message, transient=False) from caught


def _error_code(error: openai.APIStatusError) -> str:
    """The server's short error code (``content_filter``, ``model_not_found``) if it
    gave one; its message may quote the prompt, so it is left out."""
    code = error.code if isinstance(error.code, str) and len(error.code) <= 64 else None
    return f" ({code})" if code else ""


def azure_client(
    source: str,
    endpoint: str,
    deployment: str,
    api_version: str,
    api_key: str | None,
    token_provider: Callable[[], str] | None,
) -> openai.AzureOpenAI:
    """An Azure OpenAI client for one deployment, authenticated by exactly one of
    ``api_key`` (the ``api-key`` header) or ``token_provider`` (an Entra bearer token, see
    :func:`memnet.adapters.azure.identity.openai_token_provider`); ``source`` names the
    adapter in the :class:`ConfigError` otherwise."""
    if (api_key is None) == (token_provider is None):
        raise ConfigError(source, "credential", "exactly one of an api key and a token provider")
    return openai.AzureOpenAI(
        azure_endpoint=endpoint,
        azure_deployment=deployment,
        api_version=api_version,
        api_key=api_key,
        azure_ad_token_provider=token_provider,
    )
