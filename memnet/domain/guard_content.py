"""PLACEHOLDER (lead's local copy until the content helper's module lands)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_PATTERNS: dict[str, tuple[str, ...]] = {
    "instruction_like": (
        r"\b(?:always|never)\b",
        r"\bignore (?:all )?(?:previous|prior)",
        r"\bsystem\s*:",
        r"\boverride\b",
    ),
    "secret_like": (
        r"https?://",
        r"\b[\w.-]+\.(?:example|com|net|org)\b",
        r"\bsk-[\w-]{8,}",
        r"[\w.+-]+@[\w-]+\.[\w.]+",
    ),
}


@dataclass(frozen=True)
class ContentRules:
    instruction_like: tuple[re.Pattern[str], ...]
    secret_like: tuple[re.Pattern[str], ...]


def parse_content_rules(raw: Mapping[str, Any] | None) -> ContentRules:
    raw = raw or {}
    return ContentRules(
        *(
            tuple(re.compile(p, re.IGNORECASE) for p in raw.get(k, DEFAULT_PATTERNS[k]))
            for k in ("instruction_like", "secret_like")
        )
    )


def visible(text: str) -> str:
    text = re.sub(r"<!--.*?(?:-->|$)", " ", text, flags=re.S)
    return unicodedata.normalize(
        "NFKC", "".join(c for c in text if unicodedata.category(c) != "Cf")
    )


def skeleton(text: str) -> str:
    return text.casefold()


def value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(value_text(v) for v in value)
    if isinstance(value, dict):
        return "\n".join(
            value_text(v)
            for k, v in value.items()
            if k not in ("evidence", "confidence", "id", "proposal_id") and not k.endswith("_at")
        )
    return ""


def flags(text: str, rules: ContentRules) -> list[str]:
    t = skeleton(visible(text))
    return [
        n
        for n, ps in (
            ("instruction_like", rules.instruction_like),
            ("secret_like", rules.secret_like),
        )
        if any(p.search(t) for p in ps)
    ]


def _words(text: str) -> set[str]:
    return {w.rstrip("s") for w in re.findall(r"\w{3,}", skeleton(visible(text)))} - {
        "the",
        "and",
        "prefer",
        "that",
        "you",
        "for",
    }


def support(claim: str, evidence: str) -> float:
    words = _words(claim)
    return len(words & _words(evidence)) / len(words) if words else 0.0
