"""Hybrid search settings (issue 16): no embedder by default, what each embedder needs,
the weight's range, and the embedder bootstrap builds from them (its HTTP behaviour is
tested in tests/contract/test_openai_embedder.py)."""

from __future__ import annotations

import pytest

from memnet import wiring
from memnet.adapters.openai.embedder import OpenAIEmbedder
from memnet.domain.errors import ConfigError
from memnet.settings import Settings

BASE = {"MEMNET_CALLERS_FILE": "callers.dev.json"}
OPENAI = {
    **BASE,
    "MEMNET_EMBEDDER": "openai",
    "MEMNET_EMBEDDER_BASE_URL": "http://127.0.0.1:11434/v1",
    "MEMNET_EMBEDDER_MODEL": "nomic-embed-text",
}


def test_no_embedder_by_default_so_search_is_lexical() -> None:
    settings = Settings.from_env(BASE)
    assert (settings.embedder, settings.search_dense_weight) == ("none", 0.7)
    assert wiring.make_embedder(settings) is None


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"MEMNET_EMBEDDER": "sentence-transformers"}, "MEMNET_EMBEDDER"),
        ({"MEMNET_EMBEDDER": "openai"}, "MEMNET_EMBEDDER_BASE_URL"),
        ({**OPENAI, "MEMNET_EMBEDDER_MODEL": ""}, "MEMNET_EMBEDDER_MODEL"),
        ({"MEMNET_EMBEDDER": "azure-openai", "MEMNET_EMBEDDER_MODEL": "e"},
         "MEMNET_EMBEDDER_ENDPOINT"),
        ({**OPENAI, "MEMNET_SEARCH": "azure", "MEMNET_SEARCH_ENDPOINT": "https://s"},
         "MEMNET_EMBEDDER_DIMENSIONS"),
        ({"MEMNET_SEARCH_DENSE_WEIGHT": "1.5"}, "MEMNET_SEARCH_DENSE_WEIGHT"),
        ({"MEMNET_SEARCH_DENSE_WEIGHT": "half"}, "MEMNET_SEARCH_DENSE_WEIGHT"),
        ({"MEMNET_SEARCH_MAX_VECTORS": "0"}, "MEMNET_SEARCH_MAX_VECTORS"),
    ],
)  # fmt: skip
def test_a_broken_embedder_setting_stops_startup(env: dict[str, str], field: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({**BASE, **env})
    assert raised.value.field == field


def test_an_openai_compatible_embedder_is_built_from_the_settings() -> None:
    settings = Settings.from_env({**OPENAI, "MEMNET_EMBEDDER_DIMENSIONS": "768"})
    embedder = wiring.make_embedder(settings)
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model == "nomic-embed-text@768"  # no request: the size is configured


def test_azure_openai_takes_the_extractor_endpoint_unless_its_own_is_set() -> None:
    env = {
        **BASE,
        "MEMNET_EMBEDDER": "azure-openai",
        "MEMNET_AZURE_OPENAI_ENDPOINT": "https://aoai.openai.azure.com",
        "MEMNET_EMBEDDER_MODEL": "embeddings",
        "MEMNET_EMBEDDER_API_KEY": "k",
        "MEMNET_EMBEDDER_DIMENSIONS": "1536",
    }
    assert Settings.from_env(env).embedder_endpoint == "https://aoai.openai.azure.com"
    own = {**env, "MEMNET_EMBEDDER_ENDPOINT": "https://other.openai.azure.com"}
    settings = Settings.from_env(own)
    assert settings.embedder_endpoint == "https://other.openai.azure.com"
    assert "embedder_api_key" not in repr(settings)  # a secret: out of repr
    assert wiring.make_embedder(settings).model == "embeddings@1536"  # type: ignore[union-attr]


def test_azure_search_gets_a_vector_field_of_the_embedders_size_only_with_an_embedder() -> None:
    azure = {**BASE, "MEMNET_SEARCH": "azure", "MEMNET_SEARCH_ENDPOINT": "https://s.search"}
    lexical = wiring.search_index(Settings.from_env(azure))
    assert lexical.vector_dimensions is None  # type: ignore[attr-defined]
    hybrid = Settings.from_env({**azure, **OPENAI, "MEMNET_EMBEDDER_DIMENSIONS": "384"})
    index = wiring.search_index(hybrid)
    assert index.vector_dimensions == 384  # type: ignore[attr-defined]
    assert wiring.event_vectors(index, wiring.make_embedder(hybrid)) is not None
    with pytest.raises(ConfigError):
        wiring.event_vectors(lexical, wiring.make_embedder(hybrid))
