"""Schemathesis over the served OpenAPI document, through the real local host, as its CLI
runs in CI: every operation with documented examples, coverage cases, generated valid and
invalid input, then stateful sequences along the document's links (write a document, patch
it, read it and its history; write an event, read it).

Every check is on (Schemathesis' default; not `--checks all`, which would override the
per-operation settings of schemathesis.toml): no 5xx, every response's status, content type,
headers and body as documented, invalid input refused with a 4xx, no route that ignores
authentication. Bounded by `examples()` per operation; findings are fixed, not filtered
(the few check settings in schemathesis.toml say why each is there)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.fuzz.conftest import FUZZ_KEY, examples


@pytest.mark.slow(70)  # seconds on this machine (docs/testing.md)
@pytest.mark.timeout(1800)
def test_schemathesis_finds_nothing(http_server: str, fuzz_service: None, tmp_path: Path) -> None:
    command = [
        str(Path(sys.executable).with_name("schemathesis")),
        "--config-file",
        str(REPO / "tests" / "fuzz" / "schemathesis.toml"),
        "run",
        f"{http_server}/v1/openapi.json",
        "--header",
        f"Authorization: Bearer {FUZZ_KEY}",
        "--max-examples",
        str(examples()),
        "--workers",
        "1",
        "--report",
        "junit",
        "--report-dir",
        str(tmp_path),
        *seed(),
    ]
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=1700, check=False, cwd=tmp_path
    )  # cwd: Schemathesis keeps its crash cache under ./.schemathesis
    assert run.returncode == 0, run.stdout[-20000:] + run.stderr[-5000:]


def seed() -> list[str]:
    """A fixed seed in the default suite (reproducible); the long run varies it."""
    value = os.environ.get("MEMNET_FUZZ_SEED", "1")
    return [] if value == "random" else ["--seed", value]
