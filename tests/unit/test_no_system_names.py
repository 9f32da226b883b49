"""Memory kinds are configuration, not code (spec 8, 26; issue 15): nothing in
``memnet/`` names a related system (Soorma, a2p, Mosaic) or a section, binding or
namespace that only their profiles (related/profiles) declare."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

SYSTEMS = re.compile(r"soorma|coala|\ba2p\b|mosaic", re.IGNORECASE)
# Member names the core uses in its own records (a job's status and state, an event's
# metadata), its own API resource (the proposal queue, GET …/proposals) and a member of
# a protocol it speaks (the embeddings API's "data"), which a related profile happens to
# use for a section too.
CORE_WORDS = frozenset({"status", "state", "metadata", "proposals", "data"})


def _code() -> Iterator[tuple[Path, str]]:
    for path in sorted((REPO / "memnet").rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            yield path, path.read_text(encoding="utf-8")


def _declared_names() -> set[str]:
    """Binding ids, namespaces and first content segments the related profiles use."""
    names: set[str] = set()
    for path in (REPO / "related" / "profiles").glob("*.json"):
        profile = json.loads(path.read_text(encoding="utf-8"))
        for binding in profile["document_bindings"]:
            names |= {binding["binding_id"], binding["namespace"]}
        for pointers in profile.get("writable_path_rules", {}).values():
            names |= {p.split("/")[1] for p in pointers}
    return names - CORE_WORDS


def test_no_related_system_is_named_in_the_core():
    found = [
        f"{p.relative_to(REPO)}: {m.group(0)}" for p, t in _code() for m in SYSTEMS.finditer(t)
    ]
    assert found == []


def test_no_section_only_a_related_profile_declares_is_a_literal_in_the_core():
    names = _declared_names()
    assert names, "related/profiles declares nothing"
    alternatives = "|".join(map(re.escape, sorted(names)))
    literal = re.compile(f"[\"']({alternatives})[\"']")
    found = [
        f"{p.relative_to(REPO)}: {m.group(0)}" for p, t in _code() for m in literal.finditer(t)
    ]
    assert found == []
