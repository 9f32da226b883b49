"""The console's Entra ID sign-in settings (issue 28; docs/console.md "Signing in with
Entra ID"): what they need of the Entra settings, what they derive from them, and how
the page carries them (a meta element, attribute-escaped) with a policy that reaches the
sign-in origin only when they are set, also while the app cannot start."""

from __future__ import annotations

import html
import json
import re

import pytest

from memnet.api import console
from memnet.api.http import ApiRequest
from memnet.domain.errors import ConfigError, Unavailable
from memnet.settings import Settings

TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
ENTRA = {
    "MEMNET_CALLERS_FILE": "callers.dev.json",
    "MEMNET_AUTH": "entra",
    "MEMNET_ENTRA_TENANT_ID": TENANT,
    "MEMNET_ENTRA_AUDIENCES": "0d4a7c3e-0000-4000-8000-000000000000, api://memnet",
}
CONSOLE = {**ENTRA, "MEMNET_CONSOLE_CLIENT_ID": "c0c0c0c0-0000-4000-8000-000000000001"}


def test_the_authority_and_scope_follow_the_entra_settings() -> None:
    settings = Settings.from_env(CONSOLE)
    assert console.sign_in_config(settings) == {
        "clientId": "c0c0c0c0-0000-4000-8000-000000000001",
        "authority": f"https://login.microsoftonline.com/{TENANT}",
        "scope": "api://memnet/Memory.Access",  # the Application ID URI, not the client id
    }
    other = Settings.from_env({**CONSOLE, "MEMNET_CONSOLE_SCOPE": "api://memnet/Console.Use"})
    assert other.console_api_scope == "api://memnet/Console.Use"


def test_without_a_console_client_id_there_is_no_entra_sign_in() -> None:
    assert console.sign_in_config(Settings.from_env(ENTRA)) is None
    assert console.sign_in_config(Settings.from_env({"MEMNET_CALLERS_FILE": "x.json"})) is None


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({**CONSOLE, "MEMNET_AUTH": "apikeys"}, "MEMNET_AUTH"),
        (
            {**CONSOLE, "MEMNET_ENTRA_TENANT_ID": "", "MEMNET_ENTRA_METADATA_URL": "https://x/"},
            "MEMNET_ENTRA_TENANT_ID",
        ),
    ],
)
def test_a_console_client_id_needs_entra_and_a_tenant(env: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Settings.from_env(env)
    assert raised.value.field == named


def test_the_page_carries_the_settings_escaped_and_lets_the_sign_in_origin_in() -> None:
    hostile = 'api://memnet/"><script>alert(1)</script>&x'
    policy, meta = served(Settings.from_env({**CONSOLE, "MEMNET_CONSOLE_SCOPE": hostile}))
    assert "<" not in meta and '"' not in meta
    assert json.loads(html.unescape(meta))["scope"] == hostile
    assert "connect-src 'self' https://login.microsoftonline.com;" in policy
    assert "frame-src 'none';" in policy  # no iframe: renewal uses the refresh token


def test_without_sign_in_or_while_not_ready_the_page_offers_api_keys_only() -> None:
    for settings in (Settings.from_env(ENTRA), None):
        policy, meta = served(settings)
        assert meta == ""
        assert "login.microsoftonline.com" not in policy and "frame-src 'none'" in policy


class Built:
    """Just the part of the built services the page reads."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings


def served(settings: Settings | None) -> tuple[str, str]:
    """The page's policy and its meta content, served with ``settings`` (None: the
    services cannot start)."""

    def source() -> Built:
        if settings is None:
            raise Unavailable("The service is not ready.", code="NOT_READY")
        return Built(settings)

    request = ApiRequest("GET", "/console/", {"path": ""}, {})
    answer = console.get_console(request, source)  # type: ignore[arg-type]
    assert answer.status == 200
    found = re.search(rb'<meta name="memnet-entra" content="([^"]*)">', answer.body)
    assert found is not None
    return answer.headers["Content-Security-Policy"], found.group(1).decode()
