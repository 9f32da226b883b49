"""The rule extractor: the embedded default :class:`~memnet.ports.Extractor` (spec 13),
offline and deterministic. A baseline, not intelligence: it finds what the profile's
``replay_rules`` describe (explicit statements such as "remember that ...") and nothing
else; it does not resolve pronouns, negation or questions.

Output (the :mod:`memnet.domain.replay_contract` shape): one digest per snapshot, the
statements found, or the first user message cut to :data:`SUMMARY_CHARS` when there
are none; and one patch per statement whose target document the replay can address
(a templated path needs the transcript's project hint) and does not already hold it
(among its items, or as a pending proposal for the same place), so a second replay of
the same snapshot adds nothing. The same transcript, profile and documents always give
the same output.

Bounded work: at most :data:`MAX_SCANNED_CHARS` of the transcript are read, in message
order (each message up to :data:`~memnet.domain.transcript.MAX_TEXT_CHARS`); each rule
takes at most :data:`MAX_MATCHES_PER_RULE` matches of one message; the scan stops after
:data:`MAX_MATCHES` matches or ``max_statements`` distinct statements. With the starter
rules a full budget of text that almost matches takes about 0.2 s; 64 M chars (2000
messages of 32,000, the format's most) would take 7 s unbounded. The patterns are the
profile's: docs/profiles.md asks for bounded ones, since ``re`` backtracks.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import islice
from typing import Any

from memnet.domain import pointers, proposals
from memnet.domain.envelope import CONTENT, canonical
from memnet.domain.pointers import Segments
from memnet.domain.profiles import Profile, ReplayRules, StatementRule
from memnet.domain.replay_contract import MAX_DIGEST_CHARS, ExtractionRequest
from memnet.domain.transcript import MAX_TEXT_CHARS, Message, Transcript
from memnet.domain.value_templates import fill_value, statement_fields, template_fields

VERSION = "1.0.0"
MAX_MATCHES_PER_RULE = 50
MAX_MATCHES = 2000
MAX_SCANNED_CHARS = 2_000_000  # twice what the default body limit lets an upload hold
MAX_STATEMENT_CHARS = 500
SUMMARY_CHARS = 300
MAX_KEYWORDS = 8
SUMMARY_ROLE = "user"  # a transcript role (domain.transcript.ROLES), not a profile name
_STOP_TEXT = """about above after again also always and any are because been before being below
    but can could did does doing down during each few for from further had has have
    having her here hers him his how into its just like more most much must not now off
    once only other our ours out over own same she should some such than that the their
    theirs them then there these they this those through too under until very was were
    what when where which while who whom why will with would you your yours please thanks
    really want wants called decided agreed prefer prefers remember use using"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
_HIDDEN = frozenset({"Cf", "Cs", "Co", "Cn"})  # format (zero width, bidi), unassigned
_WORD = re.compile(r"[^\W\d_]+")


@dataclass(frozen=True)
class Statement:
    """One match of a rule: ``said`` (the whole match) for the digest, ``text`` (its
    ``text`` group) for the value; both cleaned by :func:`clean`."""

    rule: StatementRule
    message: Message
    said: str
    text: str


class RuleExtractor:
    """Digests and patches from the profile's ``replay_rules`` (see the module doc)."""

    name = "rules"
    version = VERSION

    def extract(self, request: ExtractionRequest) -> dict[str, Any]:
        statements = find_statements(request.transcript, request.profile.replay)
        digest = _digest(statements, request.transcript)
        return {
            "digests": [] if digest is None else [digest],
            "patches": _patches(statements, request),
        }


def find_statements(transcript: Transcript, rules: ReplayRules) -> list[Statement]:
    """The distinct statements (by rule and case-folded text), in message order."""
    found: dict[tuple[str, str], Statement] = {}
    matches, chars = MAX_MATCHES, MAX_SCANNED_CHARS
    for message in transcript.messages:
        text = message.text[: min(MAX_TEXT_CHARS, chars)]
        chars -= len(text)
        for statement in _in_message(message, text, rules.statements):
            found.setdefault((statement.rule.rule_id, statement.text.casefold()), statement)
            matches -= 1
            if len(found) >= rules.max_statements or matches <= 0:
                return list(found.values())
        if chars <= 0:
            break
    return list(found.values())


def _in_message(
    message: Message, text: str, rules: tuple[StatementRule, ...]
) -> Iterator[Statement]:
    """Matches in ``text`` (of ``message``) of every rule for its role, by position; where
    two overlap the earlier wins, then the rule listed first ("remember that I prefer
    tea" is one statement)."""
    matches = sorted(
        (
            (found.start(), order, found, rule)
            for order, rule in enumerate(rules)
            if message.role in rule.roles
            for found in islice(rule.pattern.finditer(text), MAX_MATCHES_PER_RULE)
        ),
        key=lambda item: item[:2],
    )
    end = 0
    for start, _, found, rule in matches:
        said, value = clean(found.group(0)), clean(found.group("text") or "")
        if start >= end and value:
            end = found.end()
            yield Statement(rule, message, said[:1].upper() + said[1:], value)


def clean(text: str) -> str:
    """``text`` as it is stored: composed (NFC), without what renders as nothing (zero
    width and bidi controls, unassigned code points), control characters and runs of
    white space made one space, cut to :data:`MAX_STATEMENT_CHARS`."""
    composed = unicodedata.normalize("NFC", text[: MAX_STATEMENT_CHARS * 2])
    visible = "".join(map(_visible, composed))
    return " ".join(visible.split())[:MAX_STATEMENT_CHARS].strip(" ,;:")


