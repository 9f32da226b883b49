"""Project routing for context assembly (spec 11, "Routing precedence"). Pure: no I/O.

1. An explicit, known ``project_id`` wins.
2. Otherwise aliases and keywords from the profile's routing index are matched against
   the hint as whole words and phrases, insensitive to case, accents and punctuation.
   A phrase inside a longer matched phrase of another project does not count
   ("alpha" inside "alpha search"). Names, ids and aliases weigh 1.0, keywords 0.6.
3. Only when several projects tie for the best match, their own documents decide
   (:mod:`memnet.similarity`); confidence is then the tie's weight times the winner's
   relative margin over the runner-up.
4. Below the profile's ``min_confidence`` no project is selected.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

NAME_WEIGHT = 1.0
KEYWORD_WEIGHT = 0.6
EXTRA_MATCH_BONUS = 0.1
KEYWORD_CAP = 0.9  # keywords alone never outrank a name or alias
_NON_WORD = re.compile(r"[^0-9a-z]+")
_JOINERS = re.compile(r"['\u2019`&]")  # I'm -> im, M&A -> ma, R&D -> rd
Phrase = tuple[str, ...]


def tokens(text: str) -> Phrase:
    """Lower-case, accent-free, punctuation-free words of ``text``. Apostrophes and ``&``
    join rather than split, so "I'm a" does not contain the phrase "M&A"."""
    text = _JOINERS.sub("", text)
    if text.isascii():  # NFKD leaves ASCII unchanged; casefold is lower
        return tuple(t for t in _NON_WORD.split(text.lower()) if t)
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()
    return tuple(t for t in _NON_WORD.split(plain) if t)


_GERMAN = str.maketrans(
    {"ä": "ae", "ö": "oe", "ü": "ue", "ß": "ss", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"}
)


def spellings(text: str) -> set[str]:
    """``text`` and, for German umlauts, its transliteration: "Zürich" also as "Zuerich"
    (plain accent stripping already gives "Zurich")."""
    return {text, text.translate(_GERMAN)}


@dataclass(frozen=True)
class Project:
    project_id: str
    names: tuple[str, ...]  # the id, the display name and the aliases
    keywords: tuple[str, ...]


@dataclass
class RoutingIndex:
    """Phrase -> [(project_id, weight)], built once per version of the routing document."""

    projects: dict[str, Project] = field(default_factory=dict)
    phrases: dict[Phrase, list[tuple[str, float]]] = field(default_factory=dict)
    longest: int = 0

    @classmethod
    def build(cls, entries: Iterable[Any]) -> RoutingIndex:
        index = cls()
        for entry in entries:
            project = _project(entry)
            if project is not None:
                index.add(project)
        return index

    def add(self, project: Project) -> None:
        self.projects[project.project_id] = project
        for text in project.names:
            for variant in spellings(text):
                self._add_phrase(tokens(variant), project.project_id, NAME_WEIGHT)
        for text in project.keywords:
            for variant in spellings(text):
                self._add_phrase(tokens(variant), project.project_id, KEYWORD_WEIGHT)

    def _add_phrase(self, phrase: Phrase, project_id: str, weight: float) -> None:
        if not phrase:
            return
        entries = self.phrases.setdefault(phrase, [])
        known = next((i for i, (p, _) in enumerate(entries) if p == project_id), None)
        if known is None:
            entries.append((project_id, weight))
        elif entries[known][1] < weight:
            entries[known] = (project_id, weight)
        self.longest = max(self.longest, len(phrase))


def _project(entry: Any) -> Project | None:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("project_id"), str):
        return None
    project_id = entry["project_id"]
    names = [project_id, *_strings(entry.get("name")), *_strings(entry.get("aliases"))]
    return Project(project_id, tuple(names), tuple(_strings(entry.get("keywords"))))


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


@dataclass(frozen=True)
class Match:
    project_id: str
    phrase: str
    start: int
    end: int  # exclusive, in hint tokens
    weight: float


def matches(index: RoutingIndex, hint: Phrase) -> list[Match]:
    """Every phrase of the index found in ``hint``, minus those inside a longer match of
    another project."""
    found = [
        Match(project_id, " ".join(hint[i:j]), i, j, weight)
        for i in range(len(hint))
        for j in range(i + 1, min(len(hint), i + index.longest) + 1)
        for project_id, weight in index.phrases.get(hint[i:j], ())
    ]
    spans: dict[tuple[int, int], set[str]] = {}
    for m in found:
        spans.setdefault((m.start, m.end), set()).add(m.project_id)
    return [m for m in found if not _inside_other(m, spans)]


def _inside_other(match: Match, spans: Mapping[tuple[int, int], set[str]]) -> bool:
    """Whether a strictly longer span covering ``match`` matched another project. Compared
    by span, not by match: a keyword many projects share is one span, not one per project."""
    return any(
        start <= match.start
        and match.end <= end
        and (end - start) > (match.end - match.start)
        and (len(projects) > 1 or match.project_id not in projects)
        for (start, end), projects in spans.items()
    )


@dataclass(frozen=True)
class Ranking:
    """Deterministic outcome: the best weight and the projects that share it."""

    best: float
    tied: tuple[str, ...]
    scores: dict[str, float]
    matched: dict[str, list[str]]


def rank(found: list[Match]) -> Ranking:
    """A project scores its best match's weight plus 0.1 for each further distinct phrase
    it matched; keyword-only scores stop at 0.9."""
    strongest: dict[str, float] = {}
    matched: dict[str, list[str]] = {}
    for m in found:
        strongest[m.project_id] = max(strongest.get(m.project_id, 0.0), m.weight)
        if m.phrase not in matched.setdefault(m.project_id, []):
            matched[m.project_id].append(m.phrase)
    scores = {p: _score(w, len(matched[p])) for p, w in strongest.items()}
    best = max(scores.values(), default=0.0)
    tied = tuple(sorted(p for p, s in scores.items() if s == best)) if best else ()
    return Ranking(best, tied, scores, matched)


def _score(weight: float, phrases: int) -> float:
    score = weight + EXTRA_MATCH_BONUS * (phrases - 1)
    return round(min(score, KEYWORD_CAP) if weight < NAME_WEIGHT else score, 6)


def semantic_confidence(best: float, scores: Mapping[str, float]) -> tuple[str | None, float]:
    """The winner of a semantic tie-break and the routing confidence it earns."""
    ordered = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    if not ordered or ordered[0][1] <= 0:
        return None, 0.0
    top = ordered[0][1]
    runner_up = ordered[1][1] if len(ordered) > 1 else 0.0
    return ordered[0][0], best * (top - runner_up) / top
