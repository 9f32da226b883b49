"""Looking back (issue 27): ``GET {document}?as_of=`` and ``:diff`` against a real
``memnet serve`` on the embedded (local files) backend, over HTTP on the local host.

    .venv/bin/python -m bench.history [--changes 1000] [--requests 1000]
                                      [--checkpoint-every 16[,4,64...]] [--write-docs]

One document (12 distinct preferences, ~1 KB) is written ``--changes`` times (a create, then
PATCHes replacing one preference each). Then, with one client: a plain GET; the first
``as_of`` on an empty version cache, twice (the first version: the index built from the
audit chain; the newest: that and a fold of every change, writing a checkpoint every
``CHECKPOINT_EVERY`` changes); then ``as_of`` of random versions with the cache built
(warm), and ``:diff`` of random pairs. Throughput of GET and warm ``as_of`` with four
clients. Target: warm ``as_of`` p95 within 5x the plain GET's p95.

``--checkpoint-every`` runs the whole measurement once per value, the server's
:data:`memnet.services.documents.versions.CHECKPOINT_EVERY` set to it (this module's
``serve`` command sets it, then runs ``memnet serve``). Raw JSON goes to bench/results/;
``--write-docs`` rewrites the "Looking back" section of docs/performance.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.harness import (
    REPO,
    Client,
    Server,
    create,
    doc_url,
    machine,
    patch,
    run_load,
    start_server,
    summarize,
    summarize_run,
    time_calls,
)

RESULTS = REPO / "bench" / "results"
ITEMS = 12  # preferences in the document (the profile compacts past 12)
ENV = "BENCH_CHECKPOINT_EVERY"
TARGET_RATIO = 5.0
SECTION, ANALYSIS = "history", "history-analysis"


def text(n: int) -> str:
    """A distinct preference (no two alike: compaction would merge near-duplicates)."""
    return f"{n} {hashlib.sha256(str(n).encode()).hexdigest()}"


def write_document(client: Client, url: str, changes: int) -> list[str]:
    """Create the document and change it until it has ``changes`` versions; their ids,
    oldest first, from its history (the server's compaction worker may write too: a 412
    reads the latest ETag and sends the change again)."""
    ops = [
        {"op": "add", "path": "/content/preferences/-", "value": {"text": text(-1 - n)}}
        for n in range(ITEMS)
    ]
    etag = create(client, url, ops)
    for i in range(changes - 1):
        op = {"op": "replace", "path": f"/content/preferences/{i % ITEMS}/text", "value": text(i)}
        reply = patch(client, url, [op], etag)
        if reply.status == 412:
            reply = patch(client, url, [op], client.request("GET", url).etag)
        if reply.status != 200 or reply.etag is None:
            raise RuntimeError(f"patch {i}: {reply.status} {reply.body[:300]!r}")
        etag = reply.etag
    ids: list[str] = []
    before = ""
    while True:
        page = client.request("GET", f"{url}:history?limit=1000{before}").json()
        ids += [change["change_id"] for change in page["changes"]]
        if page["next_before"] is None:
            return ids[::-1]
        before = f"&before={page['next_before']}"


def interleaved(calls: dict[str, Callable[[], bool]], count: int) -> dict[str, Any]:
    """Each call's latency, the calls taking turns ``count`` times (so that a noisy
    neighbour on a shared machine slows them alike), after a few untimed rounds."""
    for _ in range(5):
        for call in calls.values():
            call()
    latencies: dict[str, list[float]] = {name: [] for name in calls}
    started = time.perf_counter()
    for _ in range(count):
        for name, call in calls.items():
            begun = time.perf_counter()
            if not call():
                raise RuntimeError(f"{name} failed")
            latencies[name].append((time.perf_counter() - begun) * 1000)
    elapsed = time.perf_counter() - started
    return {name: summarize(found, elapsed) for name, found in latencies.items()}


def cache_size(server: Server) -> dict[str, int]:
    files = [
        p for p in (server.workdir / "data").rglob("*") if p.is_file() and "/versions/" in str(p)
    ]
    return {"files": len(files), "bytes": sum(p.stat().st_size for p in files)}


def ok(reply: Any) -> bool:
    return bool(reply.status == 200)


def measure(checkpoint_every: int, args: argparse.Namespace) -> dict[str, Any]:
    server = start_server({ENV: str(checkpoint_every)}, module="bench.history")
    try:
        client, url = Client(server.port), doc_url(f"history-{checkpoint_every}")
        ids = write_document(client, url, args.changes)
        picks = random.Random(27)

        def as_of(change_id: str) -> bool:
            return ok(client.request("GET", f"{url}?as_of={change_id}"))

        cold = {}
        for name, change_id in (("index_only", ids[0]), ("index_and_full_fold", ids[-1])):
            timed = time_calls(lambda _, c=change_id: as_of(c), 1, warmup=0)
            cold[name] = timed["p50_ms"]
        result: dict[str, Any] = {
            "checkpoint_every": checkpoint_every,
            "changes": len(ids),
            "cold_ms": cold,
            "cache": cache_size(server),
            **interleaved(
                {
                    "get": lambda: ok(client.request("GET", url)),
                    "as_of": lambda: as_of(picks.choice(ids)),
                    "diff": lambda: ok(
                        client.request(
                            "GET", f"{url}:diff?from={picks.choice(ids)}&to={picks.choice(ids)}"
                        )
                    ),
                },
                args.requests,
            ),
        }

        def reader(kind: str) -> Any:
            def make(index: int) -> Any:
                mine, rng = Client(server.port), random.Random(index)
                if kind == "get":
                    return lambda: ok(mine.request("GET", url))
                return lambda: ok(mine.request("GET", f"{url}?as_of={rng.choice(ids)}"))

            return make

        result["throughput"] = {
            kind: summarize_run(run_load(4, args.requests * 2, args.time_cap, reader(kind)))
            for kind in ("get", "as_of")
        }
        result["ratio_p95"] = round(result["as_of"]["p95_ms"] / result["get"]["p95_ms"], 2)
        result["met"] = result["ratio_p95"] <= TARGET_RATIO
        return result
    finally:
        server.stop()


def markdown(results: dict[str, Any]) -> list[str]:
    runs = results["runs"]
    head = [
        "## Looking back: as_of and diff (issue 27)",
        f"- Date: {results['date']}; command: `{results['command']}`",
        report.machine_line(results["machine"]),
        f"- One document of {runs[0]['changes']} changes (~1 KB, {ITEMS} preferences), "
        "embedded local-files backend (fsync on), `memnet serve` over HTTP on 127.0.0.1; "
        "latencies with one client, the three requests taking turns (a noisy neighbour "
        "slows them alike); throughput with four.",
    ]
    rows = []
    for run in runs:
        for name in ("get", "as_of", "diff"):
            label = {"get": "plain GET", "as_of": "as_of (warm)", "diff": ":diff (warm)"}[name]
            rows.append([run["checkpoint_every"], label, *report.ms_cells(run[name])])
    latency = report.table(["CHECKPOINT_EVERY", "request", "p50 ms", "p95 ms", "p99 ms"], rows, 2)
    others = report.table(
        [
            "CHECKPOINT_EVERY",
            "cold: index only (ms)",
            "cold: index + full fold (ms)",
            "cache files / KiB",
            "GET rps (4 clients)",
            "as_of rps (4 clients)",
            "as_of p95 / GET p95",
        ],
        [
            [
                r["checkpoint_every"],
                f"{r['cold_ms']['index_only']:.1f}",
                f"{r['cold_ms']['index_and_full_fold']:.1f}",
                f"{r['cache']['files']} / {r['cache']['bytes'] / 1024:.0f}",
                r["throughput"]["get"]["throughput_rps"],
                r["throughput"]["as_of"]["throughput_rps"],
                f"{r['ratio_p95']}x ({'met' if r['met'] else 'MISSED'}; target {TARGET_RATIO}x)",
            ]
            for r in runs
        ],
    )
    return ["\n".join(head), latency, others]


def serve(argv: list[str]) -> int:
    """``memnet serve`` with the version cache's checkpoint interval from the environment."""
    from memnet.cli import main as memnet_main
    from memnet.services.documents import versions

    versions.CHECKPOINT_EVERY = int(os.environ.get(ENV, versions.CHECKPOINT_EVERY))
    return memnet_main(argv)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.history",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=1000, help="per measurement")
    parser.add_argument("--time-cap", type=float, default=10.0, help="seconds per load run")
    parser.add_argument("--checkpoint-every", default="16", help="comma-separated values")
    parser.add_argument("--write-docs", action="store_true", help="write docs/performance.md")
    args = parser.parse_args(argv)
    started = datetime.now(UTC)
    runs = []
    for every in (int(v) for v in args.checkpoint_every.split(",")):
        run = measure(every, args)
        print(json.dumps({k: run[k] for k in ("checkpoint_every", "cold_ms", "ratio_p95")}))
        runs.append(run)
    results = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python -m bench.history", *(argv or sys.argv[1:])]),
        "runs": runs,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"history-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    if args.write_docs:
        path = Path(REPO / "docs" / "performance.md")
        print(f"wrote {report.write_with_analysis(path, SECTION, markdown(results), ANALYSIS)}")
    return 0


if __name__ == "__main__":
    sys.exit(serve(sys.argv[1:]) if sys.argv[1:2] == ["serve"] else main())