def _visible(char: str) -> str:
    category = unicodedata.category(char)
    return "" if category in _HIDDEN else " " if category == "Cc" else char


# -- the digest ---------------------------------------------------------------------------


def _digest(statements: list[Statement], transcript: Transcript) -> dict[str, Any] | None:
    if statements:
        text = " ".join(_sentence(s.said) for s in statements)
        sources, words = [s.message for s in statements], " ".join(s.text for s in statements)
    else:
        first = _first_message(transcript)
        if first is None:
            return None
        text = words = _cut(clean(first.text[: SUMMARY_CHARS * 4]), SUMMARY_CHARS)
        sources = [first]
    hint = transcript.project_hint
    return {
        "digest": _cut(text, MAX_DIGEST_CHARS),
        "keywords": keywords(words),
        "project_ids": [] if hint is None else [hint],
        "message_ids": list(dict.fromkeys(m.id for m in sources)),
    }


def _first_message(transcript: Transcript) -> Message | None:
    """The first user message with visible text, else the first message of any role."""
    ordered = sorted(transcript.messages, key=lambda m: m.role != SUMMARY_ROLE)  # stable
    return next((m for m in ordered if m.text.strip() and clean(m.text[:1000])), None)


def _sentence(said: str) -> str:
    return said if said.endswith((".", "!", "?")) else said + "."


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1].rstrip() + "\u2026"


def keywords(text: str) -> list[str]:
    """A few lower-cased content words of ``text``, first seen first."""
    words = (w.lower() for w in _WORD.findall(text))
    content = (w for w in words if 3 <= len(w) <= 32 and w not in STOP_WORDS)
    return list(islice(dict.fromkeys(content), MAX_KEYWORDS))


# -- the patches --------------------------------------------------------------------------


def _patches(statements: list[Statement], request: ExtractionRequest) -> list[dict[str, Any]]:
    routing, hint = request.profile.context.routing, request.transcript.project_hint
    variables = {} if routing is None or hint is None else {routing.project_variable: hint}
    contents = {(t.binding_id, t.path): t.content for t in request.targets}
    made: set[bytes] = set()
    patches = []
    for statement in statements:
        patch = _patch(statement, request, variables, contents)
        if patch is None:
            continue
        rule = statement.rule
        key = canonical([rule.binding_id, patch["target_path"], rule.pointer, _key(statement)])
        if key not in made:
            made.add(key)
            patches.append(patch)
    return patches


def _patch(
    statement: Statement,
    request: ExtractionRequest,
    variables: Mapping[str, str],
    contents: Mapping[tuple[str, str], Any],
) -> dict[str, Any] | None:
    rule, message = statement.rule, statement.message
    binding = request.profile.binding(rule.binding_id)
    path = None if binding is None else binding.path_for(variables)
    if binding is None or path is None:
        return None
    content = contents.get((binding.binding_id, path), binding.initial_content)
    if _holds(request.profile, binding.binding_id, content, rule.pointer, _key(statement)):
        return None
    fields = statement_fields(
        statement.text, message.id, message.timestamp, rule.confidence, request.snapshot_uri
    )
    return {
        "target_binding_id": binding.binding_id,
        "target_path": path,
        "ops": [
            {
                "op": "add",
                "path": pointers.render((CONTENT, *rule.pointer)),
                "value": fill_value(rule.value, fields),
            }
        ],
        "confidence": rule.confidence,
        "evidence": {"message_ids": [message.id]},
    }


def _key(statement: Statement) -> Any:
    """What makes two values the same statement: the value filled with its text only,
    without the members that differ between occurrences (evidence, timestamps,
    confidence), folded (:func:`_fold`)."""
    template = statement.rule.value
    value = fill_value(template, {"text": statement.text})
    if isinstance(template, dict):
        stable = {k: value[k] for k, t in template.items() if template_fields(t) <= {"text"}}
        return _fold(stable or value)
    return _fold(value)


def _holds(profile: Profile, binding_id: str, content: Any, pointer: Segments, key: Any) -> bool:
    """Whether ``content`` already holds ``key`` where the rule writes, or proposes it
    there in the binding's pending section."""
    found = [*_present(content, pointer), *_proposed(profile, binding_id, content, pointer)]
    return any(_same(item, key) for item in found)


def _present(content: Any, pointer: Segments) -> list[Any]:
    """The items of the array the rule appends to, or the member it names."""
    appends = pointer[-1:] == ("-",)
    try:
        found = pointers.resolve(content, pointer[:-1] if appends else pointer)
    except KeyError:
        return []
    if appends:
        return found if isinstance(found, list) else []
    return [found]


def _proposed(profile: Profile, binding_id: str, content: Any, pointer: Segments) -> list[Any]:
    """The candidates of pending items that propose a write at the rule's pointer."""
    pending = profile.confidence.pending_sections.get(binding_id)
    if pending is None:
        return []
    target = pointers.render(pointer)
    return [
        item.get("candidate")
        for item in proposals.items_at(content, pending)
        if isinstance(item, dict) and item.get("target_path") == target
    ]


def _same(item: Any, key: Any) -> bool:
    if isinstance(key, dict):
        return isinstance(item, dict) and all(_fold(item.get(k)) == v for k, v in key.items())
    return bool(_fold(item) == key)


def _fold(value: Any) -> Any:
    """Strings compared case-folded with white space collapsed; objects member by member."""
    if isinstance(value, dict):
        return {k: _fold(v) for k, v in value.items()}
    return " ".join(value.casefold().split()) if isinstance(value, str) else value
