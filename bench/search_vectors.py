"""Hybrid retrieval's cost on the embedded index (issue 16, item 5): event vectors beside
the lexical index: ingest rate, size on disk, and search latency lexical, dense and hybrid.

    .venv/bin/python -m bench.search_vectors [--only 10k,100k,1m] [--dir DIR]
                                             [--newest N] [--write-docs]

Datasets are :mod:`bench.search`'s (one user each), built or reused from its cache under
``--dir``. The cached index file is copied to a temporary directory first, so the lexical
dataset stays as it was; vectors go into the copy, which is deleted afterwards.

Vectors: synthetic, seeded (numpy), :data:`DIMENSIONS` floats, one per event (the newest
``--newest`` events of a dataset when it holds more), model :data:`MODEL`; stored with
``SqliteSearchIndex.put_vectors`` in batches of the worker's ``EMBED_BATCH`` (timed: the
generation of the vectors is not). Searches, 1 client, in-process, the same queries as
``bench.search``: lexical (``search``), dense (``nearest``, a random query vector), and
hybrid (both, then ``fuse`` with weight 0.5; the embedder's call is not part of it).
Raw JSON goes to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench import report
from bench.harness import REPO, machine, summarize
from bench.search import (
    DATASETS,
    RESULTS,
    TENANT,
    WARMUP,
    Dataset,
    Query,
    Words,
    build,
    index_path,
    queries,
    size_on_disk,
    warm,
)
from bench.search_report import KINDS
from memnet.adapters.local.search import MAX_VECTORS, SqliteSearchIndex
from memnet.ports import EventHit, IndexedEvent
from memnet.services.search.fusion import fuse
from memnet.services.search.vectors import EMBED_BATCH, embedding_text, text_hash

MODEL = "bench-random@384"
DIMENSIONS = 384  # all-MiniLM-L6-v2, bge-small-en-v1.5: small sentence-embedding models
WEIGHT = 0.7  # the service's default dense weight (MEMNET_SEARCH_DENSE_WEIGHT)
USER = "u0"  # the one user of each dataset
CHOICES = ("10k", "100k", "1m")
SECTION, ANALYSIS = "search-vectors", "search-vectors-analysis"
AFTER = "<!-- /search -->"  # the section goes right after "Event search (embedded index)"
SHARED_LOAD = 1.5  # a 1-minute load average above this: measured on a shared machine

Search = Callable[[Query, list[float]], list[EventHit]]


# -- vectors ---------------------------------------------------------------------------


def newest(path: Path, limit: int) -> list[tuple[str, str]]:
    """(event_id, text_hash) of the user's newest ``limit`` events, in arrival order (the
    order the worker would embed them in)."""
    db = sqlite3.connect(path)
    sql = """SELECT e.event_id, e.timestamp, e.service_id, e.source_type, e.digest,
        e.keywords FROM events e JOIN scopes s USING (scope_id)
        WHERE s.tenant_id = ? AND s.user_id = ? ORDER BY e.ts_us DESC, e.event_id DESC LIMIT ?"""
    rows = db.execute(sql, (TENANT, USER, limit)).fetchall()
    db.close()
    out = []
    for event_id, moment, service, source, digest, keywords in sorted(rows):
        entry = IndexedEvent(
            tenant_id=TENANT,
            user_id=USER,
            event_id=event_id,
            timestamp=moment,
            service_id=service,
            source_type=source,
            digest=digest,
            keywords=tuple(json.loads(keywords)),
        )
        out.append((event_id, text_hash(embedding_text(entry))))
    return out


def add_vectors(index: SqliteSearchIndex, wanted: list[tuple[str, str]]) -> dict[str, Any]:
    """``put_vectors`` in batches of ``EMBED_BATCH``; only the calls are timed."""
    rng, spent, stored, started = np.random.default_rng(16), 0.0, 0, time.perf_counter()
    for start in range(0, len(wanted), EMBED_BATCH):
        batch = wanted[start : start + EMBED_BATCH]
        vectors = rng.standard_normal((len(batch), DIMENSIONS), dtype=np.float32).tolist()
        rows = [(e, h, v) for (e, h), v in zip(batch, vectors, strict=True)]
        begun = time.perf_counter()
        stored += index.put_vectors(TENANT, USER, MODEL, rows)
        spent += time.perf_counter() - begun
    return {
        "vectors": stored,
        "batch": EMBED_BATCH,
        "put_s": round(spent, 1),
        "wall_s": round(time.perf_counter() - started, 1),
        "vectors_per_s": round(stored / spent),
    }


def checkpoint(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()


# -- searches --------------------------------------------------------------------------


def modes(index: SqliteSearchIndex) -> dict[str, Search]:
    """What a search costs: lexical alone, dense alone, and hybrid as the service does it
    (dense only when the text has a word, the lexical list alone otherwise)."""

    def lexical(q: Query, _: list[float]) -> list[EventHit]:
        return index.search(q.query)

    def dense(q: Query, vector: list[float]) -> list[EventHit]:
        return index.nearest(q.query, MODEL, vector)

    def hybrid(q: Query, vector: list[float]) -> list[EventHit]:
        found = index.search(q.query)
        if not q.query.text:
            return found
        return fuse(found, index.nearest(q.query, MODEL, vector), WEIGHT)[: q.query.top_k]

    return {"lexical": lexical, "dense": dense, "hybrid": hybrid}


def probes(count: int, seed: int) -> list[list[float]]:
    """Query vectors, as an embedder would answer (lists of floats)."""
    rng = np.random.default_rng(seed)
    vectors: list[list[float]] = rng.standard_normal((count, DIMENSIONS), dtype=np.float32).tolist()
    return vectors


def one_pass(search: Search, batch: list[Query], vectors: list[list[float]]) -> dict[str, Any]:
    """1 client: each query once, in order; overall and by kind of query."""
    timed: list[tuple[Query, float]] = []
    started = time.perf_counter()
    for q, vector in zip(batch, vectors, strict=True):
        begun = time.perf_counter()
        search(q, vector)
        timed.append((q, (time.perf_counter() - begun) * 1000))
    stats = summarize([ms for _, ms in timed], time.perf_counter() - started)
    groups = {kind: [ms for q, ms in timed if q.kind == kind] for kind in KINDS}
    groups["project"] = [ms for q, ms in timed if q.query.project_ids]
    kinds = {kind: summarize(values, 0.0) for kind, values in groups.items()}
    return {**stats, **kinds}


def measure(path: Path, data: Dataset, words: Words, count: int) -> dict[str, Any]:
    warm(path)
    index, batch = SqliteSearchIndex(path), queries(data, words, count)
    found = modes(index)
    warmup = queries(data, words, WARMUP, seed="warm-up")
    for search in found.values():  # a server that has been up: other queries first
        for q, vector in zip(warmup, probes(WARMUP, 2), strict=True):
            search(q, vector)
    vectors = probes(len(batch), 1)
    out = {}
    for name, search in found.items():
        out[name] = one_pass(search, batch, vectors)
        print(f"  {data.name:5} {name:8} " + report.brief(out[name]), flush=True)
    out["cold"] = cold(path, batch[0], vectors[0])
    print(f"  {data.name:5} first dense search of a user (block read): {out['cold']} ms")
    return out


def cold(path: Path, first: Query, vector: list[float], tries: int = 5) -> float:
    """A dense search that must read the user's vectors (a new index object: nothing
    cached, as after a change of the user's vectors), median of ``tries``, ms."""
    spent = []
    for _ in range(tries):
        index = SqliteSearchIndex(path)
        started = time.perf_counter()
        index.nearest(first.query, MODEL, vector)
        spent.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(spent), 2)


