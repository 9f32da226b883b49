"""Budgets and the prompt-ready text form of context assembly (spec 11, "Token budget").

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

from dataclasses import dataclass
from typing import Any

from memnet.documents import StoredDocument
from memnet.envelope import char_count, serialise
from memnet.profiles import Binding

SEPARATOR = "\n\n"


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
