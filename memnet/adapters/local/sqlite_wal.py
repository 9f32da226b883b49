"""Switching an embedded SQLite database to WAL, shared by the local queue and search index.

``PRAGMA journal_mode = WAL`` needs an exclusive lock, and while several connections open
a new database at once SQLite may answer ``database is locked`` straight away instead of
waiting out the busy timeout. So the switch is retried, with a short random pause, until
the database is in WAL mode (set by this connection or another) or ``timeout`` runs out.
"""

from __future__ import annotations

import random
import sqlite3
import time


def use_wal(db: sqlite3.Connection, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        else:
            if str(mode).lower() == "wal":
                return
            if time.monotonic() >= deadline:
                raise sqlite3.OperationalError(f"journal mode stayed {mode!r}, not WAL")
        time.sleep(random.uniform(0.001, 0.01))
