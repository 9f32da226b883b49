"""Fixtures of the conformance tier: the external JSON Patch suite and a profile that can
store any JSON under ``/content/doc`` (see ``test_json_patch.py`` for the mapping).

Each test gets services on a fresh data directory, built from a profiles directory and a
callers file written once per session in a temporary directory (nothing is copied from
``profiles/`` or ``callers.dev.json``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key
from memnet.bootstrap import Services
from tests.conftest import make_settings

SUITE_DIR = Path(__file__).resolve().parents[1] / "data" / "conformance" / "json-patch-tests"
SUITE_FILES = ("tests.json", "spec_tests.json")

PROFILE_ID = "conformance-v1"
CONFORMANCE_KEY = "conformance-key"
ANY_SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema"}
PROFILE = {
    "profile_id": PROFILE_ID,
    "description": "Conformance tests only: one document per record, any JSON under /doc.",
    "document_bindings": [
        {
            "binding_id": "doc",
            "namespace": "conformance",
            "path_template": "{case}.json",
            "schema_id": "memory.any",
            "schema_version": "1.0.0",
            "max_chars": 1_000_000,
            "read_priority": 1,
            "write_mode": "restricted_patch",
            "initial_content": {},
        }
    ],
    "writable_path_rules": {"doc": ["/doc"]},
}
CALLERS = {
    "callers": [
        {
            "caller_id": "conformance",
            "key_sha256": hash_key(CONFORMANCE_KEY),
            "tenants": ["*"],
            "profiles": ["*"],
            "roles": ["read", "write", "admin"],
        }
    ]
}


def load_records() -> list[tuple[str, int, dict[str, Any]]]:
    """Every record of the suite as ``(file name, index, record)``."""
    found = []
    for name in SUITE_FILES:
        records = json.loads((SUITE_DIR / name).read_text(encoding="utf-8"))
        found += [(name, i, record) for i, record in enumerate(records)]
    return found


@pytest.fixture(scope="session")
def suite_dir() -> Path:
    """The suite's directory (vendored: tests/data/conformance/json-patch-tests/SOURCE.md);
    a missing file fails the tier."""
    missing = [name for name in SUITE_FILES if not (SUITE_DIR / name).is_file()]
    assert not missing, f"JSON Patch conformance suite files missing: {missing} in {SUITE_DIR}"
    return SUITE_DIR


@pytest.fixture(scope="session")
def conformance_config(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``(profiles_dir, callers_file)`` written once per session."""
    root = tmp_path_factory.mktemp("conformance-config")
    profiles = root / "profiles"
    (profiles / "schemas" / "memory.any").mkdir(parents=True)
    (profiles / f"{PROFILE_ID}.json").write_text(json.dumps(PROFILE, indent=2))
    (profiles / "schemas" / "memory.any" / "1.0.0.json").write_text(json.dumps(ANY_SCHEMA))
    callers = root / "callers.json"
    callers.write_text(json.dumps(CALLERS, indent=2))
    return profiles, callers


@pytest.fixture
def services(tmp_path: Path, conformance_config: tuple[Path, Path]) -> Iterator[Services]:
    """Overrides ``tests/conftest.py``: the conformance profile and callers, fresh data."""
    profiles, callers = conformance_config
    built = bootstrap.build(
        make_settings(
            tmp_path / "data", storage="memory", profiles_dir=profiles, callers_file=callers
        )
    )
    bootstrap.install(built)
    yield built
    bootstrap.install(None)
