"""Queue triggers over a :class:`memnet.ports.MessageQueue`, with the Functions host's
retry and poison handling (docs/operations.md, "Local server"; host.json ``extensions.queues``):

- a message is received hidden for ``visibility_timeout`` s while its function runs;
- success deletes it;
- a failure releases it, visible again after ``retry_delay`` s (host.json
  ``visibilityTimeout``, default 0) -- unless that was attempt number
  ``max_dequeue_count`` (host.json ``maxDequeueCount``, default 5): then it is moved to
  ``<queue>-poison`` (sent there, deleted here);
- a message received with a ``dequeue_count`` above ``max_dequeue_count`` (its earlier
  attempts never settled, e.g. the host died) goes to ``<queue>-poison`` undelivered.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from funchost.background import ReceivedMessage
from memnet.ports import MessageQueue, PreconditionFailed, QueueMessage

logger = logging.getLogger("funchost")

POISON_SUFFIX = "-poison"
Settle = Callable[[str, QueueMessage], None]
_TIMESPAN = re.compile(r"(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class QueueOptions:
    """host.json ``extensions.queues``, with the Functions host's defaults."""

    max_dequeue_count: int = 5
    retry_delay: int = 0  # ``visibilityTimeout``: the wait before a failed message retries
    batch_size: int = 16


def read_queue_options(host_json: str | Path = "host.json") -> QueueOptions:
    """The queue options of ``host_json``; the defaults where it or a key is missing."""
    path = Path(host_json)
    if not path.is_file():
        return QueueOptions()
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path}: malformed JSON: {exc}") from exc
    queues: dict[str, Any] = config.get("extensions", {}).get("queues", {})
    defaults = QueueOptions()
    return QueueOptions(
        max_dequeue_count=int(queues.get("maxDequeueCount", defaults.max_dequeue_count)),
        retry_delay=parse_timespan(str(queues.get("visibilityTimeout", "00:00:00"))),
        batch_size=int(queues.get("batchSize", defaults.batch_size)),
    )


def parse_timespan(text: str) -> int:
    """A .NET TimeSpan (``[d.]hh:mm:ss[.fff]``) in whole seconds, rounded up."""
    found = _TIMESPAN.fullmatch(text.strip())
    if not found:
        raise ValueError(f"not a TimeSpan (d.hh:mm:ss): {text!r}")
    days, hours, minutes, seconds = found.groups()
    total = ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + float(seconds)
    return math.ceil(total)


class PortQueueSource:
    """A :class:`funchost.background.QueueSource` over a MessageQueue.

    Pop receipts of the messages being processed are kept here, by queue and message id,
    until the host completes or abandons them."""

    def __init__(
        self,
        queue: MessageQueue,
        max_dequeue_count: int = 5,
        visibility_timeout: int = 30,
        *,
        retry_delay: int = 0,
        batch_size: int = 16,
    ) -> None:
        if max_dequeue_count < 1:
            raise ValueError("max_dequeue_count must be at least 1")
        self._queue = queue
        self._max_dequeue_count = max_dequeue_count
        self._visibility_timeout = visibility_timeout
        self._retry_delay = retry_delay
        self._batch_size = batch_size
        self._in_flight: dict[tuple[str, str], QueueMessage] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_host_json(
        cls, queue: MessageQueue, host_json: str | Path = "host.json", visibility_timeout: int = 30
    ) -> Self:
        """A source with the retry and poison settings of ``host_json``."""
        options = read_queue_options(host_json)
        return cls(
            queue,
            options.max_dequeue_count,
            visibility_timeout,
            retry_delay=options.retry_delay,
            batch_size=options.batch_size,
        )

    def receive(self, queue_name: str) -> list[ReceivedMessage]:
        """Visible messages to deliver; those past ``max_dequeue_count`` go to poison."""
        received = self._queue.receive(
            queue_name, max_messages=self._batch_size, visibility_timeout=self._visibility_timeout
        )
        deliver: list[ReceivedMessage] = []
        for message in received:
            if message.dequeue_count > self._max_dequeue_count:
                self._poison(queue_name, message)
                continue
            with self._lock:
                self._in_flight[(queue_name, message.id)] = message
            deliver.append((message.id, message.body, message.dequeue_count))
        return deliver

    def complete(self, queue_name: str, message_id: str) -> None:
        """The function succeeded: delete the message."""
        message = self._take(queue_name, message_id)
        if message is not None:
            self._settle(queue_name, message, self._queue.delete)

    def abandon(self, queue_name: str, message_id: str) -> None:
        """The function failed: retry later, or move to poison after the last attempt."""
        message = self._take(queue_name, message_id)
        if message is None:
            return
        if message.dequeue_count >= self._max_dequeue_count:
            self._poison(queue_name, message)
        else:
            self._settle(queue_name, message, self._release)

    def _release(self, queue_name: str, message: QueueMessage) -> None:
        self._queue.release(queue_name, message, delay_seconds=self._retry_delay)

    def _poison(self, queue_name: str, message: QueueMessage) -> None:
        poison = queue_name + POISON_SUFFIX
        logger.warning(
            "message %s of queue %s moved to %s after %d attempts",
            message.id,
            queue_name,
            poison,
            message.dequeue_count,
        )
        self._queue.send(poison, message.body)
        self._settle(queue_name, message, self._queue.delete)

    def _settle(self, queue_name: str, message: QueueMessage, action: Settle) -> None:
        """Run ``action``; a stale pop receipt means another receiver holds the message now
        (this one outran its visibility timeout), so there is nothing left to settle."""
        try:
            action(queue_name, message)
        except PreconditionFailed:
            logger.warning("message %s of queue %s: pop receipt expired", message.id, queue_name)

    def _take(self, queue_name: str, message_id: str) -> QueueMessage | None:
        with self._lock:
            message = self._in_flight.pop((queue_name, message_id), None)
        if message is None:
            logger.warning("message %s of queue %s is not in flight", message_id, queue_name)
        return message
