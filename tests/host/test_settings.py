"""local.settings.json loading."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from funchost import HostLimits, LocalSettingsError, load_local_settings


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


def test_host_limits_default_to_the_documented_values() -> None:
    limits = HostLimits.from_env({})
    assert limits == HostLimits(4 * 1024 * 1024, 30.0, 120.0, 256)


def test_host_limits_are_read_from_their_settings() -> None:
    env = {
        "FUNCHOST_MAX_BODY_BYTES": "2048",
        "FUNCHOST_READ_TIMEOUT_SECONDS": "2.5",
        "FUNCHOST_IDLE_TIMEOUT_SECONDS": " 10 ",
        "FUNCHOST_MAX_CONNECTIONS": "8",
    }
    assert HostLimits.from_env(env) == HostLimits(2048, 2.5, 10.0, 8)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FUNCHOST_MAX_BODY_BYTES", "0"),
        ("FUNCHOST_MAX_BODY_BYTES", "1.5"),
        ("FUNCHOST_MAX_CONNECTIONS", "-3"),
        ("FUNCHOST_READ_TIMEOUT_SECONDS", "soon"),
        ("FUNCHOST_READ_TIMEOUT_SECONDS", "nan"),
        ("FUNCHOST_IDLE_TIMEOUT_SECONDS", "inf"),
    ],
)
def test_a_bad_host_limit_names_its_setting(name: str, value: str) -> None:
    with pytest.raises(ValueError, match=name):
        HostLimits.from_env({name: value})
