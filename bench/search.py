"""Event search on the embedded index (SQLite FTS5): ingest, search latency, size on disk.

    .venv/bin/python -m bench.search [--only 1k,10k,100k,1m,1m-users] [--no-http]
                                     [--dir DIR] [--rebuild] [--write-docs]

Datasets (synthetic digests, Zipf-drawn words, fixed seeds): 10k, 100k and 1M events of
one user, and 1M events over 1,000 users (and 1k events of one user, for comparison).
Each is bulk-indexed into a :class:`~memnet.adapters.local.search.SqliteSearchIndex` in
batches of the reindex job's size (events/s recorded) and cached under ``--dir``
(``--rebuild`` builds again).

Per dataset, at 1 and 8 concurrent clients: ``SqliteSearchIndex.search`` in-process (the
index alone) and ``POST .../events:search`` through a real ``python -m memnet serve``
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
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.local.search import SqliteSearchIndex, match_expression
from memnet.events import JOB_BATCH, event_name
from memnet.ports import Condition, EventQuery, IndexedEvent, PreconditionFailed

GENERATOR = "1"  # bump when the data or its layout changes: cached datasets are rebuilt
TENANT, SECTION, ANALYSIS, LIMIT = "bench", "search", "search-analysis", 3.0
CONCURRENCY = (1, 8)
VOCABULARY = 20_000
START = datetime(2024, 1, 1, tzinfo=UTC)
SPAN_SECONDS = 2 * 365 * 86_400
SERVICES = [f"svc-{i}" for i in range(5)]
SOURCES = ["chat", "email", "meeting"]
PROJECTS = [f"project-{i}" for i in range(30)]
KINDS = ("text", "text+filter", "newest", "newest+filter")  # 60 / 20 / 10 / 10 %
RESULTS = REPO / "bench" / "results"


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


def queries(data: Dataset, words: Words, count: int) -> list[Query]:
    """60 % text (2-4 Zipf-drawn words), 20 % text and a filter (service, project or
    60 days), 10 % no text (newest first), 10 % no text and a filter; random users."""
    rng, made = random.Random(f"queries-{data.name}"), []
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
    """Bulk-index the dataset unless a build of this generator is cached; the build's
    record (events/s, when) is kept beside it."""
    path, marker = index_path(root, data), root / data.name / "build.json"
    if marker.exists() and not rebuild:
        built = json.loads(marker.read_text())
        if built.get("generator") == GENERATOR:
            return {**built, "cached": True}
    shutil.rmtree(path.parent, ignore_errors=True)
    path.parent.mkdir(parents=True)
    index, batch, spent = SqliteSearchIndex(path), [], 0.0
    print(f"  building {data.name} ({data.events:,} events) ...", flush=True)
    for event in synthetic(data, words, data.name):
        batch.append(event)
        if len(batch) == JOB_BATCH:
            spent += _timed(index.upsert, batch)
            batch = []
    spent += _timed(index.upsert, batch)
    db = sqlite3.connect(path)  # sizes without the build's WAL left in it
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    built = {
        "generator": GENERATOR,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "events": data.events,
        "batch": JOB_BATCH,
        "index_s": round(spent, 1),
        "events_per_s": round(data.events / spent),
    }
    marker.write_text(json.dumps(built))
    print(f"  built {data.name}: {built['events_per_s']:,} events/s", flush=True)
    return {**built, "cached": False}


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
    for q in batch:
        if time.perf_counter() - started > cap_s:
            break
        begun = time.perf_counter()
        hits.append([h.event_id for h in index.search(q.query)])
        timed.append((q.kind, (time.perf_counter() - begun) * 1000))
    stats = summarize([ms for _, ms in timed], time.perf_counter() - started, errors=0)
    kinds = {k: summarize([ms for kind, ms in timed if kind == k], 0.0) for k in KINDS}
    return {"clients": 1, **stats, "capped": len(hits) < len(batch), "kinds": kinds}, hits


def matched_rows(path: Path, batch: list[Query]) -> float:
    """Mean number of events a text query's MATCH selects: the rows FTS5 scores."""
    db, counts = sqlite3.connect(path), []
    for q in (q for q in batch if q.query.text):
        scope = db.execute(
            "SELECT scope_id FROM scopes WHERE tenant_id = ? AND user_id = ?",
            (TENANT, q.query.user_id),
        ).fetchone()[0]
        match = match_expression(scope, q.query.text)
        counts.append(db.execute("SELECT count(*) FROM events_fts(?)", (match,)).fetchone()[0])
    db.close()
    return round(sum(counts) / len(counts), 1) if counts else 0.0


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
    single, hits = one_pass(index, batch, args.pass_cap)
    batch = batch[: len(hits)]  # the rest use only the queries whose hits are known
    print(f"  {data.name:8} index c=1 " + report.brief(single), flush=True)
    result: dict[str, Any] = {**asdict(data), "build": built, "kinds": single.pop("kinds")}
    result["matched_rows"] = matched_rows(path, batch)
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


