"""A real bump of the starter profile's ``memory.user.dynamic`` (docs/profiles.md,
"Schema migrations"), for the migration tests: 1.0.0 -> 1.1.0 renames the section
``/projects_index`` to ``/projects`` (JSON Patch ops), 1.1.0 -> 1.2.0 renames each
preference's ``topic`` to ``category`` (the ``rename_member`` transform). The bumped
profile binds ``user_dynamic`` at 1.2.0; the shipped profile is unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from tests.conftest import starter_profiles

SCHEMA = "memory.user.dynamic"
LATEST = "1.2.0"

STEP_OPS: dict[str, Any] = {
    "from": "1.0.0",
    "to": "1.1.0",
    "description": "the projects index is called projects",
    "ops": [{"op": "move", "from": "/projects_index", "path": "/projects"}],
    "examples": [
        {
            "preferences": [],
            "durable_facts": [],
            "pending_confirmations": [],
            "projects_index": [{"project_id": "p1"}],
        }
    ],
}
STEP_TRANSFORM: dict[str, Any] = {
    "from": "1.1.0",
    "to": "1.2.0",
    "description": "a preference's topic is its category",
    "transform": "rename_member",
    "args": {"array": "/preferences", "from": "topic", "to": "category"},
    "examples": [
        {
            "preferences": [{"text": "Tea, not coffee.", "topic": "drinks"}, {"text": "Brief."}],
            "durable_facts": [],
            "pending_confirmations": [],
            "projects": [],
        }
    ],
}


def bumped_profiles(
    target: Path, read_as: str | None = None, steps: list[dict[str, Any]] | None = None
) -> Path:
    """A copy of ``profiles/`` at ``target`` with the bump: the two new schema
    versions, their ``migrations.json`` (``steps``: other steps instead) and the
    starter profile's ``user_dynamic`` at :data:`LATEST` (``read_as``: set it)."""

    def edit(raw: dict[str, Any]) -> None:
        binding = next(b for b in raw["document_bindings"] if b["binding_id"] == "user_dynamic")
        binding["schema_version"] = LATEST
        content = binding["initial_content"]
        content["projects"] = content.pop("projects_index")
        if read_as is not None:
            binding["read_as"] = read_as
        raw["context_rules"]["routing"]["index_pointer"] = "/projects"

    starter_profiles(target, edit)
    folder = target / "schemas" / SCHEMA
    first = json.loads((folder / "1.0.0.json").read_text(encoding="utf-8"))
    second = copy.deepcopy(first)
    second["title"] = f"{SCHEMA} 1.1.0: projects_index is projects"
    second["properties"]["projects"] = second["properties"].pop("projects_index")
    third = copy.deepcopy(second)
    third["title"] = f"{SCHEMA} 1.2.0: a preference's topic is its category"
    members = third["properties"]["preferences"]["items"]["properties"]
    members["category"] = members.pop("topic")
    for version, body in (("1.1.0", second), ("1.2.0", third)):
        (folder / f"{version}.json").write_text(json.dumps(body, indent=2), encoding="utf-8")
    found = {"migrations": steps if steps is not None else [STEP_OPS, STEP_TRANSFORM]}
    (folder / "migrations.json").write_text(json.dumps(found, indent=2), encoding="utf-8")
    return target
