"""What context assembly returns (spec 10.4, 11): budgets, the prompt-ready text form,
the response body and ``routing_debug``.

Budgets keep the highest-priority bindings: documents are considered in ``read_priority``
order and, once one does not fit ``max_docs`` or ``max_chars_total``, it and every
lower-priority document are dropped, so a lower-priority document never displaces a
higher-priority one. A document's cost is its compact JSON length (as ``max_chars``
counts on write), or, when text is rendered, the length of its rendered section. Nothing
is ever truncated.

Rendered text, one section per document, sections separated by one blank line::

    ### memory <binding_id> (<namespace>/<path>) updated_at=<updated_at>
    <the document's content as compact JSON>
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memnet.domain.document_model import StoredDocument
from memnet.domain.envelope import char_count, serialise
from memnet.domain.profiles import Binding
from memnet.domain.routing import ProjectRanking

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

    def as_json(self) -> dict[str, Any]:
        return {
            "binding_id": self.binding.binding_id,
            "namespace": self.binding.namespace,
            "path": self.path,
            "etag": self.stored.etag,
            "document": self.stored.document,
        }

    def section(self) -> str:
        document = self.stored.document
        header = (
            f"### memory {self.binding.binding_id} ({self.binding.namespace}/{self.path})"
            f" updated_at={document.get('updated_at', '')}"
        )
        return f"{header}\n{serialise(document.get('content'))}"


def apply_budget(
    selected: list[Selected], max_docs: int, max_chars: int, as_text: bool
) -> tuple[list[Selected], list[dict[str, Any]]]:
    """The longest priority-ordered prefix within both budgets, and what was dropped."""
    kept: list[Selected] = []
    used = 0
    for position, item in enumerate(selected):
        cost = _cost(item, as_text, first=not kept)
        reason = (
            "max_docs"
            if len(kept) >= max_docs
            else ("max_chars_total" if used + cost > max_chars else None)
        )
        if reason is not None:
            return kept, [_over(s, reason) for s in selected[position:]]
        kept.append(item)
        used += cost
    return kept, []


def _cost(item: Selected, as_text: bool, first: bool) -> int:
    if not as_text:
        return char_count(item.stored.document)
    return len(item.section()) + (0 if first else len(SEPARATOR))


def _over(item: Selected, reason: str) -> dict[str, Any]:
    return {
        "binding_id": item.binding.binding_id,
        "namespace": item.binding.namespace,
        "path": item.path,
        "reason": reason,
        "chars": char_count(item.stored.document),
    }


def render_text(kept: list[Selected]) -> str:
    return SEPARATOR.join(item.section() for item in kept)


def dropped_entry(binding: Binding, path: str | None, reason: str) -> dict[str, Any]:
    return {
        "binding_id": binding.binding_id,
        "namespace": binding.namespace,
        "path": path,
        "reason": reason,
    }


def response(
    decision: Decision, kept: list[Selected], dropped: list[dict[str, Any]]
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "selected_project_id": decision.project_id,
        "documents": [s.as_json() for s in kept],
        "dropped_bindings": dropped,
    }
    if decision.warnings:
        result["warnings"] = decision.warnings
    return result


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
