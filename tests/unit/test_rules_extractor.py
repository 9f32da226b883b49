"""The rule extractor (the offline default): the profile's ``replay_rules`` turn explicit
statements into one digest and patches that pass the replay contract; bounded,
deterministic, and a bad rule stops startup naming the file and field."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memnet.adapters.local.rules_extractor import SUMMARY_CHARS, RuleExtractor
from memnet.domain.errors import ConfigError
from memnet.domain.patching import apply_ops, parse_ops
from memnet.domain.policy import WriteIntent, plan_ops
from memnet.domain.profiles import Profile, build_profile
from memnet.domain.replay_contract import (
    MAX_DIGEST_CHARS,
    ExtractionRequest,
    TargetDocument,
    check_output,
)
from memnet.domain.transcript import Message, Transcript
from memnet.services.profiles.registry import load_registry

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
SNAPSHOT = "memnet://snapshots/t1/u1/s1"
NOW = "2026-11-24T10:05:00Z"
STAMP = "2026-11-24T10:00:00Z"


@pytest.fixture(scope="module")
def profile() -> Profile:
    found = load_registry(PROFILES).get("project-copilot-v1")
    assert found is not None
    return found


def transcript(*texts: str, role: str = "user", hint: str | None = "project-alpha") -> Transcript:
    messages = tuple(Message(f"m{i}", role, text, STAMP) for i, text in enumerate(texts, 1))
    return Transcript(messages, project_hint=hint)


def request(
    profile: Profile, convo: Transcript, contents: dict[str, Any] | None = None
) -> ExtractionRequest:
    """What the worker shows: each writable binding's document, initial when not given."""
    variables = {} if convo.project_hint is None else {"project_id": convo.project_hint}
    targets = []
    for binding in profile.bindings:
        path = binding.path_for(variables)
        if path is not None and binding.binding_id in profile.writable_paths:
            content = (contents or {}).get(binding.binding_id, dict(binding.initial_content))
            targets.append(
                TargetDocument(binding.binding_id, binding.namespace, path, None, content)
            )
    return ExtractionRequest(convo, profile, tuple(targets), SNAPSHOT, NOW)


def extract(profile: Profile, *texts: str, **options: Any) -> dict[str, Any]:
    contents = options.pop("contents", None)
    return RuleExtractor().extract(request(profile, transcript(*texts, **options), contents))


def only_op(output: dict[str, Any]) -> dict[str, Any]:
    [patch] = output["patches"]
    [op] = patch["ops"]
    return dict(op)


def planned(profile: Profile, patch: dict[str, Any]) -> Any:
    binding = profile.binding(patch["target_binding_id"])
    assert binding is not None
    intent = WriteIntent("replay", NOW, patch["confidence"], patch["evidence"])
    return plan_ops(profile, binding, parse_ops(patch["ops"]), intent)


# -- each statement kind ------------------------------------------------------------------


def test_remember_that_proposes_a_durable_fact_which_the_gate_sends_to_pending(profile):
    output = extract(profile, "Hi. Remember that I work in Lisbon. Thanks!")
    [patch] = output["patches"]
    assert patch["target_binding_id"] == "user_dynamic"
    assert patch["target_path"] == "user_dynamic.json"
    assert patch["confidence"] == 0.6
    assert patch["evidence"] == {"message_ids": ["m1"]}
    assert only_op(output) == {
        "op": "add",
        "path": "/content/durable_facts/-",
        "value": {
            "fact": "I work in Lisbon",
            "confidence": 0.6,
            "evidence": {"message_ids": ["m1"], "snapshot_uri": SNAPSHOT},
            "last_verified_at": STAMP,
        },
    }
    plan = planned(profile, patch)
    assert plan.violations == []
    assert [r["to_path"] for r in plan.redirected] == ["/content/pending_confirmations/-"]


