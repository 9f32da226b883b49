"""Identity settings (issue 12): authentication modes, Entra settings, quota window,
secrets out of ``repr``, and which secrets come from Key Vault at startup (the vault
adapter itself is tested at the transport level in
tests/contract/test_keyvault_secrets_transport.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from memnet import auth_wiring
from memnet.adapters.azure import secrets
from memnet.domain.errors import ConfigError
from memnet.settings import Settings
from tests.secret_scan import PLANTED

BASE = {"MEMNET_CALLERS_FILE": "callers.dev.json"}


def test_api_keys_are_the_default_mode():
    assert Settings.from_env(BASE).auth_modes == ("apikeys",)


def test_entra_needs_a_tenant_and_an_audience():
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({**BASE, "MEMNET_AUTH": "entra"})
    assert raised.value.field == "MEMNET_ENTRA_TENANT_ID"
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({**BASE, "MEMNET_AUTH": "entra", "MEMNET_ENTRA_TENANT_ID": "t"})
    assert raised.value.field == "MEMNET_ENTRA_AUDIENCES"
    settings = Settings.from_env(
        {
            **BASE,
            "MEMNET_AUTH": "entra, apikeys",
            "MEMNET_ENTRA_TENANT_ID": "72f988bf-86f1-41af-91ab-2d7cd011db47",
            "MEMNET_ENTRA_AUDIENCES": "api://memnet, 0d4a7c3e-0000-4000-8000-000000000000",
        }
    )
    assert settings.auth_modes == ("entra", "apikeys")
    assert settings.entra_audiences == ("api://memnet", "0d4a7c3e-0000-4000-8000-000000000000")
    assert settings.entra_metadata == (
        "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47"
        "/v2.0/.well-known/openid-configuration"
    )


@pytest.mark.parametrize("modes", ["", "  ", "kerberos", "apikeys,ldap"])
def test_an_unknown_mode_stops_startup(modes: str):
    env = {**BASE, "MEMNET_AUTH": modes}
    if not modes.strip():
        assert Settings.from_env(env).auth_modes == ("apikeys",)  # unset: the default
        return
    with pytest.raises(ConfigError, match="MEMNET_AUTH"):
        Settings.from_env(env)


@pytest.mark.parametrize("window", ["0", "3601", "x"])
def test_the_quota_window_is_bounded(window: str):
    with pytest.raises(ConfigError, match="MEMNET_QUOTA_WINDOW_SECONDS"):
        Settings.from_env({**BASE, "MEMNET_QUOTA_WINDOW_SECONDS": window})


@pytest.mark.parametrize("batch_max", ["0", "-1", "x"])
def test_the_quota_batch_cap_is_at_least_one(batch_max: str):
    with pytest.raises(ConfigError, match="MEMNET_QUOTA_BATCH_MAX"):
        Settings.from_env({**BASE, "MEMNET_QUOTA_BATCH_MAX": batch_max})
    assert Settings.from_env({**BASE, "MEMNET_QUOTA_BATCH_MAX": "16"}).quota_batch_max == 16


APP_SERVICE = {**BASE, "MEMNET_AUTH": "appservice", "MEMNET_ENTRA_TENANT_ID": "t"}


@pytest.mark.parametrize("platform", [None, "", "False", "false", "1", "yes"])
def test_appservice_is_refused_unless_the_platform_says_authentication_is_on(
    platform: str | None,
):
    """Only App Service sets WEBSITE_AUTH_ENABLED (to "True") when its authentication is
    on; anything else means client-sent X-MS-CLIENT-PRINCIPAL headers reach the app."""
    env = APP_SERVICE if platform is None else {**APP_SERVICE, "WEBSITE_AUTH_ENABLED": platform}
    with pytest.raises(ConfigError, match="WEBSITE_AUTH_ENABLED") as raised:
        Settings.from_env(env)
    assert raised.value.field == "MEMNET_AUTH"


@pytest.mark.parametrize("platform", ["True", "true", " TRUE "])
def test_appservice_starts_behind_the_platforms_authentication(platform: str):
    settings = Settings.from_env({**APP_SERVICE, "WEBSITE_AUTH_ENABLED": platform})
    assert settings.auth_modes == ("appservice",) and settings.app_service_auth_on


def test_other_modes_do_not_need_the_platforms_authentication():
    assert not Settings.from_env({**BASE, "MEMNET_AUTH": "apikeys"}).app_service_auth_on


def test_secrets_stay_out_of_the_settings_repr():
    settings = Settings.from_env(
        {
            **BASE,
            "MEMNET_API_KEY_PEPPER": PLANTED["api key pepper"],
            "MEMNET_OPENAI_API_KEY": PLANTED["openai api key"],
            "MEMNET_SEARCH_API_KEY": PLANTED["search api key"],
            "MEMNET_BLOB": "AccountKey=" + PLANTED["vault secret"],
        }
    )
    text = repr(settings)
    assert all(value not in text for value in PLANTED.values())


@pytest.fixture
def vault(monkeypatch: pytest.MonkeyPatch) -> list[Sequence[str]]:
    """The vault holds the pepper and the search key; record what was asked."""
    asked: list[Sequence[str]] = []
    stored = {
        "memnet-api-key-pepper": PLANTED["api key pepper"],
        "memnet-search-api-key": PLANTED["search api key"],
    }

    def read(url: str, names: Sequence[str], **_: Any) -> dict[str, str]:
        assert url == "https://memnet-kv.vault.azure.net"
        asked.append(list(names))
        return {n: stored[n] for n in names if n in stored}

    monkeypatch.setattr(secrets, "read_vault_secrets", read)
    return asked


def test_the_vault_fills_the_secrets_the_environment_lacks(vault: list[Sequence[str]]):
    env = {
        **BASE,
        "MEMNET_KEYVAULT_URL": "https://memnet-kv.vault.azure.net",
        "MEMNET_OPENAI_API_KEY": "from-the-environment",
    }
    settings = auth_wiring.with_vault_secrets(Settings.from_env(env))
    assert vault == [["memnet-api-key-pepper", "memnet-embedder-api-key", "memnet-search-api-key"]]
    assert settings.api_key_pepper == PLANTED["api key pepper"]
    assert settings.search_api_key == PLANTED["search api key"]
    assert settings.extractor_api_key == "from-the-environment"  # the environment wins


def test_no_vault_no_request(vault: list[Sequence[str]]):
    settings = Settings.from_env(BASE)
    assert auth_wiring.with_vault_secrets(settings) is settings and vault == []
