"""JSON Pointer segment logic and the write policy, without I/O."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memnet.domain import pointers
from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import check_document_path, check_identifier
from memnet.domain.patching import parse_ops
from memnet.domain.policy import WriteIntent, plan_ops
from memnet.services.profiles.registry import load_registry

PROFILE = load_registry(Path(__file__).resolve().parents[2] / "profiles").get("project-copilot-v1")
assert PROFILE is not None
DYNAMIC = PROFILE.binding("user_dynamic")
assert DYNAMIC is not None


JSON = st.recursive(
    st.none() | st.integers() | st.text(max_size=2),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=30,
)


def depth(value: object) -> int:
    """Nesting depth, a scalar and an empty container being one level (the definition)."""
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    return 1 + max((depth(child) for child in children), default=0)


@given(value=JSON, limit=st.integers(1, 8))
def test_depth_exceeds_is_exactly_the_nesting_depth_over_the_limit(value: object, limit: int):
    assert pointers.depth_exceeds(value, limit) == (depth(value) > limit)


def plan(ops: list[dict], confidence: float | None = None, evidence: object = None):  # type: ignore[no-untyped-def]
    intent = WriteIntent("agent", "2026-01-01T00:00:00Z", confidence, evidence)
    return plan_ops(PROFILE, DYNAMIC, parse_ops(ops), intent)


@pytest.mark.parametrize(
    ("pointer", "segments"),
    [
        ("", ()),
        ("/a/b", ("a", "b")),
        ("/a~1b/c~0d", ("a/b", "c~d")),
        ("/", ("",)),
    ],
)
def test_pointer_parse_unescapes_segments(pointer: str, segments: tuple[str, ...]):
    assert pointers.parse(pointer) == segments
    assert pointers.render(segments) == pointer


@pytest.mark.parametrize("bad", ["a", "/a~2", "/~"])
def test_pointer_parse_rejects_bad_pointers(bad: str):
    with pytest.raises(ValueError):
        pointers.parse(bad)


def test_is_within_compares_segments_not_strings():
    assert pointers.is_within(("preferences", "3"), ("preferences",))
    assert not pointers.is_within(("preferences_x",), ("preferences",))


def test_pattern_wildcard_matches_one_segment():
    assert pointers.matches_pattern(("f", "-", "credentials"), ("f", "*", "credentials"))
    assert not pointers.matches_pattern(("f", "credentials"), ("f", "*", "credentials"))


def test_escaped_slash_does_not_escape_the_allowlist():
    planned = plan([{"op": "add", "path": "/content/preferences~1x", "value": "v"}])
    assert [v.code for v in planned.violations] == ["PATH_NOT_WRITABLE"]


def test_test_ops_may_read_anywhere():
    planned = plan([{"op": "test", "path": "/doc_id", "value": "x"}])
    assert planned.violations == [] and len(planned.ops) == 1


def test_copy_from_denylisted_field_is_refused():
    planned = plan(
        [
            {
                "op": "copy",
                "from": "/content/durable_facts/0/credentials",
                "path": "/content/preferences/-",
            }
        ]
    )
    assert [v.code for v in planned.violations] == ["DENIED_PATH"]


def test_replace_of_durable_fact_with_low_confidence_is_redirected():
    planned = plan(
        [{"op": "replace", "path": "/content/durable_facts/0", "value": {}}], 0.75, {"m": 1}
    )
    assert planned.ops[0].path == "/content/pending_confirmations/-"
    assert planned.ops[0].value["op"] == "replace"


@pytest.mark.parametrize("value", ["", ".", "..", "-a", "a/b", "a b", "é", "a" * 129, "a\x00"])
def test_bad_identifiers_are_refused(value: str):
    with pytest.raises(BadRequest):
        check_identifier("tenant_id", value)


@pytest.mark.parametrize("path", ["a.json", "p/q.json", "a.b-c_d.json"])
def test_good_document_paths(path: str):
    assert check_document_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "a",
        "../a.json",
        "a/../b.json",
        "/a.json",
        "a//b.json",
        "a\\b.json",
        "a..b.json",
        "x/" * 8 + "a.json",
    ],
)
def test_bad_document_paths(path: str):
    with pytest.raises(BadRequest):
        check_document_path(path)


def test_writing_the_parent_of_a_durable_section_passes_the_gate_too():
    from memnet.domain.profiles import build_profile

    raw = dict(PROFILE.raw)
    raw["confidence_rules"] = {
        **raw["confidence_rules"],
        "durable_sections": {"project_doc": ["/facets/verified"]},
        "pending_sections": {},
    }
    profile = build_profile(raw)
    project = profile.binding("project_doc")
    assert project is not None
    intent = WriteIntent("agent", "2026-01-01T00:00:00Z", None, None)
    for op in (
        {"op": "add", "path": "/content/facets", "value": {"verified": "x"}},
        {"op": "remove", "path": "/content/facets"},
        {"op": "add", "path": "/content/facets/verified", "value": "x"},
    ):
        planned = plan_ops(profile, project, parse_ops([op]), intent)
        assert [v.code for v in planned.violations] == ["CONFIDENCE_BELOW_THRESHOLD"], op
    other = {"op": "add", "path": "/content/facets/open", "value": "x"}
    assert plan_ops(profile, project, parse_ops([other]), intent).violations == []


def test_routing_tokens_fold_case_accents_punctuation_and_joiners():
    from memnet.domain.project_routing import phrase_of

    assert phrase_of("CAFÉ-Rewrite!") == ("cafe", "rewrite")
    assert phrase_of("I'm a fan of M&A") == ("im", "a", "fan", "of", "ma")
    assert phrase_of("Señor   Data\u2019s") == ("senor", "datas")


def test_routing_scores_extra_phrases_and_caps_keywords():
    from memnet.domain.project_routing import RoutingIndex, phrase_of, rank_hint

    index = RoutingIndex.build(
        [
            {"project_id": "search-infra", "keywords": ["latency", "shards", "reindex", "cluster"]},
            {"project_id": "alpha", "name": "Alpha", "keywords": ["latency"]},
            {"project_id": "zurich-office", "name": "Zürich Office"},
        ]
    )
    ranking = rank_hint(index, phrase_of("latency of shards after reindex"))
    assert ranking.tied == ("search-infra",) and ranking.best == 0.8
    ranking = rank_hint(index, phrase_of("alpha latency, shards, reindex, cluster"))
    assert ranking.tied == ("alpha",)  # keywords alone stop at 0.9, below a name
    for hint in ("zurich office", "Zuerich Office", "ZÜRICH-office"):
        assert rank_hint(index, phrase_of(hint)).tied == ("zurich-office",)


def test_long_names_are_folded_but_not_cached():
    from memnet.domain.pointers import _folded_short, folded

    before = _folded_short.cache_info().currsize
    assert folded("Secrets" + "\u200b" * 10_000) == "secrets"
    assert _folded_short.cache_info().currsize == before