def bench_dataset(data: Dataset, words: Words, args: argparse.Namespace) -> dict[str, Any]:
    built = build(args.dir, data, words, rebuild=False)
    source = index_path(args.dir, data)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix=f"vectors-{data.name}-") as work:
        path = Path(work) / source.name
        for suffix in ("", "-wal"):
            if Path(f"{source}{suffix}").exists():
                shutil.copyfile(f"{source}{suffix}", f"{path}{suffix}")
        checkpoint(path)
        lexical_size = size_on_disk(path, data.events)
        wanted = newest(path, args.newest or data.events)
        load = [os.getloadavg()[0]]
        print(f"  {data.name:5} adding {len(wanted):,} vectors ...", flush=True)
        ingest = add_vectors(SqliteSearchIndex(path), wanted)
        print(f"  {data.name:5} {ingest['vectors_per_s']:,} vectors/s", flush=True)
        checkpoint(path)
        size = size_on_disk(path, data.events)
        load.append(os.getloadavg()[0])
        latency = measure(path, data, words, args.queries)
        load.append(os.getloadavg()[0])
    added = size["total"] - lexical_size["total"]
    return {
        "name": data.name,
        "events": data.events,
        "lexical_build": built,
        "ingest": ingest,
        "size_lexical": lexical_size,
        "size": size,
        "bytes_per_vector": round(added / max(1, ingest["vectors"])),
        "scored_at_most": min(MAX_VECTORS, ingest["vectors"]),
        "latency": latency,
        "load_1min": [round(x, 2) for x in load],
    }


