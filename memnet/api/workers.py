"""Entry points of queue-triggered work, framework-neutral (the triggers call these)."""

from __future__ import annotations

from memnet import bootstrap


def handle_index_job(body: str) -> None:
    """Apply one search-index job (see :meth:`memnet.services.events.EventService.handle_job`)."""
    bootstrap.services().events.handle_job(body)


def handle_replay_job(body: str) -> None:
    """Run one replay-queue message
    (:meth:`memnet.services.replay.ReplayService.handle_message`)."""
    bootstrap.services().replay.handle_message(body)


def handle_snapshot_blob(name: str) -> None:
    """The blob trigger: ``name`` is ``<container>/<blob name>``; start that snapshot's
    replay (once: :meth:`memnet.services.snapshots.SnapshotService.start`)."""
    services = bootstrap.services()
    container, _, blob_name = name.partition("/")
    if container != services.settings.blob_container:
        return
    services.snapshots.start_from_blob(blob_name)


def handle_replay_poison(body: str) -> None:
    """A replay message that failed every delivery (``memnet-replay-poison``): record it
    (:meth:`memnet.services.replay.ReplayService.gave_up`)."""
    bootstrap.services().replay.gave_up(body)
