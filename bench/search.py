"""Event search on the embedded index (SQLite, impact-ordered BM25): ingest, search latency,
size on disk, and how often the postings budget changes an answer.

    .venv/bin/python -m bench.search [--only 1k,10k,100k,1m,1m-users] [--no-http]
                                     [--dir DIR] [--rebuild] [--write-docs]

Datasets (synthetic digests, Zipf-drawn words, fixed seeds): 10k, 100k and 1M events of
one user, and 1M events over 1,000 users (and 1k events of one user, for comparison).
Each is bulk-indexed into a :class:`~memnet.adapters.local.search.SqliteSearchIndex` in
batches of the reindex job's size (events/s recorded) and cached under ``--dir``
(``--rebuild`` builds again).

Per dataset, at 1 and 8 concurrent clients: ``SqliteSearchIndex.search`` in-process (the
index alone) and ``POST .../events:search`` through a real ``memnet serve``
on the dataset (index, then one blob read per hit; blobs are written for exactly the
events the query set returns, so a 1M dataset needs no million files). Then ingest
through ``POST .../events`` on a fresh server. Raw JSON goes to bench/results/.
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import shutil
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench import report
from bench.harness import (
    REPO,
    Client,
    Op,
    machine,
    run_load,
    start_server,
    summarize,
    summarize_run,
)
from bench.search_report import KINDS, targets, write_markdown
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.ports import Condition, EventQuery, IndexedEvent, PreconditionFailed
from memnet.services.events.records import event_name
from memnet.services.search.index import JOB_BATCH

GENERATOR = "2"  # bump when the data or its layout changes: cached datasets are rebuilt
TENANT = "bench"
CONCURRENCY = (1, 8)
VOCABULARY = 20_000
START = datetime(2024, 1, 1, tzinfo=UTC)
SPAN_SECONDS = 2 * 365 * 86_400
SERVICES = [f"svc-{i}" for i in range(5)]
SOURCES = ["chat", "email", "meeting"]
PROJECTS = [f"project-{i}" for i in range(30)]
RESULTS = REPO / "bench" / "results"
BULK_BATCH = 10_000  # events per upsert while building, but for the timed tail
TAIL = 10_000  # the last events of a dataset, upserted in reindex-job batches and timed
WARMUP = 100  # searches with other queries before the measured ones, per dataset


@dataclass(frozen=True)
class Dataset:
    name: str
    events: int
    users: int


DATASETS = (
    Dataset("1k", 1_000, 1),  # what each user of "1m-users" holds, alone: for comparison
    Dataset("10k", 10_000, 1),
    Dataset("100k", 100_000, 1),
    Dataset("1m", 1_000_000, 1),
    Dataset("1m-users", 1_000_000, 1_000),
)


# -- synthetic data --------------------------------------------------------------------


class Words:
    """A fixed pseudo-vocabulary drawn with a Zipf-like distribution (s = 1.1), so a few
    words are in most digests and most words are rare."""

    def __init__(self) -> None:
        rng, letters = random.Random("vocabulary"), "abcdefghijklmnopqrstuvwxyz"
        self.words = ["".join(rng.choices(letters, k=rng.randint(3, 9))) for _ in range(VOCABULARY)]
        weights = [1 / (rank + 1) ** 1.1 for rank in range(VOCABULARY)]
        self.cumulative = list(itertools.accumulate(weights))

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cumulative, k=k)


def synthetic(data: Dataset, words: Words, seed: str) -> Iterator[IndexedEvent]:
    """Events in arrival order (users interleaved), 10-30 words of digest each."""
    rng = random.Random(seed)
    for i in range(data.events):
        moment = START + timedelta(seconds=rng.randrange(SPAN_SECONDS))
        yield IndexedEvent(
            tenant_id=TENANT,
            user_id=f"u{i % data.users}",
            event_id=f"evt_{i:08d}",
            timestamp=moment.isoformat(),
            service_id=rng.choice(SERVICES),
            source_type=rng.choice(SOURCES),
            digest=" ".join(words.draw(rng, rng.randint(10, 30))),
            keywords=tuple(words.draw(rng, 3)),
            project_ids=tuple(rng.sample(PROJECTS, rng.randint(0, 2))),
        )


@dataclass(frozen=True)
class Query:
    kind: str
    query: EventQuery

    def body(self) -> dict[str, Any]:
        """The same query as an ``events:search`` request body."""
        q = self.query
        body: dict[str, Any] = {"text": q.text, "top_k": q.top_k}
        if q.service_ids:
            body["service_id"] = list(q.service_ids)
        if q.project_ids:
            body["project_id"] = list(q.project_ids)
        if q.since:
            body["time_range"] = {"from": q.since, "to": q.until}
        return body


def queries(data: Dataset, words: Words, count: int, seed: str = "queries") -> list[Query]:
    """60 % text (2-4 Zipf-drawn words), 20 % text and a filter (service, project or
    60 days), 10 % no text (newest first), 10 % no text and a filter; random users."""
    rng, made = random.Random(f"{seed}-{data.name}"), []
    for _ in range(count):
        roll = rng.random()
        kind = KINDS[(roll >= 0.6) + (roll >= 0.8) + (roll >= 0.9)]
        text = " ".join(words.draw(rng, rng.randint(2, 4))) if kind.startswith("text") else ""
        filters = _filters(rng) if kind.endswith("filter") else {}
        user = f"u{rng.randrange(data.users)}"
        query = EventQuery(tenant_id=TENANT, user_id=user, text=text, top_k=10, **filters)
        made.append(Query(kind, query))
    return made


def _filters(rng: random.Random) -> dict[str, Any]:
    kind = rng.choice(("service", "project", "time"))
    if kind == "service":
        return {"service_ids": (rng.choice(SERVICES),)}
    if kind == "project":
        return {"project_ids": (rng.choice(PROJECTS),)}
    since = START + timedelta(days=rng.randrange(600))
    return {"since": since.isoformat(), "until": (since + timedelta(days=60)).isoformat()}


# -- building and sizing ---------------------------------------------------------------


def index_path(root: Path, data: Dataset) -> Path:
    return root / data.name / "search.sqlite3"  # the server's MEMNET_DATA_DIR layout


def build(root: Path, data: Dataset, words: Words, rebuild: bool) -> dict[str, Any]:
    """Index the dataset unless a build of this generator is cached; the build's record
    (events/s, when) is kept beside it. All but the last :data:`TAIL` events go in in
    batches of :data:`BULK_BATCH` (quick to build); the last ones in reindex-job batches
    (``JOB_BATCH``), timed: what indexing costs at this size."""
    path, marker = index_path(root, data), root / data.name / "build.json"
    if marker.exists() and not rebuild:
        built = json.loads(marker.read_text())
        if built.get("generator") == GENERATOR:
            return {**built, "cached": True}
    shutil.rmtree(path.parent, ignore_errors=True)
    path.parent.mkdir(parents=True)
    index, events = SqliteSearchIndex(path), synthetic(data, words, data.name)
    tail = min(TAIL, data.events)
    print(f"  building {data.name} ({data.events:,} events) ...", flush=True)
    bulk = _upsert_in(index, itertools.islice(events, data.events - tail), BULK_BATCH)
    spent = _upsert_in(index, events, JOB_BATCH)
    db = sqlite3.connect(path)  # sizes without the build's WAL left in it
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    built = {
        "generator": GENERATOR,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "events": data.events,
        "batch": JOB_BATCH,
        "bulk_s": round(bulk, 1),
        "timed_events": tail,
        "index_s": round(spent, 1),
        "events_per_s": round(tail / spent),
    }
    marker.write_text(json.dumps(built))
    print(f"  built {data.name}: {built['events_per_s']:,} events/s", flush=True)
    return {**built, "cached": False}


def _upsert_in(index: SqliteSearchIndex, events: Iterator[IndexedEvent], size: int) -> float:
    """Seconds spent upserting ``events`` in batches of ``size``."""
    spent, batch = 0.0, []
    for event in events:
        batch.append(event)
        if len(batch) == size:
            spent += _timed(index.upsert, batch)
            batch = []
    return spent + (_timed(index.upsert, batch) if batch else 0.0)


def _timed(call: Callable[[list[IndexedEvent]], object], events: list[IndexedEvent]) -> float:
    started = time.perf_counter()
    call(events)
    return time.perf_counter() - started


def size_on_disk(path: Path, events: int) -> dict[str, Any]:
    """Bytes of the SQLite file, its WAL and shared-memory index, as they are now."""
    sizes = {
        part: Path(f"{path}{suffix}").stat().st_size if Path(f"{path}{suffix}").exists() else 0
        for part, suffix in (("db", ""), ("wal", "-wal"), ("shm", "-shm"))
    }
    total = sum(sizes.values())
    return {**sizes, "total": total, "bytes_per_event": round(total / events)}


# -- search, in-process and over HTTP ----------------------------------------------------


def index_op(index: SqliteSearchIndex, batch: list[Query]) -> Callable[[int], Op]:
    """Client ``i`` starts at query ``37 * i`` and walks the list."""

    def make(i: int) -> Op:
        turn = [37 * i]

        def op() -> bool:
            turn[0] += 1
            index.search(batch[turn[0] % len(batch)].query)
            return True

        return op

    return make


def one_pass(
    index: SqliteSearchIndex, batch: list[Query], cap_s: float
) -> tuple[dict[str, Any], list[Any]]:
    """1 client: the queries once each, in order, until ``cap_s``. Returns the latency
    summary (overall and by kind) and the hits of each query run (what HTTP must return)."""
    timed, hits, started = [], [], time.perf_counter()
    read: list[tuple[int, bool]] = []
    for q in batch:
        if time.perf_counter() - started > cap_s:
            break
        begun = time.perf_counter()
        found, how = index.search_with_stats(q.query)
        timed.append((q.kind, (time.perf_counter() - begun) * 1000))
        hits.append([h.event_id for h in found])
        if q.query.text:
            read.append((how.postings, how.exact))
    stats = summarize([ms for _, ms in timed], time.perf_counter() - started, errors=0)
    kinds = {k: summarize([ms for kind, ms in timed if kind == k], 0.0) for k in KINDS}
    postings = sorted(n for n, _ in read)
    ranking = {
        "text_queries": len(read),
        "postings_mean": round(sum(postings) / len(postings), 1) if postings else 0.0,
        "postings_p95": postings[int(0.95 * (len(postings) - 1))] if postings else 0,
        "budgeted": sum(1 for _, exact in read if not exact),
    }
    out = {"clients": 1, **stats, "capped": len(hits) < len(batch), "kinds": kinds}
    return {**out, "ranking": ranking}, hits


def budget_effect(path: Path, batch: list[Query], hits: list[list[str]]) -> dict[str, Any]:
    """For each text query the postings budget cut short, the exact answer (no budget):
    how many answers differ, and the share of returned events that score at least the
    exact answer's k-th (score recall; ties make the event lists themselves differ)."""
    unbounded = SqliteSearchIndex(path, max_postings=10**12)
    budgeted = SqliteSearchIndex(path)
    cut, differ, recall = 0, 0, []
    for q, got in zip(batch, hits, strict=False):
        if not q.query.text or budgeted.search_with_stats(q.query)[1].exact:
            continue
        cut += 1
        exact = unbounded.search(q.query)
        returned = budgeted.search(q.query)
        differ += [h.event_id for h in exact] != got
        kth = exact[-1].score if exact else 0.0
        recall.append(sum(h.score >= kth for h in returned) / max(1, len(exact)))
    share = round(sum(recall) / len(recall), 4) if recall else 1.0
    return {"cut": cut, "differ": differ, "score_recall": share}


