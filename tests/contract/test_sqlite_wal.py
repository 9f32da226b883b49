"""The embedded SQLite databases (queue, search index) switch to WAL safely when many
connections open a new database at once (``memnet.adapters.local.sqlite_wal``)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from memnet.adapters.local.sqlite_wal import use_wal


def test_many_connections_switching_a_new_database_to_wal_all_succeed(tmp_path: Path) -> None:
    """A plain ``PRAGMA journal_mode = WAL`` failed here with "database is locked" in
    about one trial in ten (12 connections at once on a new file)."""
    errors: list[BaseException] = []
    for trial in range(40):
        path = tmp_path / f"t{trial}.sqlite3"
        barrier = threading.Barrier(12)

        def switch(path: Path = path, barrier: threading.Barrier = barrier) -> None:
            db = sqlite3.connect(path, timeout=10, isolation_level=None)
            barrier.wait()
            try:
                use_wal(db, 10)
            except BaseException as exc:  # collected for the assertion below
                errors.append(exc)
            finally:
                db.close()

        threads = [threading.Thread(target=switch) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"
    assert errors == []
