"""Entry points of queue-triggered work, framework-neutral (the triggers call these)."""

from __future__ import annotations

from memnet import bootstrap


def handle_index_job(body: str) -> None:
    """Apply one search-index job (see :meth:`memnet.services.events.EventService.handle_job`)."""
    bootstrap.services().events.handle_job(body)
