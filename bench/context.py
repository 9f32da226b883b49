"""Context assembly against a real ``memnet serve``, per storage backend.

    .venv/bin/python -m bench.context [--backend local|azurite|all] [--requests N]
                                      [--write-docs]

For users with 10, 100 and 1,000 projects (profile ``bench/profiles/bench-context-v1``,
a separate routing document), measures ``POST .../context:assemble`` with a fixed mix of
hints and, on the same server and user, a single document GET, at 1 and 8 clients;
checks that routing picks the expected project; counts storage calls per assembly and
profiles assembly in-process (cProfile); keeps raw JSON in bench/results/.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from bench import context_inproc, context_report
from bench.context_data import ADMIN_KEY, MIX, World, seed, world
from bench.context_inproc import PROFILES, assemble_body, assemble_url
from bench.documents import get_op
from bench.harness import (
    REPO,
    Client,
    Op,
    doc_url,
    machine,
    run_load,
    start_server,
    summarize_run,
    time_calls,
)
from bench.report import brief
from bench.storage import open_backend

SIZES = (10, 100, 1000)
CONCURRENCY = (1, 8)
RESULTS = REPO / "bench" / "results"


def assemble_op(port: int, user: str, hints: list[dict[str, Any]]) -> Callable[[int], Op]:
    """Client ``i`` starts at hint ``5 * i`` and walks the list (the mix in every window)."""
    url = assemble_url(user)

    def make(index: int) -> Op:
        client, turn = Client(port), [5 * index]

        def op() -> bool:
            turn[0] += 1
            body = assemble_body(hints[turn[0] % len(hints)])
            return client.request("POST", url, body).status == 200

        return op

    return make


def check_routing(port: int, user: str, made: World) -> dict[str, Any]:
    """Each hint once: does assembly select the project the hint was made for?"""
    client, wrong = Client(port), []
    for hint in made.hints:
        reply = client.request("POST", assemble_url(user), assemble_body(hint))
        got = reply.json().get("selected_project_id") if reply.status == 200 else reply.status
        if got != hint["expected"]:
            wrong.append({"kind": hint["kind"], "expected": hint["expected"], "got": got})
    return {"hints": len(made.hints), "as_expected": len(made.hints) - len(wrong), "wrong": wrong}


def bench_size(port: int, projects: int, args: argparse.Namespace) -> dict[str, Any]:
    made, user = world(projects), f"ctx-n{projects}"
    created = seed(Client(port, key=ADMIN_KEY), user, made)
    result: dict[str, Any] = {"projects": projects, "documents": created}
    result["routing"] = check_routing(port, user, made)
    result["assemble"], result["get"] = [], []
    loads = {
        "assemble": assemble_op(port, user, made.hints),
        "get": get_op(port, [doc_url(user)]),
    }
    for clients in CONCURRENCY:
        for name, make in loads.items():
            stats = summarize_run(run_load(clients, args.requests, args.time_cap, make))
            result[name].append({"clients": clients, **stats})
            print(f"  n={projects:<5} {name:8} c={clients} " + brief(stats), flush=True)
    if projects == max(SIZES):
        result["by_kind"] = by_kind(port, user, made, args.kind_calls)
    return result


def by_kind(port: int, user: str, made: World, count: int) -> dict[str, Any]:
    """Assembly latency per hint kind, one client, ``count`` calls each."""
    client, url, out = Client(port), assemble_url(user), {}
    for kind in MIX:
        hints = [h for h in made.hints if h["kind"] == kind]

        def call(i: int, hints: list[dict[str, Any]] = hints) -> None:
            client.request("POST", url, assemble_body(hints[i % len(hints)]))

        out[kind] = time_calls(call, count)
    return out


def bench_backend(name: str, args: argparse.Namespace) -> dict[str, Any]:
    print(f"[{name}]", flush=True)
    with open_backend(name) as backend:
        server = start_server(backend.server_env, profiles_dir=PROFILES)
        try:
            sizes = [bench_size(server.port, n, args) for n in SIZES]
        finally:
            server.stop()
        reads = context_inproc.storage_reads(backend.raw_store, SIZES)
        profiled = context_inproc.profile(backend.raw_store, max(SIZES), args.profile_rounds)
    return {"backend": name, "sizes": sizes, "storage_reads": reads, "profile": profiled}


def check_profile() -> list[str]:
    """The bench profiles load (the same check the server makes at startup)."""
    from memnet.services.profiles.registry import load_registry

    return load_registry(PROFILES).profile_ids()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.context",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--backend", choices=("local", "azurite", "all"), default="all")
    parser.add_argument("--requests", type=int, default=500, help="per workload and level")
    parser.add_argument("--time-cap", type=float, default=8.0, help="seconds per workload")
    parser.add_argument("--kind-calls", type=int, default=100, help="per hint kind")
    parser.add_argument("--profile-rounds", type=int, default=3, help="passes over the hints")
    parser.add_argument("--write-docs", action="store_true", help="update docs/performance.md")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = ["local", "azurite"] if args.backend == "all" else [args.backend]
    started = datetime.now(UTC)
    results: dict[str, Any] = {
        "date": started.isoformat(timespec="seconds"),
        "machine": machine(),
        "command": " ".join([".venv/bin/python -m bench.context", *(argv or sys.argv[1:])]),
        "settings": {k: v for k, v in vars(args).items() if k != "write_docs"},
        "profiles": check_profile(),
        "mix": MIX,
        "backends": [bench_backend(name, args) for name in names],
    }
    results["targets"] = context_report.targets(results["backends"])
    results["duration_s"] = round((datetime.now(UTC) - started).total_seconds(), 1)
    print(context_report.console(results))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"context-{started:%Y%m%dT%H%M%SZ}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"raw results: {out.relative_to(REPO)}")
    if args.write_docs:
        print(f"wrote {context_report.write_markdown(results, REPO / 'docs' / 'performance.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
