"""A design probe for :class:`memnet.adapters.local.search.SqliteSearchIndex` (not the final
benchmark): fills synthetic event digests and measures search latency in-process.

Datasets: 1k, 10k, 100k and 1M events of one user, and 1M events spread over 1,000 users
(the target: p95 there within 3x of p95 at 10k; ratios are printed against 10k).
They are built once under ``--dir`` (default ``/tmp/memnet-search-probe``) and reused; the
1M builds take a few minutes. ``--naive`` also builds a plain, unprefixed FTS5 table over
the 1,000-user data and times the "global MATCH, then join on user" plan for comparison.

    .venv/bin/python -m bench.search_probe [--queries 200] [--naive] [--only 10k,1m-users]

Queries: 60% text (2-4 Zipf-drawn words, so common terms are frequent), 20% text with a
filter (service, project or a time range), 20% empty text (newest first) with or without a
filter; each for a random user of the dataset. Prints p50/p95/p99 in milliseconds.
"""

from __future__ import annotations

import argparse
import itertools
import random
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memnet.adapters.local.search import SqliteSearchIndex, tokens
from memnet.ports import EventQuery, IndexedEvent

VOCABULARY = 20_000
BATCH = 5_000
START = datetime(2024, 1, 1, tzinfo=UTC)
SPAN_SECONDS = 2 * 365 * 86_400
SERVICES = [f"svc-{i}" for i in range(5)]
SOURCES = ["chat", "email", "meeting"]
PROJECTS = [f"project-{i}" for i in range(30)]


@dataclass(frozen=True)
class Dataset:
    name: str
    events: int
    users: int


DATASETS = (
    Dataset("1k", 1_000, 1),  # what one user of "1m-users" holds, alone
    Dataset("10k", 10_000, 1),
    Dataset("100k", 100_000, 1),
    Dataset("1m", 1_000_000, 1),
    Dataset("1m-users", 1_000_000, 1_000),
)


class Words:
    """A fixed pseudo-vocabulary drawn with a Zipf-like distribution (s = 1.1)."""

    def __init__(self, rng: random.Random) -> None:
        letters = "abcdefghijklmnopqrstuvwxyz"
        self.words = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(VOCABULARY)]
        weights = [1 / (rank + 1) ** 1.1 for rank in range(VOCABULARY)]
        self.cumulative = list(itertools.accumulate(weights))

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=k)


def synthetic(dataset: Dataset, words: Words, rng: random.Random) -> Iterator[IndexedEvent]:
    for i in range(dataset.events):
        moment = START + timedelta(seconds=rng.randrange(SPAN_SECONDS))
        yield IndexedEvent(
            tenant_id="t1",
            user_id=f"u{i % dataset.users}",
            event_id=f"evt_{i:08d}",
            timestamp=moment.isoformat(),
            service_id=rng.choice(SERVICES),
            source_type=rng.choice(SOURCES),
            digest=" ".join(words.draw(rng, rng.randint(10, 30))),
            keywords=tuple(words.draw(rng, 3)),
            project_ids=tuple(rng.sample(PROJECTS, rng.randint(0, 2))),
        )


def build(path: Path, dataset: Dataset, words: Words) -> SqliteSearchIndex:
    index = SqliteSearchIndex(path)
    done = path.with_suffix(".done")
    if done.exists():
        return index
    path.unlink(missing_ok=True)
    started = time.perf_counter()
    batch: list[IndexedEvent] = []
    for event in synthetic(dataset, words, random.Random(dataset.name)):
        batch.append(event)
        if len(batch) == BATCH:
            index.upsert(batch)
            batch = []
    index.upsert(batch)
    done.write_text("ok")
    print(f"built {dataset.name}: {dataset.events} events in {time.perf_counter() - started:.0f}s")
    return index


def queries(dataset: Dataset, words: Words, count: int) -> list[EventQuery]:
    rng = random.Random(f"queries-{dataset.name}")
    made = []
    for _ in range(count):
        user, roll = f"u{rng.randrange(dataset.users)}", rng.random()
        text = " ".join(words.draw(rng, rng.randint(2, 4))) if roll < 0.8 else ""
        filters = _filters(rng) if 0.6 <= roll < 0.8 or (roll >= 0.9) else {}
        made.append(EventQuery(tenant_id="t1", user_id=user, text=text, top_k=10, **filters))
    return made