def warm(path: Path) -> None:
    """Read the index files once, so that every dataset is measured from the page cache."""
    for part in (path, Path(f"{path}-wal")):
        if part.exists():
            with part.open("rb") as f:
                while f.read(1 << 20):
                    pass


def http_op(
    port: int, batch: list[Query], expected: list[list[str]], wrong: list[str]
) -> Callable[[int], Op]:
    """As :func:`index_op`, over HTTP; a reply counts as an error unless it returns
    exactly the events the index returned for that query in-process (the first few
    differences go to ``wrong``)."""

    def make(i: int) -> Op:
        client, turn = Client(port), [37 * i]

        def op() -> bool:
            turn[0] += 1
            n = turn[0] % len(batch)
            url = f"/v1/tenants/{TENANT}/users/{batch[n].query.user_id}/events:search"
            reply = client.request("POST", url, batch[n].body())
            results = reply.json()["results"] if reply.status == 200 else None
            got = [r["event"]["event_id"] for r in results] if results is not None else None
            if got != expected[n] and len(wrong) < 3:
                wrong.append(f"query {n}: {reply.status} {got or reply.body[:200]!r}")
            return got == expected[n]

        return op

    return make


def write_hit_blobs(root: Path, index_file: Path, hits: list[list[str]], batch: list[Query]) -> int:
    """The event blob of every event some query returns, rebuilt from the index's row
    (the fields the API stores), create-only: the blobs the server will read."""
    store, db, written = FileBlobStore(root), sqlite3.connect(index_file), 0
    sql = """SELECT s.user_id, e.event_id, e.timestamp, e.service_id, e.source_type, e.digest,
        e.keywords, e.project_ids FROM events e JOIN scopes s USING (scope_id)
        WHERE s.tenant_id = ? AND s.user_id = ? AND e.event_id = ?"""
    wanted = {(q.query.user_id, e) for q, ids in zip(batch, hits, strict=True) for e in ids}
    for user, event_id in sorted(wanted):
        row = db.execute(sql, (TENANT, user, event_id)).fetchone()
        record = {
            "event_id": row[1],
            "tenant_id": TENANT,
            "user_id": row[0],
            "service_id": row[3],
            "timestamp": row[2],
            "source_type": row[4],
            "digest": row[5],
            "keywords": json.loads(row[6]),
            "project_ids": json.loads(row[7]),
            "snapshot_uri": None,
            "evidence": None,
        }
        data = json.dumps(record, separators=(",", ":")).encode()
        try:
            store.write(event_name(TENANT, user, event_id), data, Condition.create_only())
            written += 1
        except PreconditionFailed:
            pass  # written by an earlier run
    db.close()
    return len(wanted)


