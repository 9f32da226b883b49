"""The files of the embedded SQLite databases (the local queue and search index): their
switch to WAL, and the erasure of what was deleted from them.

``PRAGMA journal_mode = WAL`` needs an exclusive lock, and while several connections open
a new database at once SQLite may answer ``database is locked`` straight away instead of
waiting out the busy timeout. So the switch is retried, with a short random pause, until
the database is in WAL mode (set by this connection or another) or ``timeout`` runs out.

A deleted row is not erased by SQLite: its bytes stay in the freed space of its page,
in pages on the free list, in the WAL's older frames, and (``secure_delete`` or not) in
the unused gap of pages a B-tree balance rebuilt, where a row that once moved left a
copy. :func:`erase_deleted` is what makes them unreadable: ``VACUUM`` writes every page
anew from the live rows alone, then a truncating checkpoint copies those pages over the
file (which shrinks to them) and empties the WAL. It rewrites the whole file, so it is
for the end of a forget, not for every delete (docs/performance.md, "Forget").
"""

from __future__ import annotations

import random
import sqlite3
import time
from pathlib import Path


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


def erase_deleted(path: Path, timeout: float) -> None:
    """Leave no deleted byte in the database's files (module doc). On its own connection
    (no statement of the caller's may be open); ``sqlite3.OperationalError`` "database is
    locked" when writers or readers kept it from finishing within ``timeout`` seconds
    each (the caller retries: what was vacuumed stays vacuumed)."""
    if not path.exists():
        return  # never created: nothing was ever written, so nothing was deleted
    db = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        db.execute("VACUUM")
        busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise sqlite3.OperationalError("database is locked: the WAL was not emptied")
    finally:
        db.close()