def _filters(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("service", "project", "time"))
    if kind == "service":
        return {"service_ids": (rng.choice(SERVICES),)}
    if kind == "project":
        return {"project_ids": (rng.choice(PROJECTS),)}
    since = START + timedelta(days=rng.randrange(600))
    return {"since": since.isoformat(), "until": (since + timedelta(days=60)).isoformat()}


def measure(search: Callable[[EventQuery], object], batch: list[EventQuery]) -> list[float]:
    """Milliseconds per query, after a warm-up of the page cache."""
    for query in batch[:20]:
        search(query)
    timings = []
    for query in batch:
        started = time.perf_counter()
        search(query)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def report(name: str, timings: list[float], baseline: float | None = None) -> float:
    cuts = statistics.quantiles(timings, n=100)
    p95 = cuts[94]
    ratio = f"  (p95 = {p95 / baseline:.2f} x 10k)" if baseline else ""
    print(f"{name:>16}: p50 {cuts[49]:7.2f}  p95 {p95:7.2f}  p99 {cuts[98]:7.2f} ms{ratio}")
    return p95


# -- the naive plan, for comparison ------------------------------------------------------


def build_naive(path: Path, dataset: Dataset, words: Words) -> sqlite3.Connection:
    done = path.with_suffix(".done")
    db = sqlite3.connect(path, isolation_level=None)
    if done.exists():
        return db
    db.executescript("""
        CREATE TABLE IF NOT EXISTS events (doc_id INTEGER PRIMARY KEY, user_id TEXT, ts INTEGER);
        CREATE INDEX IF NOT EXISTS by_user ON events (user_id, ts);
        CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5 (digest, keywords, content='',
            tokenize="porter unicode61 remove_diacritics 2");""")
    db.execute("BEGIN")
    for doc_id, event in enumerate(synthetic(dataset, words, random.Random(dataset.name))):
        ts = int(datetime.fromisoformat(event.timestamp).timestamp())
        db.execute("INSERT INTO events VALUES (?, ?, ?)", (doc_id, event.user_id, ts))
        row = (doc_id, event.digest, " ".join(event.keywords))
        db.execute("INSERT INTO fts (rowid, digest, keywords) VALUES (?, ?, ?)", row)
    db.execute("COMMIT")
    done.write_text("ok")
    return db


def naive_search(db: sqlite3.Connection) -> Callable[[EventQuery], object]:
    sql = """SELECT e.doc_id, bm25(fts, 1.0, 1.5) AS r FROM fts JOIN events e
        ON e.doc_id = fts.rowid WHERE fts MATCH ? AND e.user_id = ? ORDER BY r LIMIT ?"""

    def search(query: EventQuery) -> object:
        match = " OR ".join(f'"{t}"' for t in tokens(query.text))
        if not match:
            return []
        return db.execute(sql, (match, query.user_id, query.top_k)).fetchall()

    return search


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/memnet-search-probe"))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--only", default="", help="comma-separated dataset names")
    parser.add_argument("--naive", action="store_true")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    words = Words(random.Random("vocabulary"))
    chosen = [d for d in DATASETS if not args.only or d.name in args.only.split(",")]
    baseline = None
    for dataset in chosen:
        index = build(args.dir / f"{dataset.name}.sqlite3", dataset, words)
        batch = queries(dataset, words, args.queries)
        timings = measure(index.search, batch)
        p95 = report(dataset.name, timings, baseline)
        baseline = p95 if dataset.name == "10k" else baseline
        text = [t for t, q in zip(timings, batch, strict=True) if tokens(q.text)]
        report(f"{dataset.name} text", text, baseline)
    if args.naive:
        dataset = DATASETS[-1]
        db = build_naive(args.dir / "naive-1m-users.sqlite3", dataset, words)
        texts = [q for q in queries(dataset, words, args.queries) if tokens(q.text)]
        report("naive 1m-users", measure(naive_search(db), texts), baseline)


if __name__ == "__main__":
    main()