def bench_dataset(data: Dataset, words: Words, args: argparse.Namespace) -> dict[str, Any]:
    built = build(args.dir, data, words, args.rebuild)
    path = index_path(args.dir, data)
    batch = queries(data, words, args.queries)
    warm(path)
    index = SqliteSearchIndex(path)
    for q in queries(data, words, WARMUP, seed="warm-up"):  # other queries: a running
        index.search(q.query)  # server's state (mapped file), not these queries' pages
    single, hits = one_pass(index, batch, args.pass_cap)
    batch = batch[: len(hits)]  # the rest use only the queries whose hits are known
    print(f"  {data.name:8} index c=1 " + report.brief(single), flush=True)
    result: dict[str, Any] = {**asdict(data), "build": built, "kinds": single.pop("kinds")}
    result["ranking"] = {**single.pop("ranking"), **budget_effect(path, batch, hits)}
    result["index"], result["http"] = [single], []
    for clients in CONCURRENCY[1:]:
        run = run_load(clients, args.requests, args.time_cap, index_op(index, batch))
        result["index"].append({"clients": clients, **summarize_run(run)})
        print(f"  {data.name:8} index c={clients} " + report.brief(result["index"][-1]), flush=True)
    if not args.no_http:
        result["blobs"] = write_hit_blobs(path.parent, path, hits, batch)
        result["http"] = http_search(path.parent, batch, hits, data, args)
    result["size"] = size_on_disk(path, data.events)
    return result