def test_i_prefer_adds_a_preference_that_is_applied_directly(profile):
    output = extract(profile, "I'd prefer short answers with code first.")
    assert only_op(output) == {
        "op": "add",
        "path": "/content/preferences/-",
        "value": {
            "text": "Prefers short answers with code first",
            "evidence": {"message_ids": ["m1"], "snapshot_uri": "memnet://snapshots/t1/u1/s1"},
            "last_verified_at": STAMP,
        },
    }
    plan = planned(profile, output["patches"][0])
    assert plan.violations == [] and plan.redirected == []


def test_call_me_proposes_a_name_fact_for_confirmation(profile):
    output = extract(profile, "You can call me Sam Okafor, by the way.")
    op = only_op(output)
    assert op["path"] == "/content/durable_facts/-"
    assert op["value"]["fact"] == "Wants to be called Sam Okafor"
    assert planned(profile, output["patches"][0]).redirected


def test_call_me_back_is_not_a_name(profile):
    assert extract(profile, "Call me back tomorrow at 5, please.")["patches"] == []


def test_we_decided_adds_a_note_to_the_hinted_project(profile):
    output = extract(profile, "OK, we decided to ship the beta on Friday.")
    [patch] = output["patches"]
    assert (patch["target_binding_id"], patch["target_path"]) == (
        "project_doc",
        "project-alpha.json",
    )
    note = {
        "note": "We decided to ship the beta on Friday",
        "at": STAMP,
        "evidence": {"message_ids": ["m1"], "snapshot_uri": "memnet://snapshots/t1/u1/s1"},
    }
    assert only_op(output)["value"] == note
    assert output["digests"][0]["project_ids"] == ["project-alpha"]


def test_without_a_project_hint_a_decision_is_digested_but_not_patched(profile):
    output = extract(profile, "We agreed on weekly releases.", hint=None)
    assert output["patches"] == []
    [digest] = output["digests"]
    assert digest["digest"] == "We agreed on weekly releases."
    assert digest["project_ids"] == []


# -- the digest ---------------------------------------------------------------------------


def test_the_digest_joins_the_statements_with_keywords_and_sources(profile):
    output = extract(
        profile,
        "remember that I work in Lisbon",
        "Nothing to note here.",
        "I prefer dark mode!",
    )
    [digest] = output["digests"]
    assert digest == {
        "digest": "Remember that I work in Lisbon. I prefer dark mode.",
        "keywords": ["work", "lisbon", "dark", "mode"],
        "project_ids": ["project-alpha"],
        "message_ids": ["m1", "m3"],
    }


def test_no_statements_gives_a_short_digest_of_the_first_user_message(profile):
    convo = Transcript(
        (
            Message("a1", "assistant", "How can I help?", STAMP),
            Message("u1", "user", "What is the weather like in Porto? " * 40, STAMP),
        )
    )
    output = RuleExtractor().extract(request(profile, convo))
    assert output["patches"] == []
    [digest] = output["digests"]
    assert digest["digest"].startswith("What is the weather like in Porto?")
    assert len(digest["digest"]) <= SUMMARY_CHARS
    assert digest["message_ids"] == ["u1"]
    assert digest["keywords"][:2] == ["weather", "porto"]


def test_a_transcript_without_visible_text_gives_no_digest(profile):
    output = extract(profile, "   ", "\u200b\u200e\u2066")
    assert output == {"digests": [], "patches": []}


def test_a_profile_without_replay_rules_gives_a_digest_only(profile):
    raw = {k: v for k, v in profile.raw.items() if k != "replay_rules"}
    bare = build_profile(raw)
    convo = transcript("Remember that I work in Lisbon. I prefer tea.")
    output = RuleExtractor().extract(request(bare, convo))
    assert output["patches"] == []
    assert output["digests"][0]["digest"] == "Remember that I work in Lisbon. I prefer tea."


# -- bounds, duplicates and what is already stored ----------------------------------------


def test_only_the_listed_roles_are_read(profile):
    output = extract(profile, "Remember that I am an assistant.", role="assistant")
    assert output["patches"] == []


