"""Entra ID tokens for the Azure services the app calls without a key (managed identity
on Azure, the developer's login locally: ``DefaultAzureCredential``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from azure.core.credentials import TokenCredential
from azure.core.exceptions import AzureError
from azure.identity import DefaultAzureCredential, get_bearer_token_provider

from memnet.ports import ExtractorError

log = logging.getLogger(__name__)

COGNITIVE_SERVICES_SCOPE = "https://cognitiveservices.azure.com/.default"


def openai_token_provider(credential: TokenCredential | None = None) -> Callable[[], str]:
    """A callable that returns a bearer token for Azure OpenAI, cached and refreshed by
    azure-identity. A token that cannot be had is a transient
    :class:`~memnet.ports.ExtractorError` (the identity endpoint may be briefly
    unreachable; a missing role assignment stays failing until the replay is parked)."""
    bearer = get_bearer_token_provider(
        credential or DefaultAzureCredential(), COGNITIVE_SERVICES_SCOPE
    )

    def token() -> str:
        try:
            return bearer()
        except AzureError as error:
            log.warning("no Entra token for Azure OpenAI: %s", error)
            message = f"no Entra token for Azure OpenAI ({type(error).__name__})"
            raise ExtractorError(message, transient=True) from error

    return token