def http_search(
    data_dir: Path,
    batch: list[Query],
    hits: list[list[str]],
    data: Dataset,
    args: argparse.Namespace,
) -> list[dict[str, Any]]:
    server = start_server({"MEMNET_DATA_DIR": str(data_dir)})
    try:
        out = []
        for clients in CONCURRENCY:
            wrong: list[str] = []
            make = http_op(server.port, batch, hits, wrong)
            stats = summarize_run(run_load(clients, args.requests, args.time_cap, make))
            out.append({"clients": clients, **stats, "wrong": wrong})
            for line in wrong:
                print(f"  {data.name:8} http  c={clients} differs: {line}", flush=True)
            print(f"  {data.name:8} http  c={clients} " + report.brief(stats), flush=True)
        return out
    finally:
        server.stop()


# -- ingest over HTTP ------------------------------------------------------------------


def http_ingest(words: Words, count: int, cap: float) -> list[dict[str, Any]]:
    """``POST .../events`` on a fresh server (empty data directory): ``count`` new
    events per level, each with its own idempotency key; 201 and ``indexed`` expected."""
    server, out = start_server(), []
    try:
        for clients in CONCURRENCY:
            data = Dataset(f"ingest-c{clients}", count + 3 * clients, 1)
            bodies = [_event_body(e) for e in synthetic(data, words, data.name)]
            tickets = itertools.count()

            def make(
                _: int,
                bodies: list[dict[str, Any]] = bodies,
                user: str = data.name,
                tickets: Iterator[int] = tickets,
            ) -> Op:
                client, url = Client(server.port), f"/v1/tenants/{TENANT}/users/{user}/events"

                def op() -> bool:
                    body = bodies[next(tickets)]
                    reply = client.request("POST", url, body, {"Idempotency-Key": uuid.uuid4().hex})
                    return reply.status == 201 and reply.json()["indexed"] is True

                return op

            stats = summarize_run(run_load(clients, count, cap, make))
            out.append({"clients": clients, **stats})
            print(f"  ingest   http  c={clients} " + report.brief(stats), flush=True)
        return out
    finally:
        server.stop()