def test_overlapping_matches_make_one_statement(profile):
    output = extract(profile, "Remember that I prefer tea over coffee.")
    assert only_op(output)["value"]["fact"] == "I prefer tea over coffee"


def test_repeated_statements_make_one_patch(profile):
    output = extract(profile, "I prefer tea.", "i prefer  TEA", "I prefer tea. I prefer tea.")
    assert len(output["patches"]) == 1
    assert output["digests"][0]["message_ids"] == ["m1"]


def test_at_most_max_statements(profile):
    texts = [f"Remember that fact number {n} holds." for n in range(40)]
    output = extract(profile, *texts)
    assert len(output["patches"]) == 20
    assert len(output["digests"][0]["digest"]) <= MAX_DIGEST_CHARS


def test_a_statement_the_document_holds_is_not_patched_again(profile):
    user = {
        "preferences": [{"text": "prefers  Dark mode"}],
        "durable_facts": [
            {
                "fact": "I work in Lisbon",
                "confidence": 0.9,
                "evidence": {"message_ids": ["old"]},
                "last_verified_at": "2026-01-01T00:00:00Z",
            }
        ],
        "pending_confirmations": [
            {
                "candidate": {"fact": "Wants to be called Sam"},
                "target_path": "/durable_facts/-",
                "proposed_at": "2026-01-01T00:00:00Z",
            }
        ],
        "projects_index": [],
    }
    output = extract(
        profile,
        "Remember that I work in Lisbon. I prefer dark mode. Call me Sam.",
        contents={"user_dynamic": user},
    )
    assert output["patches"] == []
    assert len(output["digests"]) == 1


def test_replaying_after_the_writes_adds_nothing(profile):
    texts = ("Remember that I work in Lisbon. I prefer dark mode.", "We decided to use Postgres.")
    first = request(profile, transcript(*texts))
    contents = {t.binding_id: t.content for t in first.targets}
    for patch in RuleExtractor().extract(first)["patches"]:
        plan = planned(profile, patch)
        binding = patch["target_binding_id"]
        contents[binding] = apply_ops({"content": contents[binding]}, plan.ops)["content"]
    assert contents["user_dynamic"]["pending_confirmations"]
    again = RuleExtractor().extract(request(profile, transcript(*texts), contents))
    assert again["patches"] == []


def test_the_output_passes_the_contract_with_no_rejections(profile):
    texts = (
        "Remember that my team is in Berlin. Call me Ana.",
        "I really prefer bullet points. We've decided that Friday is release day.",
        "Remember that " + "x" * 5000,
    )
    req = request(profile, transcript(*texts))
    plan = check_output(RuleExtractor().extract(req), req)
    assert plan.rejected == []
    assert len(plan.patches) == 5 and len(plan.digests) == 1


def test_the_same_input_gives_the_same_output(profile):
    texts = ("Remember that I work in Lisbon.", "I prefer tea. We decided to go.", "Call me Jo")
    outputs = {
        json.dumps(RuleExtractor().extract(request(profile, transcript(*texts))), sort_keys=True)
        for _ in range(3)
    }
    assert len(outputs) == 1


# -- hostile input ------------------------------------------------------------------------


def timed(run: Callable[[], dict[str, Any]], most_seconds: float) -> dict[str, Any]:
    start = time.perf_counter()
    output = run()
    assert time.perf_counter() - start < most_seconds
    return output


def test_a_statement_followed_by_100k_chars_is_cut(profile):
    output = timed(lambda: extract(profile, "remember that " + "y" * 100_000), 1.0)
    fact = only_op(output)["value"]["fact"]
    assert set(fact) == {"y"} and len(fact) <= 300
    assert len(output["digests"][0]["digest"]) <= MAX_DIGEST_CHARS


