"""What a value says, as the poisoning guard reads it (docs/security.md): the text a
reader would see, folded so that look-alike spellings match, tested against the
profile's content patterns, and how far it is supported by the text it cites. Pure.

Text is read as rendered: markup comments (``<!-- … -->``, where a pasted page hides
instructions) and characters that show nothing (zero-width, bidi controls, other format
characters) are removed, and compatibility forms folded (NFKC: full width, U+2024 ONE
DOT LEADER as ``.``). Patterns then match its *skeleton*: look-alike letters of other
scripts folded to the ASCII letter they imitate (:func:`memnet.domain.pointers.skeleton_of`,
from Unicode's confusables data) and case folded, so *ignore previous* spelt with a
Cyrillic letter o (U+043E) is ``ignore previous``.

The default patterns (:data:`DEFAULT_PATTERNS`) are written for that form: lower case,
no nested quantifiers (a megabyte value is scanned in linear time), and each starts at a
word or run boundary. ``tests/unit/test_guard_content.py`` holds the corpus they are
tested on, hostile and plain.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memnet.domain import pointers
from memnet.domain.pointers import skeleton_of

FAMILIES = ("instruction_like", "secret_like")
_TLDS = (
    "com|net|org|io|co|ai|app|dev|info|biz|xyz|me|ly|link|site|online|top|click|zip|mov|"
    "example|test|local|ru|cn|uk|de|fr|pt|es|it|nl|eu|us|ca|au|in|br|jp"
)
DEFAULT_PATTERNS: dict[str, tuple[str, ...]] = {
    "instruction_like": (
        r"\b(?:always|never)\b",
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}"
        r"\b(?:previous|prior|above|earlier|instructions?|rules?|guidelines?|policy|policies)\b",
        r"\b(?:system|developer|assistant)\s*(?:prompt|message|override)?\s*:",
        r"\bsystem\s+(?:override|prompt|instructions?)\b",
        r"</?\s*(?:system|instructions?|im_start|im_end)\b",
        r"\b(?:you|assistants?|agents?|the model|the ai|ai)\s+(?:must|should|shall|will|"
        r"are now|are to|have to|need to|may only)\b",
        r"\bfrom now on\b",
        r"\b(?:act|behave|respond|answer) as\b",
        r"\bnew (?:instructions?|rules?|persona)\b",
        r"\bpre-?authori[sz](?:e|es|ed|ing)\b",
        r"\b(?:verified|trusted|authori[sz]ed)\s+(?:admin|administrator|owner|operator)\b",
        r"\b(?:do not|don't|dont)\s+(?:tell|mention|reveal|inform|warn|ask)\b",
    ),
    "secret_like": (
        r"\b(?:https?|ftp|file|javascript|data):",
        r"\bwww\.",
        rf"(?<![a-z0-9_.-])[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:{_TLDS})\b",
        r"(?<![a-z0-9._%+-])[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)+",
        r"\b[a-z]{2}[0-9]{2}(?: ?[a-z0-9]{4}){3,7}\b",
        r"\bsk-[a-z0-9_-]{8,}",
        r"\b(?:sk|pk|rk)_(?:live|test)_[a-z0-9]{8,}",
        r"\bakia[0-9a-z]{16}\b",
        r"\b(?:gh[pousr]_|github_pat_)[a-z0-9_]{20,}",
        r"\bxox[abprs]-[a-z0-9-]{10,}",
        r"\bey[a-z0-9_-]{10,}\.[a-z0-9_-]{10,}\.[a-z0-9_-]{5,}",
        r"-----begin [a-z ]{0,40}private key-----",
        r"\b(?:password|passwd|passcode|pin|api[ _-]?key|secret|token|otp)\s*(?:is|=|:)\s*\S",
        r"(?<![0-9a-f])(?=[a-f]*[0-9])(?=[0-9]*[a-f])[0-9a-f]{32,}",
        r"(?<![a-z0-9+/])(?=[a-z+/]*[0-9])(?=[0-9+/]*[a-z])[a-z0-9+/]{40,}={0,2}",
        r"(?<![0-9])[0-9](?:[ -]?[0-9]){12,18}(?![0-9])",
    ),
}
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_COMMENT_MARK = re.compile(r"<!--|-->")
_SHOWS_NOTHING = frozenset({"Cf", "Co", "Cn"})
_KEEP = frozenset("\n\t")
_WORD = re.compile(r"[^\W_]{3,}")
_SKIPPED_MEMBERS = frozenset({"evidence", "confidence", "id", "proposal_id"})
_STOPWORDS = frozenset(
    [
        "the",
        "and",
        "for",
        "that",
        "this",
        "with",
        "from",
        "have",
        "has",
        "had",
        "are",
        "was",
        "were",
        "will",
        "would",
        "should",
        "could",
        "you",
        "your",
        "yours",
        "they",
        "them",
        "their",
        "there",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "how",
        "not",
        "but",
        "all",
        "any",
        "can",
        "may",
        "might",
        "must",
        "our",
        "ours",
        "its",
        "his",
        "her",
        "hers",
        "she",
        "him",
        "also",
        "just",
        "than",
        "then",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "very",
        "more",
        "most",
        "some",
        "such",
        "only",
        "own",
        "same",
        "too",
        "been",
        "being",
        "does",
        "did",
        "doing",
        "out",
        "off",
        "each",
        "few",
        "both",
        "other",
        "again",
        "once",
        "here",
        "because",
        "until",
        "while",
        "user",
        "users",
        "assistant",
    ]
)
_SUFFIXES = ("ing", "ed", "es", "s", "ly")


@dataclass(frozen=True)
class ContentRules:
    instruction_like: tuple[re.Pattern[str], ...]
    secret_like: tuple[re.Pattern[str], ...]


def parse_content_rules(raw: Mapping[str, Any] | None) -> ContentRules:
    """The profile's ``guard_rules.content`` (a family it does not give: the default
    set). A pattern that does not compile raises ``re.error``."""
    given = raw or {}
    compiled = {
        family: tuple(re.compile(p, re.IGNORECASE) for p in given.get(family, patterns))
        for family, patterns in DEFAULT_PATTERNS.items()
    }
    return ContentRules(compiled["instruction_like"], compiled["secret_like"])


def visible(text: str) -> str:
    """``text`` as a reader sees it: markup comments and characters that show nothing
    removed, compatibility forms folded (NFKC)."""
    uncommented = _COMMENT.sub(" ", text)
    shown = "".join(
        c for c in uncommented if c in _KEEP or unicodedata.category(c) not in _SHOWS_NOTHING
    )
    return unicodedata.normalize("NFKC", shown)


def skeleton(text: str) -> str:
    """``text`` with look-alike letters folded to the ASCII ones they imitate, then
    case folded (what patterns and denylists compare)."""
    return skeleton_of(unicodedata.normalize("NFKC", text))


def value_text(value: Any) -> str:
    """The text a value says: its string leaves, one per line, leaving out the members
    that are provenance rather than content (evidence, confidence, ids, ``*_at``)."""
    return "\n".join(
        node
        for key, node in pointers.members(value, _is_content)
        if isinstance(node, str) and (key is None or _is_content(key))
    )


def _is_content(key: str) -> bool:
    return key not in _SKIPPED_MEMBERS and not key.endswith("_at")


def flags(text: str, rules: ContentRules) -> list[str]:
    """The families whose patterns ``text`` matches, in :data:`FAMILIES` order, read
    twice: as shown (a comment splitting a word removed) and with the comments' markers
    removed (what a comment hides is read too)."""
    readings = {skeleton(visible(text)), skeleton(visible(_COMMENT_MARK.sub(" ", text)))}
    families = (("instruction_like", rules.instruction_like), ("secret_like", rules.secret_like))
    return [
        name
        for name, patterns in families
        if any(p.search(reading) for p in patterns for reading in readings)
    ]


def support(claim: str, evidence: str) -> float:
    """The share of the claim's content words (folded, three letters or more, common
    words left out, simple suffixes stripped) found among the evidence's words; 0.0 for
    a claim without content words."""
    words = _words(claim)
    return len(words & _words(evidence)) / len(words) if words else 0.0


def _words(text: str) -> set[str]:
    return {
        _stem(word) for word in _WORD.findall(skeleton(visible(text))) if word not in _STOPWORDS
    }


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word
