"""The embedded :class:`~memnet.ports.MessageQueue`: every queue in one SQLite file
(docs/decisions.md, "Foundations"), with Azure Storage Queue semantics:

- a received message is hidden until ``now + visibility_timeout``; each receive adds one
  to its ``dequeue_count`` and gives it a new pop receipt, so a receiver whose lease ran
  out (someone else received the message since) gets :class:`PreconditionFailed` on
  ``delete`` or ``release``;
- ``send`` may delay visibility; order is by visible time, then insertion (FIFO-ish);
- messages live seven days from ``send`` (Azure's default TTL); expired ones are never
  delivered and are purged by ``receive``;
- names and limits are Azure's (:data:`memnet.ports.MAX_BODY_BYTES`,
  :func:`memnet.ports.check_queue_name`).

Concurrency: WAL mode, a ``busy_timeout``, one connection per thread, opened on the
thread's first call (a connection is not shared across threads; after ``fork`` the child
opens its own). Opening one costs ~0.6 ms, which an idle host polling eight queues a
second paid eight times a second (docs/performance.md, "The local host while idle").
``receive`` claims its messages inside one ``BEGIN IMMEDIATE`` transaction, so two
receivers never get the same visible message.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from memnet.adapters.local.sqlite_wal import erase_deleted, use_wal
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

BUSY_TIMEOUT_MS = 30_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    queue TEXT NOT NULL,
    id TEXT NOT NULL UNIQUE,
    body TEXT NOT NULL,
    visible_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    dequeue_count INTEGER NOT NULL DEFAULT 0,
    pop_receipt TEXT
);
CREATE INDEX IF NOT EXISTS messages_by_visibility ON messages (queue, visible_at, seq);
"""


class SqliteQueue:
    """Azure Storage Queue semantics over one SQLite file (created on first use)."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self._path = Path(path)
        self._clock = clock
        self._ready = False
        self._local = threading.local()  # this thread's (pid, connection)

    def describe(self) -> str:
        return "sqlite queue"  # no path: health is unauthenticated

    def send(self, queue: str, body: str, *, delay_seconds: int = 0) -> str:
        """Enqueue ``body`` (visible after ``delay_seconds``); return the message id."""
        check_queue_name(queue)
        check_body(body)
        check_range("delay_seconds", delay_seconds, 0, MAX_DELAY_SECONDS)
        message_id = str(uuid.uuid4())
        now = self._clock()
        with self._transaction() as db:
            db.execute(
                "INSERT INTO messages (queue, id, body, visible_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (queue, message_id, body, now + delay_seconds, now + TTL_SECONDS),
            )
        return message_id

    def receive(
        self, queue: str, *, max_messages: int = 16, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        """Claim up to ``max_messages`` visible messages, hidden for ``visibility_timeout`` s."""
        check_queue_name(queue)
        check_range("max_messages", max_messages, 1, MAX_MESSAGES)
        check_range("visibility_timeout", visibility_timeout, 1, MAX_DELAY_SECONDS)
        now = self._clock()
        with self._transaction() as db:
            db.execute("DELETE FROM messages WHERE queue = ? AND expires_at <= ?", (queue, now))
            rows = db.execute(
                "SELECT seq, id, body, dequeue_count FROM messages"
                " WHERE queue = ? AND visible_at <= ? ORDER BY visible_at, seq LIMIT ?",
                (queue, now, max_messages),
            ).fetchall()
            return [_claim(db, row, now + visibility_timeout) for row in rows]

    def delete(self, queue: str, message: QueueMessage) -> None:
        """Remove a received message; :class:`PreconditionFailed` if its receipt is stale."""
        check_queue_name(queue)
        with self._transaction() as db:
            cursor = db.execute(
                "DELETE FROM messages WHERE queue = ? AND id = ? AND pop_receipt = ?"
                " AND expires_at > ?",
                (queue, message.id, message.pop_receipt, self._clock()),
            )
        _require_one(cursor, queue, message)

    def release(self, queue: str, message: QueueMessage, *, delay_seconds: int = 0) -> None:
        """Make a received message visible again after ``delay_seconds``; its receipt is
        spent (as Azure's ``update_message`` issues a new one)."""
        check_queue_name(queue)
        check_range("delay_seconds", delay_seconds, 0, MAX_DELAY_SECONDS)
        now = self._clock()
        with self._transaction() as db:
            cursor = db.execute(
                "UPDATE messages SET visible_at = ?, pop_receipt = ?"
                " WHERE queue = ? AND id = ? AND pop_receipt = ? AND expires_at > ?",
                (now + delay_seconds, _receipt(), queue, message.id, message.pop_receipt, now),
            )
        _require_one(cursor, queue, message)

    def count(self, queue: str) -> int:
        """Number of unexpired messages, visible or not."""
        check_queue_name(queue)
        with self._connection() as db:
            (found,) = db.execute(
                "SELECT COUNT(*) FROM messages WHERE queue = ? AND expires_at > ?",
                (queue, self._clock()),
            ).fetchone()
        return int(found)

    def erase_deleted(self) -> None:
        """Rewrite the file from the messages still queued and empty the WAL
        (:func:`.sqlite_wal.erase_deleted`)."""
        erase_deleted(self._path, BUSY_TIMEOUT_MS / 1000)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the database's write lock up front."""
        with self._connection() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection (it closes when the thread ends)."""
        opened = getattr(self._local, "opened", None)
        if opened is None or opened[0] != os.getpid():
            opened = self._local.opened = (os.getpid(), self._connect())
        db = opened[1]
        if not self._ready:
            _create_schema(db)
            self._ready = True
        yield db

    def _connect(self) -> sqlite3.Connection:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: transactions are opened explicitly (BEGIN IMMEDIATE).
        db = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA synchronous = NORMAL")  # WAL: durable across process crashes
        return db


def _create_schema(db: sqlite3.Connection) -> None:
    use_wal(db, BUSY_TIMEOUT_MS / 1000)  # persistent: stored in the database file
    db.execute("BEGIN IMMEDIATE")
    try:
        for statement in filter(str.strip, _SCHEMA.split(";")):
            db.execute(statement)
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _claim(
    db: sqlite3.Connection, row: tuple[int, str, str, int], hidden_until: float
) -> QueueMessage:
    seq, message_id, body, dequeue_count = row
    receipt = _receipt()
    db.execute(
        "UPDATE messages SET visible_at = ?, dequeue_count = ?, pop_receipt = ? WHERE seq = ?",
        (hidden_until, dequeue_count + 1, receipt, seq),
    )
    return QueueMessage(message_id, receipt, body, dequeue_count + 1)


def _receipt() -> str:
    return uuid.uuid4().hex


def _require_one(cursor: sqlite3.Cursor, queue: str, message: QueueMessage) -> None:
    if cursor.rowcount != 1:
        raise PreconditionFailed(f"{queue}/{message.id}")
