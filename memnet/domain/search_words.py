"""What a search query's words are, the same for every search index (issue 16, "Query
analysis"): the text is split into words (NFKC; runs of letters, digits and combining
marks), English stop words are dropped unless nothing else remains, and the first
:data:`MAX_QUERY_WORDS` distinct words (case-insensitive) are searched. Each index then
folds and stems those words its own way, configured to agree (the embedded index's FTS5
``porter unicode61 remove_diacritics 2``; Azure AI Search's ``memnet_text`` analyzer:
lowercase, ASCII folding, Porter stemmer). Stop words stay in the index: a query made of
them alone ("to be or not to be") still finds its events. No I/O.

The stop list is the Snowball project's English list
(snowballstem.org, ``algorithms/english/stop.txt``, BSD licence), without the
contractions (``don't`` is two words here, ``don`` and ``t``, and neither is
dropped). It includes question words (``what``, ``which``, ``when``, ``did``) and the
first and second person: agents search with natural questions ("what did I decide
about ..."), and in third-person digests ("User decided ...") those words are rare, so
BM25 would weigh them as strongly as the words that matter."""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_QUERY_WORDS = 32

# The Snowball project's English stop word list, https://snowballstem.org/algorithms/
# english/stop.txt (BSD 3-clause licence, (c) 2001 Dr Martin Porter, (c) 2004-2025 Richard
# Boulton and contributors), without its contractions ("don't", "i'm", ...).
_SNOWBALL_ENGLISH = """
    i me my myself we our ours ourselves you your yours yourself yourselves
    he him his himself she her hers herself it its itself
    they them their theirs themselves
    what which who whom this that these those
    am is are was were be been being have has had having do does did doing
    would should could ought cannot
    a an the and but if or because as until while
    of at by for with about against between into through during
    before after above below to from up down in out on off over under
    again further then once here there when where why how
    all any both each few more most other some such
    no nor not only own same so than too very
"""
STOP_WORDS = frozenset(_SNOWBALL_ENGLISH.split())

_ASCII_WORD = re.compile("[A-Za-z0-9]+")


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """Letters, digits and ``_`` (``\\w``) plus combining marks (category M), which ``re``
    cannot name, as one class of ranges; built on first use (marks live in planes 0, 1
    and 14). One class, not an alternation: ``re`` then scans a run in one loop."""
    points = (*range(0x20000), *range(0xE0000, 0xE1000))
    marks = [p for p in points if unicodedata.category(chr(p))[0] == "M"]
    runs: list[list[int]] = []
    for point in marks:
        if runs and runs[-1][1] == point - 1:
            runs[-1][1] = point
        else:
            runs.append([point, point])
    ranges = "".join(f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in runs)
    return re.compile(f"[\\w{ranges}]+")


def words(text: str) -> list[str]:
    """The words of ``text``: runs of letters, digits and marks, after NFKC (``_``
    separates words; it is made a space so that the one-class patterns can skip it)."""
    text = unicodedata.normalize("NFKC", text).replace("_", " ")
    return (_ASCII_WORD if text.isascii() else _word_pattern()).findall(text)


def query_words(text: str) -> list[str]:
    """The words a query searches: its distinct words (case-insensitive, first spelling
    kept) without English stop words, or all of them when every word is one; at most
    :data:`MAX_QUERY_WORDS`."""
    distinct: dict[str, str] = {}
    for word in words(text):
        distinct.setdefault(word.casefold(), word)
    kept = [word for folded, word in distinct.items() if folded not in STOP_WORDS]
    return (kept or list(distinct.values()))[:MAX_QUERY_WORDS]