# -- docs/performance.md ---------------------------------------------------------------


def write_markdown(results: dict[str, Any], path: Path) -> Path:
    text = path.read_text()
    if f"<!-- {SECTION} -->" not in text:  # first run: right after the lexical section
        head, tail = text.split(AFTER, 1)
        path.write_text(f"{head}{AFTER}\n\n<!-- {SECTION} -->\n<!-- /{SECTION} -->{tail}")
    kept = report.kept_block(path, ANALYSIS, report.NO_ANALYSIS)
    analysis = f"#### Analysis\n\n<!-- {ANALYSIS} -->\n{kept}\n<!-- /{ANALYSIS} -->"
    sizes = results["sizes"]
    parts = [_header(results), _storage(sizes), _latency(sizes), _kinds(sizes), analysis]
    return report.write_section(path, SECTION, "\n\n".join(parts))


def _header(results: dict[str, Any]) -> str:
    loads = "; ".join(
        f"{s['name']} {' / '.join(f'{x:.2f}' for x in s['load_1min'])}" for s in results["sizes"]
    )
    shared = any(x > SHARED_LOAD for s in results["sizes"] for x in s["load_1min"])
    where = (
        f"**shared machine** (above {SHARED_LOAD}: other work was running on the 2 CPUs)"
        if shared
        else "quiet machine"
    )
    vectors = "; ".join(f"{s['name']} {s['ingest']['vectors']:,}" for s in results["sizes"])
    return "\n".join(
        [
            "### Hybrid retrieval: vectors (issue 16)",
            "",
            "Generated by `bench/search_vectors.py` (`--write-docs`); only its Analysis block "
            "is hand-written and kept across runs.",
            "",
            f"- Date: {results['date']} (run took {results['duration_s']} s)",
            report.machine_line(results["machine"]),
            f"- Command: `{results['command']}`",
            f"- Load average (1 min) before ingest / before searches / after, per dataset: "
            f"{loads}: {where}.",
            "- Datasets: those of `bench/search.py` above (one user each), reused from its "
            "cache; the index file is copied and the vectors go into the copy. Vectors: "
            f"synthetic (seeded numpy, standard normal, stored unit-length), {DIMENSIONS} "
            "dimensions (the size of small sentence-embedding models such as "
            f"all-MiniLM-L6-v2 or bge-small), model `{MODEL}`, one per event for the user's "
            f"newest events by timestamp: {vectors}.",
            f"- Queries: the same {results['settings']['queries']} as `bench/search.py` "
            "(same seed, `top_k` 10), in-process, 1 client, each once in order, after 100 "
            "warm-up searches of other queries per mode, page cache warm. **lexical**: "
            "`SqliteSearchIndex.search`. **dense**: `SqliteSearchIndex.nearest` with a random "
            "query vector, on every query (its filters apply, its text is not used). "
            "**hybrid**: what the service does: `search`, then for a query with words "
            f"`nearest` and `fuse` (weight {WEIGHT}); the embedding of the query is not "
            "included (a model call: milliseconds locally, tens over the network). Random "
            "vectors make the dense scores meaningless: this is cost, not quality (see "
            "Event search quality). The service asks the index for 3 x `top_k` candidates; "
            "here every mode asks for 10.",
            f"- Dense search scores exactly (numpy) at most the user's newest {MAX_VECTORS:,} "
            "vectors that pass the filters (`MAX_VECTORS`): all of them at 10k, 20,000 at "
            "100k and 1M.",
        ]
    )