def _event_body(event: IndexedEvent) -> dict[str, Any]:
    return {
        "service_id": event.service_id,
        "timestamp": event.timestamp,
        "source_type": event.source_type,
        "digest": event.digest,
        "keywords": list(event.keywords),
        "project_ids": list(event.project_ids),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.search",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    names = ",".join(d.name for d in DATASETS)
    parser.add_argument("--only", default=names, help=f"datasets, comma-separated ({names})")
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp/memnet-bench-search"), help="dataset cache"
    )
    parser.add_argument("--rebuild", action="store_true", help="build cached datasets again")
    parser.add_argument("--queries", type=int, default=200, help="distinct queries per dataset")
    parser.add_argument("--requests", type=int, default=1000, help="searches per path and level")
    parser.add_argument("--time-cap", type=float, default=8.0, help="seconds per path and level")
    parser.add_argument(
        "--pass-cap",
        type=float,
        default=60.0,
        help="seconds for the 1-client pass over the queries",
    )
    parser.add_argument("--no-http", action="store_true", help="index only, no server")
    parser.add_argument("--ingest", type=int, default=2000, help="events per level, 0: skip")
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = [d for d in DATASETS if d.name in args.only.split(",")]
    started, words = datetime.now(UTC), Words()
    args.dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python -m bench.search", *(argv or sys.argv[1:])]),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "sizes": [bench_dataset(d, words, args) for d in chosen],
        "ingest": http_ingest(words, args.ingest, 4 * args.time_cap) if args.ingest else [],
    }
    results["targets"] = targets(results["sizes"])
    results["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    print(report.targets_text(results["targets"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"search-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    if args.write_docs:
        print(f"wrote {write_markdown(results, REPO / 'docs' / 'performance.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
