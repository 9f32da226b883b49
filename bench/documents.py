"""Document workloads against a real ``memnet serve``, per storage backend.

    .venv/bin/python -m bench.documents [--backend local|azurite|all] [--requests N]
                                        [--write-docs] [--quota-overhead]
                                        [--telemetry-overhead]

Measures /v1/health (baseline), GET and PATCH of distinct documents at 1, 8 and 32
clients, a hot document patched by many writers (verified afterwards), the raw
BlobStore calls in-process and, for the local store, the same calls as bare durable
system calls (write, fsync, rename, directory fsync); checks the targets (PATCH p50 at
1 client within 2x the sum of its raw durable calls, issue 9); keeps raw JSON in
bench/results/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from bench import report
from bench.harness import (
    REPO,
    Client,
    Op,
    create,
    doc_url,
    free_port,
    machine,
    patch,
    run_load,
    start_server,
    summarize,
    summarize_run,
)
from bench.storage import (
    creation_cost,
    durable_latency,
    durable_target,
    open_backend,
    raw_latency,
    storage_calls,
    storage_ratio,
)

CONCURRENCY = (1, 8, 32)
DOCS = 64
PADDING = "p" * 100  # six of these make a ~1 KB document
RESULTS = REPO / "bench" / "results"


def seed_ops(tag: str) -> list[dict[str, Any]]:
    return [
        {"op": "add", "path": "/content/preferences/-", "value": {"text": f"{tag}-{i}-{PADDING}"}}
        for i in range(6)
    ]


# -- workloads over HTTP -------------------------------------------------------------------


def health_op(port: int) -> Callable[[int], Op]:
    def make(_: int) -> Op:
        client = Client(port, key=None)
        return lambda: client.request("GET", "/v1/health").status == 200

    return make


def get_op(port: int, urls: list[str]) -> Callable[[int], Op]:
    """Client ``i`` starts at document ``i`` and walks the list, so reads are spread."""

    def make(index: int) -> Op:
        client, turn = Client(port), [index]

        def op() -> bool:
            turn[0] += 1
            return client.request("GET", urls[turn[0] % len(urls)]).status == 200

        return op

    return make


def patch_op(port: int, docs: list[tuple[str, str]]) -> Callable[[int], Op]:
    """Client ``i`` patches only document ``i``, always with the ETag it got last."""

    def make(index: int) -> Op:
        client = Client(port)
        url, etag = docs[index]
        state = {"etag": etag, "n": 0}

        def op() -> bool:
            state["n"] += 1
            value = f"c{index}-{state['n']}-{PADDING}"
            ops = [{"op": "replace", "path": "/content/preferences/0", "value": {"text": value}}]
            reply = patch(client, url, ops, state["etag"])
            if reply.status == 200 and reply.etag:
                state["etag"] = reply.etag
            return reply.status == 200

        return op

    return make


def http_workloads(port: int, requests: int, cap: float) -> dict[str, list[dict[str, Any]]]:
    setup = Client(port)
    urls = [doc_url(f"get-{i}") for i in range(DOCS)]
    for i, url in enumerate(urls):
        create(setup, url, seed_ops(f"g{i}"))
    out: dict[str, list[dict[str, Any]]] = {"health": [], "get": [], "patch": []}
    for clients in CONCURRENCY:
        docs = [(doc_url(f"patch-c{clients}-{i}"), "") for i in range(clients)]
        docs = [(url, create(setup, url, seed_ops(f"p{i}"))) for url, _ in docs]
        loads = {
            "health": health_op(port),
            "get": get_op(port, urls),
            "patch": patch_op(port, docs),
        }
        for name, make in loads.items():
            stats = summarize_run(run_load(clients, requests, cap, make))
            out[name].append({"clients": clients, **stats})
            print(f"  {name:6} c={clients:<2} " + report.brief(stats), flush=True)
    return out


# -- overhead of a feature: quotas (issue 12), telemetry (issue 13) ---------------------------

QUOTA_ENV = {  # high enough never to refuse: what is measured is the metering itself
    "MEMNET_QUOTA_USER_REQUESTS": "1000000",
    "MEMNET_QUOTA_USER_WRITES": "1000000",
    "MEMNET_QUOTA_SERVICE_REQUESTS": "1000000",
    "MEMNET_QUOTA_SERVICE_WRITES": "1000000",
}
TELEMETRY_ENV = {  # SDK providers, OTLP/HTTP to a local sink (bench/otlp_sink.py)
    "MEMNET_TELEMETRY": "otlp",
    "OTEL_METRIC_EXPORT_INTERVAL": "1000",  # export every second while the load runs
    "OTEL_BSP_SCHEDULE_DELAY": "1000",
}


def quota_overhead(name: str, requests: int, cap: float, rounds: int = 3) -> dict[str, Any]:
    return overhead("quota", QUOTA_ENV, name, requests, cap, rounds)


def telemetry_overhead(name: str, requests: int, cap: float, rounds: int = 3) -> dict[str, Any]:
    """Telemetry on: every span and metric exported, each second, over OTLP/HTTP to a
    sink in another process (exports run on the server's background threads)."""
    port = free_port()
    sink = subprocess.Popen([sys.executable, "-m", "bench.otlp_sink", str(port)], cwd=REPO)
    env = {**TELEMETRY_ENV, "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}"}
    try:
        return overhead("telemetry", env, name, requests, cap, rounds)
    finally:
        sink.terminate()
        sink.wait()


def overhead(
    feature: str, env: dict[str, str], name: str, requests: int, cap: float, rounds: int = 3
) -> dict[str, Any]:
    """GET and PATCH at 1 and 8 clients with ``feature`` off and on (``env``), alternating
    servers ``rounds`` times so that drift on a shared machine hits both alike; the best
    round of each (lowest p50) is kept."""
    runs: dict[str, dict[str, list[dict[str, Any]]]] = {"off": {}, "on": {}}
    with open_backend(name) as backend:
        for _ in range(rounds):
            for mode in ("off", "on"):
                extra = env if mode == "on" else {}
                server = start_server({**backend.server_env, **extra})
                try:
                    for load, stats in overhead_round(server.port, requests, cap).items():
                        runs[mode].setdefault(load, []).append(stats)
                finally:
                    server.stop()
    best = {
        mode: {load: min(r, key=lambda s: s["p50_ms"]) for load, r in loads.items()}
        for mode, loads in runs.items()
    }
    ratios = {
        load: round(best["on"][load]["p50_ms"] / best["off"][load]["p50_ms"], 3)
        for load in best["off"]
    }
    for load in best["off"]:
        off, on = best["off"][load], best["on"][load]
        print(f"  {feature} {load:9} off {report.brief(off)}", flush=True)
        print(f"  {feature} {load:9} on  {report.brief(on)}  p50 ratio {ratios[load]}", flush=True)
    return {"backend": name, "settings": env, "best": best, "p50_ratio": ratios}


def overhead_round(port: int, requests: int, cap: float) -> dict[str, dict[str, Any]]:
    setup = Client(port)
    urls = [doc_url(f"q-get-{i}") for i in range(DOCS)]
    for i, url in enumerate(urls):
        create(setup, url, seed_ops(f"q{i}"))
    out = {}
    for clients in (1, 8):
        docs = [(doc_url(f"q-patch-c{clients}-{i}"), "") for i in range(clients)]
        docs = [(url, create(setup, url, seed_ops(f"p{i}"))) for url, _ in docs]
        for load, make in (("get", get_op(port, urls)), ("patch", patch_op(port, docs))):
            out[f"{load}_c{clients}"] = summarize_run(run_load(clients, requests, cap, make))
    return out


# -- the hot document ----------------------------------------------------------------------


@dataclass
class Writer:
    """What one hot-document writer saw: its landed items and ETags, and its attempts."""

    landed: list[tuple[str, str]]
    latencies_ms: list[float]
    attempts: int = 0
    conflicts: int = 0
    errors: int = 0


def write_until_landed(
    client: Client, url: str, item: str, etag: str, me: Writer, deadline: float, rebase: bool
) -> str:
    """PATCH one item with If-Match; on 412 take the latest ETag and try again. With
    ``rebase`` the server moves a stale If-Match to the latest version itself."""
    ops = [{"op": "add", "path": "/content/recent_notes/-", "value": {"note": item}}]
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        me.attempts += 1
        reply = patch(client, url, ops, etag, rebase)
        if reply.status == 200 and reply.etag:
            me.landed.append((item, reply.etag))
            me.latencies_ms.append((time.perf_counter() - started) * 1000)
            return reply.etag
        if reply.status == 412:
            me.conflicts += 1
            latest = (reply.json() or {}).get("error", {}).get("details", {}).get("latest_etag")
        else:
            me.errors += 1
            latest = None
        etag = latest or client.request("GET", url).etag or etag
    return etag


def hot_round(
    port: int, writers: int, total: int, cap: float, rebase: bool = False
) -> dict[str, Any]:
    url = doc_url(f"hot-w{writers}{'-rebase' if rebase else ''}", "projects", "hot.json")
    create(Client(port), url, [{"op": "replace", "path": "/content/summary", "value": "hot"}])
    quotas = [total // writers + (i < total % writers) for i in range(writers)]
    seen = [Writer([], []) for _ in range(writers)]
    ready = threading.Barrier(writers + 1)
    deadline = time.perf_counter() + cap

    def run(index: int) -> None:
        client = Client(port)
        etag = client.request("GET", url).etag or ""
        ready.wait()
        for n in range(quotas[index]):
            item = f"w{index}-{n}"
            etag = write_until_landed(client, url, item, etag, seen[index], deadline, rebase)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(writers)]
    for thread in threads:
        thread.start()
    ready.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    landed = [pair for w in seen for pair in w.landed]
    stats = summarize([ms for w in seen for ms in w.latencies_ms], elapsed)
    counts = {
        "writers": writers,
        "rebase": rebase,
        "planned": total,
        "successes": len(landed),
        "attempts": sum(w.attempts for w in seen),
        "conflicts_412": sum(w.conflicts for w in seen),
        "errors": sum(w.errors for w in seen),
    }
    return {**counts, **stats, **verify_hot(Client(port), url, landed)}


def verify_hot(client: Client, url: str, landed: list[tuple[str, str]]) -> dict[str, Any]:
    """One item per successful write, and exactly one winning writer per ETag. The
    document's compaction rule (``/recent_notes`` over 30 items) may run during a round:
    its changes (actor ``memnet-compaction``) move the oldest notes out, so the notes
    kept plus those it removed must be the writes that landed."""
    items = client.request("GET", url).json()["document"]["content"]["recent_notes"]
    notes = [item["note"] for item in items]
    history = client.request("GET", f"{url}:history?limit=1000").json()
    patches = [c for c in history["changes"] if c["operation"] == "patch"]
    compacted = [c for c in patches if c["actor"] == "memnet-compaction"]
    changes = [c for c in patches if c["actor"] != "memnet-compaction"]
    removed = sum(op["op"] == "remove" for c in compacted for op in c["ops"])
    pre_etags = [c["pre_etag"] for c in changes]
    won = {etag for _, etag in landed}
    written = {item for item, _ in landed}
    checks = {
        "items_match_successes": set(notes) <= written and len(notes) + removed == len(landed),
        "no_duplicate_items": len(set(notes)) == len(notes),
        "changes_equal_successes": len(changes) == len(landed),
        "one_writer_per_etag": len(set(pre_etags)) == len(pre_etags) == len(landed),
        "winning_etags_distinct": len(won) == len(landed),
        "winning_etags_in_history": won == {c["post_etag"] for c in changes},
        "history_complete": history.get("next_before") is None,
    }
    return {
        "items": len(notes),
        "compacted_away": removed,
        "distinct_pre_etags": len(set(pre_etags)),
        "checks": checks,
        "verified": all(checks.values()),
    }


# -- per backend, main ------------------------------------------------------------------


def bench_backend(name: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"[{name}]", flush=True)
    with open_backend(name) as backend:
        server = start_server(backend.server_env)
        try:
            result: dict[str, Any] = {"backend": name}
            if name == "local":
                result["file_creation"] = creation_cost(server.workdir / "creation-probe")
                print("  create (empty files) " + report.brief(result["file_creation"]), flush=True)
            if not args.hot_only:
                result.update(http_workloads(server.port, args.requests, args.time_cap))
            result["hot"] = [
                hot_round(server.port, w, args.hot_writes, args.time_cap) for w in CONCURRENCY
            ]
            result["hot_rebase"] = [
                hot_round(server.port, w, args.hot_writes, args.time_cap, rebase=True)
                for w in CONCURRENCY
            ]
            if not args.hot_only:
                # Before the server's files are deleted: that would slow write_create (see
                # creation_cost).
                result["raw"] = raw_latency(backend.raw_store, args.raw_calls)
                if name == "local":  # the same calls as bare syscalls, next to its data
                    result["raw_durable"] = durable_latency(server.workdir / "raw", args.raw_calls)
                result["storage_calls"] = storage_calls(backend.raw_store)
        finally:
            server.stop()
        for hot in result["hot"] + result["hot_rebase"]:
            kind = "rebase" if hot["rebase"] else "hot   "
            print(f"  {kind} w={hot['writers']:<2} " + report.brief(hot), flush=True)
    if args.hot_only:
        return result
    result["storage_ratio"] = storage_ratio(result)
    for kind, stats in result.get("raw_durable", {}).items():
        steps = stats.get("steps_p50_ms", "")
        print(f"  raw    {kind:<14} " + report.brief(stats) + f"  {steps}", flush=True)
    if "raw_durable" in result:
        result["durable_ratio"] = storage_ratio(result, "raw_durable")
        print(f"  PATCH vs raw durable calls: {result['durable_ratio']}", flush=True)
    return result


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.documents",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", choices=("local", "azurite", "all"), default="all")
    parser.add_argument("--requests", type=int, default=1000, help="per workload and level")
    parser.add_argument("--time-cap", type=float, default=10.0, help="seconds per workload")
    parser.add_argument("--hot-writes", type=int, default=48, help="per hot round (<= 59)")
    parser.add_argument("--raw-calls", type=int, default=300, help="per raw adapter call")
    parser.add_argument(
        "--hot-only", action="store_true", help="only the hot-document rounds (no docs update)"
    )
    parser.add_argument("--write-docs", action="store_true", help="write docs/performance.md")
    parser.add_argument(
        "--quota-overhead",
        action="store_true",
        help="only GET/PATCH with request quotas off and on (no docs update)",
    )
    parser.add_argument(
        "--telemetry-overhead",
        action="store_true",
        help="only GET/PATCH with telemetry off and on (OTLP to a local sink; no docs update)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.hot_only and args.write_docs:
        print("--hot-only measures too little to write docs/performance.md", file=sys.stderr)
        return 2
    names = ["local", "azurite"] if args.backend == "all" else [args.backend]
    started = datetime.now(UTC)
    if args.quota_overhead:
        return overhead_main("quota", quota_overhead, args, names, started)
    if args.telemetry_overhead:
        return overhead_main("telemetry", telemetry_overhead, args, names, started)
    results: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python -m bench.documents", *(argv or sys.argv[1:])]),
        "settings": {k: v for k, v in vars(args).items() if k != "write_docs"},
        "backends": [bench_backend(name, args) for name in names],
    }
    if args.hot_only:
        results["targets"] = report.hot_targets(results["backends"])
    else:
        results["targets"] = report.targets(results["backends"]) + [
            durable_target(b) for b in results["backends"] if "durable_ratio" in b
        ]
    results["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    print(report.targets_text(results["targets"]))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"documents-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    if args.write_docs:
        print(f"wrote {report.write_markdown(results, REPO / 'docs' / 'performance.md')}")
    return 0


def overhead_main(
    feature: str,
    measure: Callable[[str, int, float], dict[str, Any]],
    args: argparse.Namespace,
    names: list[str],
    started: datetime,
) -> int:
    results = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": f".venv/bin/python -m bench.documents --{feature}-overhead "
        + f"--backend {args.backend} --requests {args.requests}",
        f"{feature}_overhead": [measure(n, args.requests, args.time_cap) for n in names],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    plural = {"quota": "quotas"}.get(feature, feature)
    out = RESULTS / f"{plural}-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