# -- targets and docs/performance.md ------------------------------------------------------


def targets(sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Search p95 at each 1M dataset within ``LIMIT`` x p95 at 10k, per path and level."""
    base = next((s for s in sizes if s["name"] == "10k"), None)
    found: list[dict[str, Any]] = []
    if base is None:
        return found
    for big in (s for s in sizes if s["events"] == 1_000_000):
        for path in ("index", "http"):
            for ref, run in zip(base[path], big[path], strict=False):
                ratio = run["p95_ms"] / ref["p95_ms"]
                clients = f"{run['clients']} client" + ("s" if run["clients"] > 1 else "")
                found.append(
                    {
                        "target": f"{path}: search p95 at {_label(big)} <= {LIMIT:g}x p95 at "
                        f"10k events, {clients}",
                        "value": f"{ratio:.2f}x",
                        "limit": f"{LIMIT:g}x",
                        "met": ratio <= LIMIT,
                    }
                )
    return found


def _label(size: dict[str, Any]) -> str:
    users = f"{size['users']:,} users" if size["users"] > 1 else "one user"
    return f"{size['events']:,} events, {users}"


def write_markdown(results: dict[str, Any], path: Path) -> Path:
    sizes = results["sizes"]
    parts = [_header(results), report.targets_table(results["targets"])]
    parts += [_datasets(sizes), _latency(sizes), _kinds(sizes), _ingest(results["ingest"])]
    return report.write_with_analysis(path, SECTION, parts, ANALYSIS)


def _header(results: dict[str, Any]) -> str:
    s = results["settings"]
    return "\n".join(
        [
            "## Event search (embedded index)",
            "",
            "Generated by `bench/search.py` (`--write-docs`); only its Analysis block is "
            "hand-written and kept across runs.",
            "",
            f"- Date: {results['date']} (run took {results['duration_s']} s)",
            report.machine_line(results["machine"]),
            f"- Command: `{results['command']}`",
            "- Datasets: " + "; ".join(_label(d) for d in results["sizes"]) + ". Synthetic "
            "digests of 10-30 words from a 20,000-word vocabulary drawn Zipf-like (s = 1.1), "
            "3 keywords, 0-2 of 30 projects, 5 services, 3 source types, timestamps over two "
            "years; fixed seeds.",
            f"- Queries: {s['queries']} per dataset, fixed seed, each for a random user of the "
            "dataset, `top_k` 10: 60 % text (2-4 words drawn the same way, so common words "
            "are common), 20 % text and one filter (service, project or a 60-day range), "
            "10 % no text (newest first), 10 % no text and a filter. Index, 1 client: the "
            f"queries once each, in order, stopped at {s['pass_cap']} s (the other runs then "
            f"use only the queries this pass ran). Otherwise up to {s['requests']} searches "
            "per path and "
            f"level, stopped at {s['time_cap']} s (searches under way finish and count). "
            "Page cache warm (index files read first).",
            "- **index**: `SqliteSearchIndex.search` in-process, client threads with a SQLite "
            "connection each (the index alone). **http**: `POST .../events:search` through "
            "one `python -m memnet serve` whose data directory is the dataset (index, then "
            "one blob read per hit, JSON over HTTP); the blobs written are exactly the "
            "events the query set returns, and a reply counts as an error unless it returns "
            "the events the index returned in-process. Clients and server share the 2 CPUs.",
        ]
    )


def _datasets(sizes: list[dict[str, Any]]) -> str:
    head = [
        "Dataset",
        "Events",
        "Users",
        "Bulk index events/s",
        "Built",
        "DB MiB",
        "WAL MiB",
        "Total MiB",
        "Bytes/event",
    ]
    rows = [
        [
            s["name"],
            f"{s['events']:,}",
            f"{s['users']:,}",
            f"{s['build']['events_per_s']:,}",
            s["build"]["date"][:16] + (" (cached)" if s["build"]["cached"] else ""),
            _mib(s["size"]["db"]),
            _mib(s["size"]["wal"]),
            _mib(s["size"]["total"]),
            f"{s['size']['bytes_per_event']:,}",
        ]
        for s in sizes
    ]
    note = (
        "Bulk index: `SqliteSearchIndex.upsert` in batches of 200 events (one reindex "
        "job's batch, `memnet.events.JOB_BATCH`), users interleaved as events arrive, "
        "measured when the dataset was built (a cached dataset keeps its build's figure and "
        "date; `--rebuild` measures again). Size: the SQLite file, its WAL and shared "
        "memory index (`-shm`) after the build (WAL checkpointed) and this run's searches."
    )
    return "\n".join(
        ["### Datasets, bulk indexing, index size on disk", "", report.table(head, rows), "", note]
    )


def _mib(size: int) -> str:
    return f"{size / 2**20:,.1f}"


def _latency(sizes: list[dict[str, Any]]) -> str:
    head = [
        "Dataset",
        "Clients",
        "index n (err)",
        "p50",
        "p95",
        "p99",
        "searches/s",
        "http n (err)",
        "p50",
        "p95",
        "p99",
        "req/s",
    ]
    rows = []
    for s in sizes:
        for i, run in enumerate(s["index"]):
            http = s["http"][i] if i < len(s["http"]) else None
            cells = [
                s["name"],
                run["clients"],
                _n(run),
                *report.ms_cells(run),
                run["throughput_rps"],
            ]
            cells += (
                [_n(http), *report.ms_cells(http), http["throughput_rps"]] if http else ["-"] * 5
            )
            rows.append(cells)
    return "\n".join(["### Search latency (ms)", "", report.table(head, rows)])


def _kinds(sizes: list[dict[str, Any]]) -> str:
    head = ["Dataset", *(f"{k} p50 / p95" for k in KINDS), "Rows a text query matches"]
    rows = [
        [s["name"], *(_pair(s["kinds"][k]) for k in KINDS), f"{s['matched_rows']:,}"] for s in sizes
    ]
    note = (
        "Rows a text query matches: the mean number of the user's events holding any of "
        "the query's words, which FTS5 scores one by one (counted with `count(*)` on the "
        "same MATCH)."
    )
    title = "### By query kind (index, 1 client, ms)"
    return "\n".join([title, "", report.table(head, rows), "", note])


def _pair(stats: dict[str, Any]) -> str:
    return "-" if not stats["count"] else f"{stats['p50_ms']:.2f} / {stats['p95_ms']:.2f}"


def _ingest(runs: list[dict[str, Any]]) -> str:
    if not runs:
        return "### Ingest over HTTP\n\nNot run (`--ingest 0`)."
    head = ["Clients", "Events n (err)", "p50", "p95", "p99", "events/s"]
    rows = [[r["clients"], _n(r), *report.ms_cells(r), r["throughput_rps"]] for r in runs]
    note = (
        "`POST .../events` (one event per request: idempotency claim, blob create, inline "
        "index upsert of one event, idempotency completion) on a fresh server with an empty "
        "data directory, so the index starts empty; errors: any reply but 201 with "
        "`indexed: true`. Compare the bulk figure above, which is the index alone."
    )
    return "\n".join(["### Ingest over HTTP (end to end)", "", report.table(head, rows), "", note])


def _n(stats: dict[str, Any]) -> str:
    capped = " capped" if stats.get("capped") else ""
    return f"{stats['count']}{capped} ({stats.get('errors', 0)})"


# -- main -------------------------------------------------------------------------------


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