def test_regex_heavy_text_is_fast(profile):
    near_misses = "I I I i we we've call me remember that. " * 800  # 32,800 chars
    tricky = "(a+)+$ [^.]* \\b(?P<text>x) " * 1000
    texts = [near_misses[:32_000], tricky[:32_000]] * 1000
    output = timed(lambda: extract(profile, *texts), 3.0)
    assert len(output["patches"]) <= 20


def test_2000_messages_with_statements_are_bounded(profile):
    texts = [f"Remember that item {n} matters. I prefer option {n}." for n in range(2000)]
    output = timed(lambda: extract(profile, *texts), 2.0)
    assert len(output["patches"]) == 20
    assert len(output["digests"][0]["message_ids"]) == 10


def test_unicode_tricks_are_cleaned_from_what_is_stored(profile):
    hidden = "Remember that I \u202eevil\u202c live in Cafe\u0301\u200b\u00a0 Lisbon\ud800\x07"
    output = extract(profile, hidden, "I prefer \u200b\u200b\u200b.")
    fact = only_op(output)["value"]["fact"]
    assert fact == "I evil live in Caf\u00e9 Lisbon"
    json.dumps(output, ensure_ascii=False).encode()  # no lone surrogate survives


# -- profile load errors ------------------------------------------------------------------


@pytest.fixture
def profiles(tmp_path: Path) -> Path:
    target = tmp_path / "profiles"
    shutil.copytree(PROFILES, target)
    return target


def edit_rule(directory: Path, index: int, **changes: Any) -> None:
    path = directory / "project-copilot-v1.json"
    raw = json.loads(path.read_text())
    raw["replay_rules"]["statements"][index].update(changes)
    path.write_text(json.dumps(raw))


def load_error(directory: Path) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        load_registry(directory)
    assert caught.value.source.endswith("project-copilot-v1.json")
    return caught.value


@pytest.mark.parametrize(
    ("changes", "field", "problem"),
    [
        ({"pattern": "(?P<text>unclosed"}, "/pattern", "not a regular expression"),
        ({"pattern": "remember (.*)"}, "/pattern", "(?P<text>"),
        ({"pattern": "(?P<text>a)" + "b" * 500}, "/pattern", "too long"),
        ({"binding": "ghost"}, "/binding", "names no binding"),
        ({"pointer": "/durable_facts/-/fact"}, "/pointer", "must end in /-"),
        ({"pointer": "/durable_facts/0"}, "/pointer", "must end in /-"),
        ({"value": "{txt}"}, "/value", "unknown field {txt}"),
        ({"value": {"fact": "at {confidence}"}}, "/value", "must be the whole string"),
        ({"value": {"fact": "{text}"}}, "/value", "does not satisfy schema"),
        ({"id": "preference"}, "/id", "duplicate statement id"),
        ({"confidence": 1.5}, "/confidence", "greater than the maximum"),
    ],
)
def test_a_bad_rule_stops_startup_naming_the_field(profiles, changes, field, problem):
    edit_rule(profiles, 0, **changes)
    error = load_error(profiles)
    assert error.field == "/replay_rules/statements/0" + field
    assert problem in error.problem


def test_a_rule_below_the_auto_apply_threshold_is_refused(profiles):
    edit_rule(profiles, 2, confidence=0.5)  # preferences: not durable, so nothing redirects
    error = load_error(profiles)
    assert error.field == "/replay_rules/statements/2/confidence"
    assert "min_confidence_for_auto_apply" in error.problem


def test_a_rule_for_a_binding_without_writable_paths_is_refused(profiles):
    edit_rule(profiles, 1, binding="user_static", pointer="/profile/display_name", value="{text}")
    error = load_error(profiles)
    assert error.field == "/replay_rules/statements/1/pointer"
    assert "cannot be patched" in error.problem


def test_a_templated_binding_needs_the_routing_project_variable(profiles):
    path = profiles / "project-copilot-v1.json"
    raw = json.loads(path.read_text())
    del raw["context_rules"]["routing"]
    path.write_text(json.dumps(raw))
    error = load_error(profiles)
    assert error.field == "/replay_rules/statements/3/binding"
