"""The declared settings table (memnet/settings.py) against docs/operations.md: every
variable the code reads is listed there, and nothing listed as a core setting is gone."""

from __future__ import annotations

import re
from dataclasses import fields

from memnet.settings import Settings
from tests.conftest import REPO

# Read by the Functions host or the local host, not by Settings.
HOST_SETTINGS = {"MEMNET_SWEEP_SCHEDULE", "MEMNET_COMPACTION_SCHEDULE"}


def declared() -> set[str]:
    specs = [f.metadata["spec"] for f in fields(Settings) if "spec" in f.metadata]
    return {s.env for s in specs} | {s.fallback for s in specs if s.fallback}


def documented() -> set[str]:
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    table = text[text.index("| setting | default | meaning |") : text.index("## Storage layout")]
    first_cells = [row.split("|")[1] for row in table.splitlines() if row.startswith("| `")]
    return set(re.findall(r"`([A-Za-z0-9_]+)`", "".join(first_cells)))


def test_every_setting_the_code_declares_is_documented() -> None:
    assert declared() - documented() == set()


def test_every_documented_core_setting_is_declared() -> None:
    listed = {n for n in documented() if n.startswith("MEMNET_")} - HOST_SETTINGS
    assert listed - declared() == set()
