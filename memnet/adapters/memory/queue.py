"""The in-memory :class:`~memnet.ports.MessageQueue`, for tests and for a throwaway
server (docs/testing.md): nothing survives the process, and another process sees
another queue.

The semantics are the SQLite queue's (:mod:`memnet.adapters.local.queue`), checked by
the same contract suite (``tests/contract/test_queue.py``): a receive hides a message
until ``now + visibility_timeout``, adds one to its ``dequeue_count`` and gives it a new
pop receipt; a stale receipt is :class:`~memnet.ports.PreconditionFailed` on ``delete``
and ``release``; order is by visible time, then sending; messages expire
:data:`~memnet.ports.TTL_SECONDS` after ``send``; names and limits are Azure's. One lock
guards every call, so two receivers never get the same visible message.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from memnet.ports import (
    MAX_DELAY_SECONDS,
    MAX_MESSAGES,
    TTL_SECONDS,
    PreconditionFailed,
    QueueMessage,
    check_body,
    check_queue_name,
    check_range,
)


@dataclass
class _Entry:
    seq: int
    body: str
    visible_at: float
    expires_at: float
    dequeue_count: int = 0
    pop_receipt: str | None = None


class MemoryQueue:
    """Azure Storage Queue semantics in one process's memory; ``clock`` gives the time
    in seconds (tests move it by hand)."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._queues: dict[str, dict[str, _Entry]] = {}  # queue -> message id -> entry
        self._sequence = itertools.count()
        self._lock = threading.Lock()

    def describe(self) -> str:
        return "memory queue (lost on exit)"

    def send(self, queue: str, body: str, *, delay_seconds: int = 0) -> str:
        """Enqueue ``body`` (visible after ``delay_seconds``); return the message id."""
        check_queue_name(queue)
        check_body(body)
        check_range("delay_seconds", delay_seconds, 0, MAX_DELAY_SECONDS)
        message_id = str(uuid.uuid4())
        now = self._clock()
        with self._lock:
            entry = _Entry(next(self._sequence), body, now + delay_seconds, now + TTL_SECONDS)
            self._queues.setdefault(queue, {})[message_id] = entry
        return message_id

    def receive(
        self, queue: str, *, max_messages: int = 16, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        """Claim up to ``max_messages`` visible messages, hidden for ``visibility_timeout`` s."""
        check_queue_name(queue)
        check_range("max_messages", max_messages, 1, MAX_MESSAGES)
        check_range("visibility_timeout", visibility_timeout, 1, MAX_DELAY_SECONDS)
        now = self._clock()
        with self._lock:
            messages = self._purged(queue, now)
            visible = [item for item in messages.items() if item[1].visible_at <= now]
            visible.sort(key=lambda item: (item[1].visible_at, item[1].seq))
            hidden_until = now + visibility_timeout
            return [_claim(id_, entry, hidden_until) for id_, entry in visible[:max_messages]]

    def delete(self, queue: str, message: QueueMessage) -> None:
        """Remove a received message; :class:`PreconditionFailed` if its receipt is stale."""
        check_queue_name(queue)
        with self._lock:
            self._held(queue, message)
            del self._queues[queue][message.id]

    def release(self, queue: str, message: QueueMessage, *, delay_seconds: int = 0) -> None:
        """Make a received message visible again after ``delay_seconds``; its receipt is
        spent (as Azure's ``update_message`` issues a new one)."""
        check_queue_name(queue)
        check_range("delay_seconds", delay_seconds, 0, MAX_DELAY_SECONDS)
        with self._lock:
            entry = self._held(queue, message)
            entry.visible_at = self._clock() + delay_seconds
            entry.pop_receipt = uuid.uuid4().hex

    def count(self, queue: str) -> int:
        """Number of unexpired messages, visible or not."""
        check_queue_name(queue)
        with self._lock:
            return len(self._purged(queue, self._clock()))

    def erase_deleted(self) -> None:
        """Nothing to do: a deleted message is gone from memory when it is deleted."""

    def _purged(self, queue: str, now: float) -> dict[str, _Entry]:
        """The queue's messages, the expired ones dropped (the caller holds the lock)."""
        messages = self._queues.get(queue, {})
        for message_id in [i for i, entry in messages.items() if entry.expires_at <= now]:
            del messages[message_id]
        return messages

    def _held(self, queue: str, message: QueueMessage) -> _Entry:
        """The unexpired entry ``message``'s receipt still holds, or PreconditionFailed."""
        entry = self._queues.get(queue, {}).get(message.id)
        if entry is None or entry.pop_receipt != message.pop_receipt:
            raise PreconditionFailed(f"{queue}/{message.id}")
        if entry.expires_at <= self._clock():
            raise PreconditionFailed(f"{queue}/{message.id}")
        return entry


def _claim(message_id: str, entry: _Entry, hidden_until: float) -> QueueMessage:
    entry.visible_at = hidden_until
    entry.dequeue_count += 1
    entry.pop_receipt = uuid.uuid4().hex
    return QueueMessage(message_id, entry.pop_receipt, entry.body, entry.dequeue_count)
