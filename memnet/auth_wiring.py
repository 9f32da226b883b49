"""Wiring of who may call: the authentication modes ``MEMNET_AUTH`` names, and the
configuration secrets read from Key Vault at startup (docs/identity.md). Part of the
composition root (:mod:`memnet.bootstrap` calls it)."""

from __future__ import annotations

import dataclasses
from typing import Any

from memnet.domain.callers import ANY
from memnet.domain.errors import ConfigError
from memnet.ports import Authenticator
from memnet.services.profiles.registry import ProfileRegistry
from memnet.settings import Settings


def authenticator(settings: Settings, registry: ProfileRegistry) -> Authenticator:
    """The modes ``MEMNET_AUTH`` names, all reading their callers from the callers file,
    whose references to profiles and sensitivity classes are checked against
    ``registry`` first: a broken reference stops startup (:func:`check_references`)."""
    from memnet.adapters.authenticators import CallerModes, EntraAuthenticator
    from memnet.adapters.local.apikeys import ApiKeyAuthenticator, principal_map, read_entries

    assert settings.callers_file is not None  # Settings.check guarantees it
    source = str(settings.callers_file)
    entries = read_entries(settings.callers_file)
    check_references(entries, source, registry)
    principals = principal_map(entries, source)
    modes: dict[str, Authenticator] = {}
    if "apikeys" in settings.auth_modes:
        modes["api_keys"] = ApiKeyAuthenticator.from_entries(
            entries, source, settings.api_key_pepper
        )
    if "entra" in settings.auth_modes:
        from memnet.adapters.azure.entra import JwtVerifier

        verifier = JwtVerifier(
            settings.entra_metadata,
            settings.entra_audiences,
            leeway_seconds=settings.entra_leeway_seconds,
        )
        modes["entra"] = EntraAuthenticator(verifier, principals)
    if "appservice" in settings.auth_modes:
        from memnet.adapters.azure.appservice import AppServiceAuthenticator

        assert settings.entra_tenant_id is not None  # Settings.check guarantees it
        modes["app_service"] = AppServiceAuthenticator(
            principals, settings.entra_tenant_id, settings.entra_audiences
        )
    return CallerModes(**modes)


def check_references(
    entries: list[tuple[str, dict[str, Any]]], source: str, registry: ProfileRegistry
) -> None:
    """Every name a caller entry uses that something else must define: each profile of
    ``profiles`` is a loaded profile (or ``"*"``), and a ``clearance`` is a sensitivity
    class of one of them. A caller bound to a profile that does not exist could call but
    never name a usable profile (every request a misleading ``PROFILE_REQUIRED``); a
    clearance no profile knows would leave it at the lowest class. Both stop startup,
    naming the file, the entry, the caller and the name."""
    for where, entry in entries:
        _check_profiles(entry, where, source, registry)
        _check_clearance(entry, where, source, registry)


def _check_profiles(
    entry: dict[str, Any], where: str, source: str, registry: ProfileRegistry
) -> None:
    known = registry.profile_ids()
    for i, name in enumerate(entry["profiles"]):
        if name != ANY and registry.get(name) is None:
            raise ConfigError(
                source,
                f"{where}/profiles/{i}",
                f"caller {entry['caller_id']!r} names profile {name!r}, which is not among "
                f"the loaded profiles {known} (MEMNET_PROFILES_DIR)",
            )


def _check_clearance(
    entry: dict[str, Any], where: str, source: str, registry: ProfileRegistry
) -> None:
    name = entry.get("clearance")
    if name is None:
        return
    named = entry["profiles"]
    ids = registry.profile_ids() if ANY in named else list(named)
    classes = {
        c
        for p in ids
        if (profile := registry.get(p)) is not None
        and (rules := profile.raw.get("sensitivity_rules")) is not None
        for c in rules["classes"]
    }
    if name not in classes:
        raise ConfigError(
            source,
            f"{where}/clearance",
            f"caller {entry['caller_id']!r}: {name!r} is not a sensitivity class of the "
            "profiles this caller may use",
        )


def with_vault_secrets(settings: Settings) -> Settings:
    """``settings`` with the secrets it lacks read from ``MEMNET_KEYVAULT_URL`` (managed
    identity); a secret set in the environment (or the local settings file) wins."""
    if not settings.keyvault_url:
        return settings
    from memnet.adapters.azure.secrets import VAULT_SECRET_NAMES, read_vault_secrets

    fields = {
        "MEMNET_API_KEY_PEPPER": "api_key_pepper",
        "MEMNET_OPENAI_API_KEY": "extractor_api_key",
        "MEMNET_EMBEDDER_API_KEY": "embedder_api_key",
        "MEMNET_SEARCH_API_KEY": "search_api_key",
    }
    missing = {s: f for s, f in fields.items() if getattr(settings, f) is None}
    found = read_vault_secrets(settings.keyvault_url, [VAULT_SECRET_NAMES[s] for s in missing])
    names = {f: VAULT_SECRET_NAMES[s] for s, f in missing.items()}
    changes: dict[str, Any] = {f: found[n] for f, n in names.items() if n in found}
    return dataclasses.replace(settings, **changes)
