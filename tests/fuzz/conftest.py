"""The fuzzing fixtures: the service on memory storage behind the real local host,
and a caller that holds every role, so Schemathesis reaches every route past its gate."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key
from tests.conftest import make_settings

FUZZ_KEY = "fuzz-every-role-key"
FUZZ_CALLER = {
    "caller_id": "fuzzer",
    "key_sha256": hash_key(FUZZ_KEY),
    "tenants": ["*"],
    "profiles": ["*"],
    "roles": ["read", "write", "admin", "snapshots", "forget", "debug"],
    "services": ["*"],
}


def examples() -> int:
    """Examples per operation: small in the default suite, larger on demand
    (``MEMNET_FUZZ_EXAMPLES=500 MEMNET_FUZZ_SEED=random scripts/test tests/fuzz``)."""
    return int(os.environ.get("MEMNET_FUZZ_EXAMPLES", "100"))


@pytest.fixture
def fuzz_service(tmp_path: Path) -> Iterator[None]:
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [FUZZ_CALLER]}), encoding="utf-8")
    # Blobs and queues in memory: the fuzz is about the HTTP API against its document, not
    # storage, which the contract suites cover (docs/testing.md, "The memory backend").
    settings = make_settings(tmp_path / "data", storage="memory", callers_file=callers)
    built = bootstrap.build(settings)
    bootstrap.install(built)
    yield
    bootstrap.install(None)
