"""local.settings.json loading, as `func start` does it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


class LocalSettingsError(ValueError):
    """local.settings.json exists but cannot be used."""


def load_local_settings(path: str | Path = "local.settings.json") -> dict[str, str]:
    """Put the file's `Values` into os.environ unless already set (environment wins).

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
