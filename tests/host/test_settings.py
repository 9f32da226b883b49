"""local.settings.json loading."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from funchost import LocalSettingsError, load_local_settings


def test_values_applied_unless_environment_has_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FH_TEST_KEPT", "from-env")
    for name in ("FH_TEST_NEW", "FH_TEST_FLAG"):
        monkeypatch.setenv(name, "placeholder")  # so teardown restores the original state
        monkeypatch.delenv(name)
    settings = tmp_path / "local.settings.json"
    values = {"FH_TEST_KEPT": "from-file", "FH_TEST_NEW": "new", "FH_TEST_FLAG": True}
    settings.write_text(json.dumps({"IsEncrypted": False, "Values": values}))
    applied = load_local_settings(settings)
    assert applied == {"FH_TEST_NEW": "new", "FH_TEST_FLAG": "true"}
    assert os.environ["FH_TEST_KEPT"] == "from-env"
    assert os.environ["FH_TEST_NEW"] == "new"


def test_missing_file_is_fine(tmp_path: Path) -> None:
    assert load_local_settings(tmp_path / "nope.json") == {}


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"Values": [1]}'])
def test_malformed_file_names_the_file(tmp_path: Path, text: str) -> None:
    settings = tmp_path / "local.settings.json"
    settings.write_text(text)
    with pytest.raises(LocalSettingsError, match=r"local\.settings\.json"):
        load_local_settings(settings)
