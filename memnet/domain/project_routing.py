"""Project routing for context assembly (spec 11, "Routing precedence"). Pure: no I/O.

1. An explicit, known ``project_id`` wins.
2. Otherwise aliases and keywords from the profile's routing index are matched against
   the hint as whole words and phrases, insensitive to case, accents and punctuation.
   A phrase inside a longer matched phrase of another project does not count
   ("alpha" inside "alpha search"). Names, ids and aliases weigh 1.0, keywords 0.6.
3. Only when several projects tie for the best match, their own documents decide
   (:mod:`memnet.domain.project_similarity`); confidence is then the tie's weight times the winner's
   relative margin over the runner-up.
4. Below the profile's ``min_confidence`` no project is selected.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import Any

NAME_WEIGHT = 1.0
KEYWORD_WEIGHT = 0.6
EXTRA_MATCH_BONUS = 0.1
KEYWORD_CAP = 0.9  # keywords alone never outrank a name or alias
_NON_WORD = re.compile(r"[^0-9a-z]+")
_JOINERS = re.compile(r"['\u2019`&]")  # I'm -> im, M&A -> ma, R&D -> rd
Phrase = tuple[str, ...]


def phrase_of(text: str) -> Phrase:
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
    """Phrase -> {project_id: weight}, built once per version of the routing document.
    ``named`` holds, per phrase, the projects for which it is a name, id or alias."""

    projects: dict[str, Project] = field(default_factory=dict)
    phrases: dict[Phrase, dict[str, float]] = field(default_factory=dict)
    named: dict[Phrase, set[str]] = field(default_factory=dict)
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
                self._add_phrase(phrase_of(variant), project.project_id, NAME_WEIGHT)
        for text in project.keywords:
            for variant in spellings(text):
                self._add_phrase(phrase_of(variant), project.project_id, KEYWORD_WEIGHT)

    def _add_phrase(self, phrase: Phrase, project_id: str, weight: float) -> None:
        if not phrase:
            return
        holders = self.phrases.setdefault(phrase, {})
        holders[project_id] = max(weight, holders.get(project_id, 0.0))
        if weight >= NAME_WEIGHT:
            self.named.setdefault(phrase, set()).add(project_id)
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


Span = tuple[int, int, Phrase]  # start, end (exclusive), the phrase hint[start:end]
Found = tuple[tuple[str, Mapping[str, float]], ...]  # (phrase, {project: weight}) per span


def _spans(index: RoutingIndex, hint: Phrase) -> list[Span]:
    return [
        (i, j, hint[i:j])
        for i in range(len(hint))
        for j in range(i + 1, min(len(hint), i + index.longest) + 1)
        if hint[i:j] in index.phrases
    ]


@dataclass(frozen=True)
class ProjectRanking:
    """Deterministic outcome: the best score and the projects that share it (sorted).
    ``found`` keeps the surviving matches per place in the hint, from which ``scores``
    and ``matched`` (for ``routing_debug``) are derived only when asked for."""

    best: float
    tied: tuple[str, ...]
    found: Found = ()

    @cached_property
    def matched(self) -> dict[str, list[str]]:
        matched: dict[str, list[str]] = {}
        for phrase, holders in self.found:
            for project_id in holders:
                if phrase not in matched.setdefault(project_id, []):
                    matched[project_id].append(phrase)
        return matched

    @cached_property
    def scores(self) -> dict[str, float]:
        strongest: dict[str, float] = {}
        for _, holders in self.found:
            for project_id, weight in holders.items():
                strongest[project_id] = max(strongest.get(project_id, 0.0), weight)
        return {p: _score(w, len(self.matched[p])) for p, w in strongest.items()}


def rank_hint(index: RoutingIndex, hint: Phrase) -> ProjectRanking:
    """The projects ``hint`` names, best first: a phrase counts for a project unless it
    lies inside a longer phrase that matched another project; a project scores its best
    match's weight plus 0.1 for each further distinct phrase it matched (keyword-only
    scores stop at 0.9, below a name). A keyword that hundreds of projects share is one
    place in the hint, scored once."""
    spans = _spans(index, hint)
    surviving = [(s[2], _surviving(index, s, spans)) for s in spans]
    found = tuple((" ".join(phrase), holders) for phrase, holders in surviving if holders)
    per_phrase: dict[str, set[str]] = {}
    for phrase, holders in found:
        per_phrase.setdefault(phrase, set()).update(holders)
    named = set().union(*(_named(index, phrase, holders) for phrase, holders in surviving))
    best, tied = _best(named, per_phrase) if named else _best_keyword(per_phrase)
    return ProjectRanking(best, tied, found)


def _surviving(index: RoutingIndex, span: Span, spans: list[Span]) -> Mapping[str, float]:
    """The holders of ``span`` not inside a longer span that matched another project."""
    holders = index.phrases[span[2]]
    owners: set[str] = set()
    for start, end, phrase in spans:
        if start <= span[0] and span[1] <= end and end - start > span[1] - span[0]:
            owners.update(index.phrases[phrase])
            if len(owners) > 1:
                return {}
    return {p: holders[p] for p in owners if p in holders} if owners else holders


def _named(index: RoutingIndex, phrase: Phrase, holders: Mapping[str, float]) -> set[str]:
    """The projects that matched ``phrase`` as a name, without visiting every holder."""
    named = index.named.get(phrase, set())
    return named if holders is index.phrases[phrase] else {p for p in named if p in holders}


def _best(named: set[str], per_phrase: Mapping[str, set[str]]) -> tuple[float, tuple[str, ...]]:
    """A name outranks any keyword-only score, so only named projects can win."""
    assert KEYWORD_CAP < NAME_WEIGHT
    scores = {p: _score(NAME_WEIGHT, sum(p in ps for ps in per_phrase.values())) for p in named}
    best = max(scores.values())
    return best, tuple(sorted(p for p, s in scores.items() if s == best))


def _best_keyword(per_phrase: Mapping[str, set[str]]) -> tuple[float, tuple[str, ...]]:
    if not per_phrase:
        return 0.0, ()
    if len(per_phrase) == 1:  # the common case: one shared keyword, all tie
        (holders,) = per_phrase.values()
        return _score(KEYWORD_WEIGHT, 1), tuple(sorted(holders))
    count = Counter(chain.from_iterable(per_phrase.values()))
    levels = {c: _score(KEYWORD_WEIGHT, c) for c in set(count.values())}
    best = max(levels.values())
    return best, tuple(sorted(p for p, c in count.items() if levels[c] == best))


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
