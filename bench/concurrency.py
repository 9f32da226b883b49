"""What one worker process sustains at 1, 4, 8, 16 and 32 requests at once: the measure
behind the Flex Consumption per-instance HTTP concurrency (docs/deploy.md,
"Per-instance concurrency"; docs/performance.md, "Per-instance concurrency").

    .venv/bin/python -m bench.concurrency [--backend local|azurite] [--requests N]
                                          [--server-cpu N] [--time-cap S] [--rounds R]

One ``memnet serve`` process, the same function code a Flex instance runs,
pinned to one CPU (a 2,048 MB instance has one core), while this process's client threads
(and Azurite, for ``azurite``) run on the others. At each level: GET and PATCH of distinct
documents (``bench.documents``' workloads), p50/p95/p99, throughput, and the server's CPU
time per request (from ``/proc/<pid>/stat``, so a saturated core shows as ~1.0 CPU-s/s).
Each level runs ``--rounds`` times on fresh servers and the round with the lowest p50 is
kept (on a shared machine, the one least disturbed); the load average at the start and
end is recorded. Raw JSON goes to ``bench/results/``; docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench import report
from bench.documents import DOCS, RESULTS, get_op, patch_op, seed_ops
from bench.harness import (
    Client,
    Op,
    create,
    doc_url,
    machine,
    run_load,
    start_server,
    summarize_run,
)
from bench.storage import open_backend

LEVELS = (1, 4, 8, 16, 32)
_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux ``/proc``)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def measured(pid: int, load: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``load()``'s statistics with the server's CPU seconds per request and per second."""
    cpu_before, started = cpu_seconds(pid), time.perf_counter()
    stats = load()
    cpu, wall = cpu_seconds(pid) - cpu_before, time.perf_counter() - started
    per_request = round(cpu * 1000 / max(stats["count"], 1), 3)
    return {
        **stats,
        "server_cpu_ms_per_request": per_request,
        "server_cpu_share": round(cpu / wall, 2),
    }


def sweep(port: int, pid: int, requests: int, cap: float) -> dict[str, list[dict[str, Any]]]:
    setup = Client(port)
    urls = [doc_url(f"cc-get-{i}") for i in range(DOCS)]
    for i, url in enumerate(urls):
        create(setup, url, seed_ops(f"g{i}"))
    out: dict[str, list[dict[str, Any]]] = {"get": [], "patch": []}
    for clients in LEVELS:
        docs = [(doc_url(f"cc-patch-c{clients}-{i}"), "") for i in range(clients)]
        docs = [(url, create(setup, url, seed_ops(f"p{i}"))) for url, _ in docs]
        loads: dict[str, Callable[[int], Op]] = {
            "get": get_op(port, urls),
            "patch": patch_op(port, docs),
        }
        for name, make in loads.items():

            def load(make: Callable[[int], Op] = make, clients: int = clients) -> dict[str, Any]:
                return summarize_run(run_load(clients, requests, cap, make))

            stats = {"clients": clients, **measured(pid, load)}
            out[name].append(stats)
            share = stats["server_cpu_share"]
            print(f"  {name:5} c={clients:<2} {report.brief(stats)} cpu {share}", flush=True)
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.concurrency", description=__doc__)
    parser.add_argument("--backend", choices=("local", "azurite"), default="local")
    parser.add_argument("--requests", type=int, default=1000, help="per workload and level")
    parser.add_argument("--time-cap", type=float, default=10.0, help="seconds per workload")
    parser.add_argument("--server-cpu", type=int, default=0, help="the CPU the server gets")
    parser.add_argument("--rounds", type=int, default=3, help="fresh servers; best round kept")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    others = set(os.sched_getaffinity(0)) - {args.server_cpu}
    if not others:
        print("needs two CPUs: one for the server, one for the clients", file=sys.stderr)
        return 2
    host = machine()  # before pinning: the machine's CPUs, not this process's
    os.sched_setaffinity(0, others)  # the clients, and Azurite started from here
    started, load_before = datetime.now(UTC), os.getloadavg()
    rounds = []
    with open_backend(args.backend) as backend:
        for _ in range(args.rounds):
            server = start_server(backend.server_env, cpus={args.server_cpu})
            try:
                rounds.append(sweep(server.port, server.process.pid, args.requests, args.time_cap))
            finally:
                server.stop()
    results = {
        "date": started.isoformat(timespec="seconds"),
        "machine": host,
        "command": " ".join([".venv/bin/python -m bench.concurrency", *(argv or sys.argv[1:])]),
        "server_cpus": [args.server_cpu],
        "client_cpus": sorted(others),
        "load_average_1m": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "backend": args.backend,
        "rounds": len(rounds),
        **best_of(rounds),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"concurrency-{args.backend}-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out}")
    return 0


def best_of(rounds: list[dict[str, list[dict[str, Any]]]]) -> dict[str, list[dict[str, Any]]]:
    """Per workload and level, the round with the lowest p50."""
    return {
        load: [
            min((r[load][i] for r in rounds), key=lambda stats: stats["p50_ms"])
            for i in range(len(LEVELS))
        ]
        for load in rounds[0]
    }


if __name__ == "__main__":
    sys.exit(main())
