"""How alike two texts are, and whether they may say opposite things (docs/compaction.md
"What a compaction does"): the measure compaction's merges, promotion and freshness share.
Lexical and deterministic: no model. Pure: no I/O."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from itertools import pairwise

_PUNCTUATION = re.compile(r"[^\w\s]", re.UNICODE)


@lru_cache(maxsize=4096)  # a section's texts are compared pairwise: each is reused n times
def normalised(text: str) -> str:
    """NFKC, case folded, punctuation stripped, whitespace collapsed."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCTUATION.sub(" ", folded).split())


def similarity(a: str, b: str) -> float:
    """Jaccard similarity of the sets of words of the normalised texts: shared words over
    all words. 1.0 for equal word sets; 0.0 when either is empty."""
    left, right = _words(a), _words(b)
    if not left or not right:
        return 0.0
    return len(left & right) / len(left | right)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    return frozenset(normalised(text).split())


NEGATIONS = frozenset(
    {"not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "cannot"}
)
_NUMBER = re.compile(r"\d")


def contradicts(a: str, b: str) -> bool:
    """Whether two texts may say opposite things, so that near is not the same: one
    has a negation the other lacks (``not``, ``never``, ``cannot``, an ``n't``
    contraction, ...), or their numbers differ (``meets at 9`` / ``meets at 10``)."""
    return _negated(a) != _negated(b) or _numbers(a) != _numbers(b)


@lru_cache(maxsize=4096)
def _negated(text: str) -> frozenset[str]:
    """The text's negation tokens (``don't`` normalises to ``don t``: its ``n`` + ``t``
    pair counts as ``n't``; ``cant``/``wont`` written without the apostrophe too)."""
    words = normalised(text.replace("\u2019", "'")).split()
    found = {w for w in words if w in NEGATIONS or w in ("cant", "wont", "dont")}
    found |= {"n't" for w, nxt in pairwise(words) if nxt == "t" and w.endswith("n")}
    return frozenset(found)


@lru_cache(maxsize=4096)
def _numbers(text: str) -> frozenset[str]:
    return frozenset(w for w in normalised(text).split() if _NUMBER.search(w))