def _storage(sizes: list[dict[str, Any]]) -> str:
    head = [
        "Dataset",
        "Events",
        "Vectors",
        "put_vectors vectors/s",
        "MiB lexical",
        "MiB with vectors",
        "Bytes/event lexical",
        "Bytes/event with vectors",
        "Bytes/vector added",
    ]
    rows = [
        [
            s["name"],
            f"{s['events']:,}",
            f"{s['ingest']['vectors']:,}",
            f"{s['ingest']['vectors_per_s']:,}",
            f"{s['size_lexical']['total'] / 2**20:,.1f}",
            f"{s['size']['total'] / 2**20:,.1f}",
            f"{s['size_lexical']['bytes_per_event']:,}",
            f"{s['size']['bytes_per_event']:,}",
            f"{s['bytes_per_vector']:,}",
        ]
        for s in sizes
    ]
    note = (
        f"`SqliteSearchIndex.put_vectors` in batches of {EMBED_BATCH} (the worker's "
        "`EMBED_BATCH`), one transaction each, into the index already holding the events, "
        "in arrival order; only the calls are timed (unit-normalising, a lookup of the "
        "event and an `INSERT OR REPLACE` per vector), not the making of the vectors. "
        "Size: the SQLite file, WAL and `-shm`, WAL checkpointed, before and after."
    )
    return "\n".join(
        ["#### Vector ingest and size on disk", "", report.table(head, rows), "", note]
    )


def _latency(sizes: list[dict[str, Any]]) -> str:
    head = ["Dataset", "Vectors scored", "Mode", "n", "p50", "p95", "p99", "searches/s"]
    rows = [
        [
            s["name"],
            f"<= {s['scored_at_most']:,}",
            name,
            run["count"],
            *report.ms_cells(run),
            run["throughput_rps"],
        ]
        for s in sizes
        for name, run in s["latency"].items()
        if name != "cold"
    ]
    title = "#### Search latency with vectors (ms, in-process, 1 client)"
    cold = "; ".join(f"{s['name']} {s['latency']['cold']} ms" for s in sizes)
    note = (
        "Dense and hybrid reuse the user's vectors kept in memory (`VectorCache`) while "
        "they are unchanged. The first dense search of a user, or the first after the "
        f"user's vectors changed, reads them from the file (median of 5): {cold}."
    )
    return "\n".join([title, "", report.table(head, rows, right_from=3), "", note])


def _kinds(sizes: list[dict[str, Any]]) -> str:
    groups = (*KINDS, "project")
    head = ["Dataset", "Mode", *(f"{k} n, p50 / p95" for k in groups)]
    rows = [
        [s["name"], name, *(_cell(run[k]) for k in groups)]
        for s in sizes
        for name, run in s["latency"].items()
        if name != "cold"
    ]
    note = (
        "The same runs by query kind (60 % text, 20 % text and a filter, 10 % newest first, "
        "10 % newest first and a filter); **project**: the queries with a project filter, "
        "whatever their kind (an `event_tags` subquery in SQL). For newest-first queries "
        "hybrid is lexical alone (no words to embed), dense still runs."
    )
    title = "#### By query kind (ms, in-process, 1 client)"
    return "\n".join([title, "", report.table(head, rows, right_from=2), "", note])


def _cell(stats: dict[str, Any]) -> str:
    if not stats["count"]:
        return "-"
    return f"{stats['count']}, {stats['p50_ms']:.2f} / {stats['p95_ms']:.2f}"


# -- main ------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.search_vectors",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", default=",".join(CHOICES), help="datasets: 10k,100k,1m")
    parser.add_argument(
        "--dir", type=Path, default=Path("/tmp/memnet-bench-search"), help="dataset cache"
    )
    parser.add_argument(
        "--newest", type=int, default=0, help="vectors for at most this many events (0: all)"
    )
    parser.add_argument("--queries", type=int, default=200, help="distinct queries per dataset")
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = [d for d in DATASETS if d.name in CHOICES and d.name in args.only.split(",")]
    started, words = datetime.now(UTC), Words()
    args.dir.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python -m bench.search_vectors", *(argv or sys.argv[1:])]),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "sizes": [bench_dataset(d, words, args) for d in chosen],
    }
    results["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"search-vectors-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    if args.write_docs:
        print(f"wrote {write_markdown(results, REPO / 'docs' / 'performance.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
