"""What must be true before ``azd`` provisions or deploys, checked on the deploying
machine (the ``preprovision`` and ``predeploy`` hooks): otherwise ``azd up`` succeeds and
then every request fails, because the app cannot start.

- The callers registry the app will read (``MEMNET_CALLERS_FILE``, default
  ``callers.json``, relative to the package root) exists, ships (``.funcignore`` does not
  drop it), is not the development file nor holds its keys, and passes the app's own
  startup checks (:func:`memnet.auth_wiring.authenticator` over the repository's profiles).
- It has a caller for each authentication mode ``MEMNET_AUTH`` names: an Entra entry for
  ``entra`` or ``appservice``, an API-key entry for ``apikeys``.
- ``appservice`` has the API's client id (``MEMNET_ENTRA_CLIENT_ID``), which App
  Service Authentication's Entra provider needs.
- The console's Entra sign-in (``MEMNET_CONSOLE_CLIENT_ID``) has ``entra`` among the
  modes and a delegated entry for the console's client id, for its users to map to.

Each problem is one line naming the setting or file and what to do."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath

import pathspec

from memnet import auth_wiring
from memnet.adapters.local.apikeys import read_entries
from memnet.domain.errors import ConfigError
from memnet.services.profiles.registry import load_registry
from memnet.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DEV_CALLERS = "callers.dev.json"
_PLACEHOLDER_TENANT = "00000000-0000-0000-0000-000000000000"  # not called: nothing is fetched


def funcignore(root: Path = ROOT) -> pathspec.GitIgnoreSpec:
    """``.funcignore`` as the Functions tooling reads it (gitignore rules)."""
    lines = (root / ".funcignore").read_text(encoding="utf-8").splitlines()
    return pathspec.GitIgnoreSpec.from_lines(lines)


def ships(relative: str, root: Path = ROOT) -> bool:
    """Whether the file ``relative`` (to ``root``) is in the package: neither it nor a
    folder above it is ignored, as a directory walk sees it."""
    spec, parts = funcignore(root), relative.split("/")
    folders = ["/".join(parts[:depth]) + "/" for depth in range(1, len(parts))]
    return not any(spec.match_file(p) for p in [*folders, relative])


def problems(env: Mapping[str, str], root: Path = ROOT) -> list[str]:
    """Everything that would keep the deployed app from serving, one line each."""
    modes = _listed(env.get("MEMNET_AUTH") or "entra")
    found = _callers_file_problems(env.get("MEMNET_CALLERS_FILE") or "callers.json", root)
    if found:
        return found
    relative = env.get("MEMNET_CALLERS_FILE") or "callers.json"
    found = _startup_problems(root / relative, modes, env, root)
    if "appservice" in modes and not env.get("MEMNET_ENTRA_CLIENT_ID"):
        found.append(
            "MEMNET_ENTRA_CLIENT_ID: appservice auth turns on App Service Authentication, "
            "whose Entra provider needs the API's client id (azd env set "
            "MEMNET_ENTRA_CLIENT_ID <client id>)"
        )
    return found


def _callers_file_problems(relative: str, root: Path) -> list[str]:
    name = PurePosixPath(relative)
    if name.is_absolute() or ".." in name.parts:
        return [f"MEMNET_CALLERS_FILE: {relative} must be a path inside the package"]
    if name.name == DEV_CALLERS:
        return [f"MEMNET_CALLERS_FILE: {relative} holds the development keys; never deploy it"]
    if not (root / relative).is_file():
        return [
            f"MEMNET_CALLERS_FILE: {relative} does not exist; write the production callers "
            "registry there (docs/deploy.md, docs/identity.md)"
        ]
    if not ships(str(name), root):
        return [f"MEMNET_CALLERS_FILE: {relative} is excluded by .funcignore: it would not ship"]
    return []


def _startup_problems(
    path: Path, modes: tuple[str, ...], env: Mapping[str, str], root: Path
) -> list[str]:
    """The app's own startup checks of ``path`` for ``modes``, then one caller per mode."""
    settings = Settings(
        profiles_dir=root / "profiles",
        callers_file=path,
        auth_modes=modes,
        entra_tenant_id=env.get("AZURE_TENANT_ID") or _PLACEHOLDER_TENANT,
        entra_audiences=tuple(
            a.strip() for a in env.get("MEMNET_ENTRA_AUDIENCES", "").split(",") if a.strip()
        ),
        app_service_auth_on=True,  # the template turns it on with appservice
        console_client_id=env.get("MEMNET_CONSOLE_CLIENT_ID") or None,
    )
    try:
        settings.check()
        auth_wiring.authenticator(settings, load_registry(settings.profiles_dir))
        entries = [entry for _, entry in read_entries(path)]
    except ConfigError as error:
        return [f"{error.source}: {error.field}: {error.problem}"]
    return _mode_problems(path, modes, entries, root) + _console_problems(path, settings, entries)


def _mode_problems(
    path: Path, modes: tuple[str, ...], entries: list[dict[str, object]], root: Path
) -> list[str]:
    found = []
    keys = [e["key_sha256"] for e in entries if "key_sha256" in e]
    dev_keys = {e["key_sha256"] for _, e in read_entries(root / DEV_CALLERS)}
    if dev_keys.intersection(keys):
        found.append(f"{path.name}: holds a development key of {DEV_CALLERS}; never deploy it")
    if {"entra", "appservice"} & set(modes) and len(keys) == len(entries):
        found.append(
            f"{path.name}: MEMNET_AUTH names Entra ID but no entry has entra_app_id "
            "or entra_object_id"
        )
    if "apikeys" in modes and not keys:
        found.append(f"{path.name}: MEMNET_AUTH names apikeys but no entry has key_sha256")
    return found


def _console_problems(
    path: Path, settings: Settings, entries: list[dict[str, object]]
) -> list[str]:
    """People signing in to the console are delegated callers of its client id: without
    such an entry each of them would be refused (403 CALLER_NOT_REGISTERED)."""
    client_id = settings.console_client_id
    if not client_id or any(
        e.get("entra_app_id") == client_id and e.get("delegated") is True for e in entries
    ):
        return []
    return [
        f"{path.name}: MEMNET_CONSOLE_CLIENT_ID is set but no entry has that entra_app_id "
        'with "delegated": true (docs/console.md "Signing in with Entra ID")'
    ]


def _listed(text: str) -> tuple[str, ...]:
    """A comma-separated setting, as the app reads it."""
    return tuple(part.strip() for part in text.split(",") if part.strip())
