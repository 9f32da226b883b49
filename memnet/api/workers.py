"""Entry points of queue-, blob- and timer-triggered work, framework-neutral: the triggers
call these with the process's services."""

from __future__ import annotations

import json
import logging
from typing import Any

from memnet.container import Services

logger = logging.getLogger(__name__)


def handle_index_job(services: Services, body: str) -> None:
    """Apply one search-index job (see
    :meth:`memnet.services.events.service.EventService.handle_job`)."""
    services.events.handle_job(body)


def handle_replay_job(services: Services, body: str) -> None:
    """Run one replay-queue message
    (:meth:`memnet.services.replay.worker.ReplayService.handle_message`)."""
    services.replay.handle_message(body)


def handle_snapshot_blob(services: Services, container: str, blob_name: str) -> None:
    """The blob trigger: start the replay of snapshot blob ``blob_name`` of ``container``
    (once: :meth:`memnet.services.replay.snapshots.SnapshotService.start`)."""
    if container != services.settings.blob_container:
        return
    services.snapshots.start_from_blob(blob_name)


def handle_replay_poison(services: Services, body: str) -> None:
    """A replay message that failed every delivery (``memnet-replay-poison``): record it
    (:meth:`memnet.services.replay.worker.ReplayService.gave_up`)."""
    services.replay.gave_up(body)


def handle_forget_job(services: Services, body: str) -> None:
    """One ``memnet-forget`` message: an invocation of a forget-user or forget-conversation
    job (:mod:`memnet.services.forget.user`); it queues itself again until the job is done."""
    message = json.loads(body)
    if message.get("kind") == "forget_conversation":
        services.forget_conversation.run(message)
    else:
        services.forget.run(message)


def handle_forget_poison(services: Services, body: str) -> None:
    """A forget message that failed every delivery: the job is queued again later (a
    forget must finish; the failure is logged each time)."""
    message = json.loads(body)
    if message.get("kind") == "forget_conversation":
        services.forget_conversation.gave_up(message)
    else:
        services.forget.gave_up(message)


def handle_retention_sweep(services: Services) -> dict[str, Any]:
    """The retention timer: one bounded run of the sweep, resuming its pass
    (:meth:`memnet.services.governance.retention.RetentionService.sweep`); returns its report."""
    report = services.retention.sweep().as_json()
    logger.info("retention sweep: %s", json.dumps(report, sort_keys=True))
    return report


def handle_compaction_job(services: Services, body: str) -> dict[str, Any]:
    """One ``memnet-compact`` message: freshness and compaction of one document
    (:meth:`memnet.services.compaction.service.CompactionService.handle_job`)."""
    status = services.compaction.handle_job(body).as_json()
    logger.info("compaction: %s", json.dumps(status, sort_keys=True))
    return status


def handle_compaction_timer(services: Services) -> dict[str, Any]:
    """The compaction timer: one bounded, resumable scan over every document
    (:meth:`memnet.services.compaction.service.CompactionService.run_timer`)."""
    report = services.compaction.run_timer().as_json()
    logger.info("compaction scan: %s", json.dumps(report, sort_keys=True))
    return report


def handle_export_job(services: Services, body: str) -> None:
    """One ``memnet-export`` message: write the archive of one export job
    (:meth:`memnet.services.exports.service.ExportService.handle_message`)."""
    services.exports.handle_message(body)


def handle_export_poison(services: Services, body: str) -> None:
    """An export message that failed every delivery: its job is marked ``failed``."""
    services.exports.gave_up(body)
