"""Background runners for timer-, queue- and blob-triggered functions."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

import azure.functions as func

from funchost.blobs import BlobPoller
from funchost.index import FunctionIndex, QueueFunction, TimerFunction, invoke
from funchost.schedule import parse_ncrontab, resolve_schedule

logger = logging.getLogger("funchost")

ReceivedMessage = tuple[str, str, int]  # (message_id, body, dequeue_count)


class QueueSource(Protocol):
    """What the host needs from a queue: receive visible messages, then settle each one."""

    def receive(self, queue_name: str) -> list[ReceivedMessage]: ...

    def complete(self, queue_name: str, message_id: str) -> None: ...

    def abandon(self, queue_name: str, message_id: str) -> None: ...


class BackgroundRunner:
    """Runs timer functions on their schedules and, given a QueueSource, queue functions;
    given a BlobPoller, runs it on its own thread at its interval."""

    def __init__(
        self,
        index: FunctionIndex,
        queue_source: QueueSource | None = None,
        run_timers: bool = True,
        poll_interval: float = 1.0,
        blob_poller: BlobPoller | None = None,
    ) -> None:
        self._index = index
        self._queue_source = queue_source
        self._run_timers = run_timers
        self._poll_interval = poll_interval
        self._blob_poller = blob_poller
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        if self._run_timers:
            for timer in self._index.timer_functions:
                self._spawn(f"timer-{timer.name}", functools.partial(self._run_timer, timer))
        if self._queue_source is not None and self._index.queue_functions:
            self._spawn("queues", self._run_queues)
        if self._blob_poller is not None:
            self._spawn("blobs", functools.partial(self._blob_poller.run, self._stop))

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"funchost-{name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _run_timer(self, timer: TimerFunction) -> None:
        try:
            schedule = parse_ncrontab(resolve_schedule(timer.schedule))
        except ValueError as exc:
            logger.error("timer %s not started: %s", timer.name, exc)
            return
        if timer.run_on_startup:
            fire_timer(timer, past_due=False)
        due = schedule.next_after(_utcnow())
        while not self._stop.wait(max(0.0, (due - _utcnow()).total_seconds())):
            now = _utcnow()
            if now < due:
                continue
            fire_timer(timer, past_due=now - due > timedelta(seconds=1))
            due = schedule.next_after(max(due, now))

    def _run_queues(self) -> None:
        while not self._stop.is_set():
            delivered = sum(self._poll(q) for q in self._index.queue_functions)
            if not delivered:
                self._stop.wait(self._poll_interval)

    def _poll(self, queue: QueueFunction) -> int:
        assert self._queue_source is not None
        try:
            messages = self._queue_source.receive(queue.queue_name)
        except Exception:
            logger.exception("receiving from queue %s failed", queue.queue_name)
            return 0
        for message in messages:
            deliver_message(queue, message, self._queue_source)
        return len(messages)


def fire_timer(timer: TimerFunction, past_due: bool) -> None:
    """Invoke a timer function once with a real TimerRequest."""
    request = func.timer.TimerRequest(
        past_due=past_due, schedule_status={"Last": _utcnow().isoformat()}
    )
    try:
        invoke(timer.function, timer.arg_name, request)
        logger.info("timer %s ran", timer.name)
    except Exception:
        logger.exception("timer %s failed", timer.name)


def deliver_message(queue: QueueFunction, message: ReceivedMessage, source: QueueSource) -> None:
    """Invoke a queue function with one message; complete it on success, else abandon it."""
    message_id, body, dequeue_count = message
    queue_message = func.queue.QueueMessage(  # type: ignore[no-untyped-call]  # untyped in SDK
        id=message_id, body=body, dequeue_count=dequeue_count
    )
    try:
        invoke(queue.function, queue.arg_name, queue_message)
    except Exception:
        logger.exception("queue function %s failed on message %s", queue.name, message_id)
        settle = source.abandon
    else:
        settle = source.complete
    try:
        settle(queue.queue_name, message_id)
    except Exception:  # the message becomes visible again when its timeout ends
        logger.exception("settling message %s of queue %s failed", message_id, queue.queue_name)


def _utcnow() -> datetime:
    return datetime.now(UTC)
