"""The local values file, ``local.settings.json``, loaded into the environment as
``func start`` does (the environment wins), for the local host and the commands; its
values are then read as any setting (:mod:`memnet.settings`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from memnet.settings import LOCAL_SETTINGS


class LocalSettingsError(ValueError):
    """local.settings.json exists but cannot be used."""


def load_local_settings(path: str | Path = LOCAL_SETTINGS) -> dict[str, str]:
    """Put the file's ``Values`` into os.environ unless already set (the environment wins),
    as ``func start`` does. Returns the settings that were applied; a missing file applies
    nothing."""
    applied: dict[str, str] = {}
    for name, raw in _local_values(Path(path)).items():
        if name not in os.environ:
            os.environ[name] = applied[name] = _as_text(raw)
    return applied


def _local_values(path: Path) -> dict[str, Any]:
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
