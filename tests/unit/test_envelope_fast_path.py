"""Document validation takes a fast path (the envelope checked in Python, the content by
its own validator); it must reach the same verdict as the whole-document JSON Schema."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from memnet.envelope import new_envelope
from memnet.registry import load_registry
from memnet.validation import document_violations

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
REGISTRY = load_registry(PROFILES)
BINDINGS = [b for p in REGISTRY.profile_ids() for b in REGISTRY.get(p).bindings]  # type: ignore[union-attr]


def sample(binding: Any) -> dict[str, Any]:
    return new_envelope(binding, "d-1", "2026-11-22T10:00:00Z", "agent", "chg_1")


MUTATIONS = [
    lambda d: None,
    lambda d: d.pop("doc_id"),
    lambda d: d.update(extra="x"),
    lambda d: d.update(doc_id=""),
    lambda d: d.update(updated_by=7),
    lambda d: d.update(change_id=None),
    lambda d: d.update(schema_id="other"),
    lambda d: d.update(schema_version=1),
    lambda d: d.update(content=[]),
    lambda d: d.update(content={}),
    lambda d: d["content"].update(unknown_section=[]),
    lambda d: d.update(created_at="\u00e9"),
]


@pytest.mark.parametrize("binding", BINDINGS, ids=lambda b: b.binding_id)
@pytest.mark.parametrize("mutate", range(len(MUTATIONS)))
def test_fast_path_agrees_with_the_whole_document_schema(binding: Any, mutate: int) -> None:
    document = copy.deepcopy(sample(binding))
    MUTATIONS[mutate](document)
    validator = REGISTRY.validator(binding)
    expected = [e.message for e in validator.iter_errors(document)]
    found = [
        v.message
        for v in document_violations(document, binding, validator, size=0)
        if v.code == "SCHEMA_VIOLATION"
    ]
    assert found == expected
