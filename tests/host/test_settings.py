"""local.settings.json loading and the host's limits."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from funchost import HostLimits
from memnet.local_settings import LocalSettingsError, load_local_settings


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


# --- Paths in settings are from the app's root, not the working directory --------------


def test_relative_setting_paths_are_from_the_app_root_not_the_working_directory() -> None:
    from memnet.settings import APP_ROOT, Settings

    assert (APP_ROOT / "function_app.py").is_file() and (APP_ROOT / "host.json").is_file()
    settings = Settings.from_env(
        {
            "MEMNET_CALLERS_FILE": "callers.json",
            "MEMNET_PROFILES_DIR": "related/profiles",
            "MEMNET_RETENTION_FILE": "/etc/memnet/retention.json",  # absolute: as it is
            "MEMNET_KEY_FILE": "keys/kek.json",
        }
    )
    assert settings.callers_file == APP_ROOT / "callers.json"
    assert settings.profiles_dir == APP_ROOT / "related" / "profiles"
    assert settings.retention_file == Path("/etc/memnet/retention.json")
    assert settings.snapshot_key_file == APP_ROOT / "keys" / "kek.json"
    assert settings.data_dir == APP_ROOT / ".memnet"  # the default too
    assert Settings().profiles_dir == APP_ROOT / "profiles"


@pytest.mark.slow
def test_the_host_started_from_another_directory_serves_as_from_the_app_root(
    tmp_path: Path, subprocess_log: Path
) -> None:
    """``callers.json``-style relative settings, host.json's route prefix: all found from
    the folder of function_app.py; the command line's own ``--data-dir`` is the shell's."""
    from tests.served import ServedHost, request

    values = tmp_path / "values.json"
    relative = {"MEMNET_CALLERS_FILE": "callers.dev.json", "MEMNET_PROFILES_DIR": "profiles"}
    values.write_text(json.dumps({"Values": relative}))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    host = ServedHost(subprocess_log, ["--settings", str(values), "--data-dir", "data"])
    host.cwd = elsewhere
    host.start()  # waits for /v1/health: the route prefix "" of the app's host.json
    try:
        url = "/v1/tenants/t1/users/u1/documents/projects/x.json"
        ops = [{"op": "replace", "path": "/content/summary", "value": "from elsewhere"}]
        created = request(
            host.port, "PATCH", url, {"ops": ops}, **{"If-None-Match": "*", "Idempotency-Key": "k"}
        )
        assert created[0] == 201, created
        status, _, body = request(host.port, "GET", url)
        assert status == 200 and body["document"]["content"]["summary"] == "from elsewhere"
    finally:
        host.stop()
    assert (elsewhere / "data").is_dir()
    assert list(elsewhere.iterdir()) == [elsewhere / "data"]  # nothing else written here
