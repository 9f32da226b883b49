"""Reverting reads a version in full (docs/decisions.md "Revert and undo"): on a2p-v1,
whose health memories are restricted, a caller that holds the binding's
``revert_roles`` but not every class's clearance is refused and nothing is written; the
user's app, cleared for everything, reverts."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from memnet import bootstrap
from tests.clients import ApiClient
from tests.related.conftest import A2P_USER_KEY, RELATED, World
from tests.related.test_sensitivity import MEMORIES, seed

REVIEWER_KEY = "a2p-reviewer-key"  # review role, clearance standard


def reverted_by_reviewers(world: World, tmp_path: Path) -> None:
    """The same storage served with a2p-v1's binding granting ``revert_roles: review``."""
    profiles = tmp_path / "profiles"
    shutil.copytree(RELATED / "profiles", profiles)
    path = profiles / "a2p-v1.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    raw["document_bindings"][0]["revert_roles"] = ["review"]
    path.write_text(json.dumps(raw), encoding="utf-8")
    services = world.services
    settings = replace(services.settings, profiles_dir=profiles)
    built = bootstrap.build(settings, blobs=services.blobs, queue=services.queue, clock=world.clock)
    bootstrap.install(built)


def test_reverting_needs_clearance_for_every_class(a2p: ApiClient, related: World, tmp_path: Path):
    user = a2p.as_key(A2P_USER_KEY)
    first = seed(user).data
    emptied = user.request(
        "PATCH",
        MEMORIES,
        {
            "ops": [{"op": "remove", "path": "/content/memories/a2p:semantic/0"}],
            "confidence": 1.0,
            "evidence": {"conversation_id": "c1"},
        },
        {"If-Match": first["etag"], "Idempotency-Key": "rm"},
    )
    assert emptied.status == 200, emptied.data
    reverted_by_reviewers(related, tmp_path)
    body = {"to_change_id": first["document"]["change_id"]}
    headers = {"If-Match": emptied.data["etag"], "Idempotency-Key": "r1"}
    refused = a2p.as_key(REVIEWER_KEY).request("POST", MEMORIES + ":revert", body, headers)
    assert (refused.status, refused.error_code) == (403, "CLEARANCE_REQUIRED"), refused.data
    assert user.request("GET", MEMORIES).data["etag"] == emptied.data["etag"]
    done = user.request("POST", MEMORIES + ":revert", body, headers)
    assert done.status == 200, done.data
    assert done.data["document"]["content"] == first["document"]["content"]
