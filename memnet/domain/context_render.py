"""What context assembly returns (spec 10.4, 11): budgets, the prompt-ready text form,
the response body and ``routing_debug``.

Budgets keep the highest-priority bindings: documents are considered in ``read_priority``
order and, once one does not fit ``max_docs`` or ``max_chars_total``, it and every
lower-priority document are dropped, so a lower-priority document never displaces a
higher-priority one. A document's cost is its compact JSON length (as ``max_chars``
counts on write), or, when text is rendered, the length of its rendered section (and
the separator before it). Nothing is cut short: a document is returned whole or not at
all, so the rendered text is never longer than ``max_chars_total``.

Rendered text: one section per document (:mod:`memnet.domain.text_render`), sections
separated by one blank line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memnet.domain import text_render
from memnet.domain.bindings import Binding
from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import Json, char_count
from memnet.domain.profiles import RenderRules
from memnet.domain.project_routing import ProjectRanking

SEPARATOR = "\n\n"


@dataclass
class Decision:
    """How the project was chosen; ``routing_debug`` is built from it."""

    project_id: str | None = None
    reason: str = "no_hint"
    deterministic_score: float = 0.0
    semantic_score: float | None = None
    ranking: ProjectRanking | None = None
    semantic_scores: dict[str, float] = field(default_factory=dict)
    warnings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Selected:
    binding: Binding
    path: str
    stored: StoredDocument
    pending: tuple[str, int, str] | None = None  # its pending section as shown: where, items, mode

    def as_json(self) -> dict[str, Any]:
        return {
            "binding_id": self.binding.binding_id,
            "namespace": self.binding.namespace,
            "path": self.path,
            "etag": self.stored.etag,
            "document": self.stored.document,
        }

    def section(self, rules: RenderRules) -> str:
        """The document as rendered text: its header line, then its content."""
        document = self.stored.document
        title = text_render.header(
            self.binding.binding_id, self.binding.namespace, self.path, document.get("updated_at")
        )
        return "\n".join([title, *text_render.content_lines(document.get("content"), rules)])


@dataclass(frozen=True)
class Budgeted:
    """What fits the budgets: the documents kept, those dropped (``dropped_bindings``
    entries) and, when text is rendered, the text."""

    kept: list[Selected]
    dropped: list[Dropped]
    rendered: str | None = None


def apply_budget(
    selected: list[Selected], max_docs: int, max_chars: int, rules: RenderRules | None
) -> Budgeted:
    """The longest priority-ordered prefix within both budgets, what was dropped and,
    with ``rules`` (``render: "text"``), the kept documents' text."""
    kept: list[Selected] = []
    sections: list[str] = []
    used = 0
    for position, item in enumerate(selected):
        section = item.section(rules) if rules is not None else None
        cost = _cost(item, section, first=not kept)
        reason = (
            "max_docs"
            if len(kept) >= max_docs
            else ("max_chars_total" if used + cost > max_chars else None)
        )
        if reason is not None:
            dropped = [_over(s, reason) for s in selected[position:]]
            return _budgeted(kept, dropped, sections, rules)
        kept.append(item)
        sections += [section] if section is not None else []
        used += cost
    return _budgeted(kept, [], sections, rules)


def _budgeted(
    kept: list[Selected],
    dropped: list[Dropped],
    sections: list[str],
    rules: RenderRules | None,
) -> Budgeted:
    return Budgeted(kept, dropped, SEPARATOR.join(sections) if rules is not None else None)


def _cost(item: Selected, section: str | None, first: bool) -> int:
    if section is None:
        return char_count(item.stored.document)
    return len(section) + (0 if first else len(SEPARATOR))


def _over(item: Selected, reason: str) -> Dropped:
    chars = char_count(item.stored.document)
    return Dropped(item.binding.binding_id, item.binding.namespace, item.path, reason, chars)


@dataclass(frozen=True)
class Dropped:
    """A binding whose document context left out, and why (``chars``: its size, when it
    was left out for the budget)."""

    binding_id: str
    namespace: str
    path: str | None
    reason: str
    chars: int | None = None

    @classmethod
    def of(cls, binding: Binding, path: str | None, reason: str) -> Dropped:
        return cls(binding.binding_id, binding.namespace, path, reason)

    def as_json(self) -> Json:
        found: Json = {
            "binding_id": self.binding_id,
            "namespace": self.namespace,
            "path": self.path,
            "reason": self.reason,
        }
        return found if self.chars is None else {**found, "chars": self.chars}


@dataclass(frozen=True)
class Assembled:
    """A context assembly's answer (spec 10.4): the documents kept, in priority order,
    what was dropped, and what the request asked for besides."""

    decision: Decision
    kept: list[Selected]
    dropped: list[Dropped]
    pending_sections: list[Json] = field(default_factory=list)
    rendered: str | None = None
    routing_debug: Json | None = None
    provenance: list[Json] | None = None  # asked for: each kept document's items' origins

    def as_json(self) -> Json:
        found: Json = {
            "selected_project_id": self.decision.project_id,
            "documents": [s.as_json() for s in self.kept],
            "dropped_bindings": [d.as_json() for d in self.dropped],
        }
        if self.decision.warnings:
            found["warnings"] = self.decision.warnings
        if self.pending_sections:
            found["pending_sections"] = self.pending_sections
        if self.rendered is not None:
            found["rendered"] = self.rendered
        if self.routing_debug is not None:
            found["routing_debug"] = self.routing_debug
        if self.provenance is not None:
            found["provenance"] = self.provenance
        return found


def routing_debug(decision: Decision) -> dict[str, Any]:
    return {
        "deterministic_score": decision.deterministic_score,
        "semantic_score": decision.semantic_score,
        "reason": decision.reason,
        "candidates": _candidates(decision),
    }


def _candidates(decision: Decision) -> list[dict[str, Any]]:
    """Every matched project by score, with the semantic score of those scored."""
    ranking = decision.ranking
    if ranking is None:
        return []
    candidates = []
    for project_id, score in sorted(ranking.scores.items(), key=lambda kv: -kv[1]):
        candidate = {"project_id": project_id, "deterministic_score": score}
        candidate["matched"] = ranking.matched[project_id]
        if project_id in decision.semantic_scores:  # only the candidates actually scored
            candidate["semantic_score"] = decision.semantic_scores[project_id]
        candidates.append(candidate)
    return candidates
