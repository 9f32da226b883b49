"""What every command starts from: the settings file (``local.settings.json``, read as
``func start`` reads it), the data directory, and the services built from them."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memnet.settings import LOCAL_SETTINGS

if TYPE_CHECKING:
    from memnet.bootstrap import Services


class LocalSettingsError(ValueError):
    """local.settings.json exists but cannot be used."""


def add_settings_options(command: argparse.ArgumentParser) -> None:
    """``--settings`` and ``--data-dir``, which :func:`load` reads."""
    command.add_argument(
        "--settings",
        default=str(LOCAL_SETTINGS),
        help="values file read like `func start` does (environment wins; default: the "
        "app's local.settings.json)",
    )
    command.add_argument(
        "--data-dir",
        help="overrides MEMNET_DATA_DIR (a relative path is from the working directory)",
    )


def load(args: argparse.Namespace) -> Services:
    """The services from the settings file and the environment. Paths in settings are
    from the app's root (memnet.settings); a path typed on the command line is from the
    working directory, as a shell user means it."""
    load_local_settings(args.settings)
    if args.data_dir:
        os.environ["MEMNET_DATA_DIR"] = str(Path(args.data_dir).resolve())
    from memnet import bootstrap, callers
    from memnet.settings import Settings

    return bootstrap.build(callers.with_vault_secrets(Settings.from_env()))


def load_local_settings(path: str | Path = LOCAL_SETTINGS) -> dict[str, str]:
    """Put the file's ``Values`` into os.environ unless already set (environment wins).

    Returns the settings that were applied. A missing file applies nothing.
    """
    values = _read_values(Path(path))
    applied: dict[str, str] = {}
    for name, raw in values.items():
        if name not in os.environ:
            os.environ[name] = applied[name] = _as_text(raw)
    return applied


def _read_values(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LocalSettingsError(f"{path}: malformed JSON: {exc}") from exc
    if not isinstance(document, dict):
        raise LocalSettingsError(f"{path}: expected a JSON object at the top level")
    values = document.get("Values", {})
    if not isinstance(values, dict):
        raise LocalSettingsError(f"{path}: 'Values' must be a JSON object")
    return values


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)
