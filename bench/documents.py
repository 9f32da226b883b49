"""Document workloads against a real ``python -m memnet serve``, per storage backend.

    .venv/bin/python -m bench.documents [--backend local|azurite|all] [--requests N]
                                        [--write-docs]

Measures /v1/health (baseline), GET and PATCH of distinct documents at 1, 8 and 32
clients, a hot document patched by many writers (verified afterwards), and the raw
BlobStore calls in-process; checks the targets; keeps raw JSON in bench/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.harness import (
    REPO,
    Client,
    Op,
    Reply,
    machine,
    run_load,
    start_server,
    summarize,
    summarize_run,
    time_calls,
)
from memnet.ports import BlobStore, Condition

CONCURRENCY = (1, 8, 32)
DOCS = 64
PADDING = "p" * 100  # six of these make a ~1 KB document
RESULTS = REPO / "bench" / "results"


def doc_url(user: str, namespace: str = "user", path: str = "user_dynamic.json") -> str:
    return f"/v1/tenants/bench/users/{user}/documents/{namespace}/{path}"


def patch(client: Client, url: str, ops: list[dict[str, Any]], etag: str | None) -> Reply:
    condition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    headers = {**condition, "Idempotency-Key": uuid.uuid4().hex}
    return client.request("PATCH", url, {"ops": ops}, headers)


def create(client: Client, url: str, ops: list[dict[str, Any]]) -> str:
    reply = patch(client, url, ops, None)
    if reply.status != 201 or reply.etag is None:
        raise RuntimeError(f"create {url}: {reply.status} {reply.body[:300]!r}")
    return reply.etag


def seed_ops(tag: str) -> list[dict[str, Any]]:
    return [{"op": "add", "path": "/content/preferences/-", "value": f"{tag}-{i}-{PADDING}"}
            for i in range(6)]


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
            ops = [{"op": "replace", "path": "/content/preferences/0", "value": value}]
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
        loads = {"health": health_op(port), "get": get_op(port, urls), "patch": patch_op(port, docs)}
        for name, make in loads.items():
            stats = summarize_run(run_load(clients, requests, cap, make))
            out[name].append({"clients": clients, **stats})
            print(f"  {name:6} c={clients:<2} " + report.brief(stats), flush=True)
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


def write_until_landed(client: Client, url: str, item: str, etag: str, me: Writer,
                       deadline: float) -> str:
    """PATCH one item with If-Match; on 412 take the latest ETag and try again."""
    ops = [{"op": "add", "path": "/content/recent_notes/-", "value": item}]
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        me.attempts += 1
        reply = patch(client, url, ops, etag)
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


def hot_round(port: int, writers: int, total: int, cap: float) -> dict[str, Any]:
    url = doc_url(f"hot-w{writers}", "projects", "hot.json")
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
            etag = write_until_landed(client, url, f"w{index}-{n}", etag, seen[index], deadline)

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
    counts = {"writers": writers, "planned": total, "successes": len(landed),
              "attempts": sum(w.attempts for w in seen),
              "conflicts_412": sum(w.conflicts for w in seen),
              "errors": sum(w.errors for w in seen)}
    return {**counts, **stats, **verify_hot(Client(port), url, landed)}


def verify_hot(client: Client, url: str, landed: list[tuple[str, str]]) -> dict[str, Any]:
    """One item per successful write, and exactly one winning writer per ETag."""
    notes = client.request("GET", url).json()["document"]["content"]["recent_notes"]
    history = client.request("GET", f"{url}:history?limit=1000").json()
    changes = [c for c in history["changes"] if c["operation"] == "patch"]
    pre_etags = [c["pre_etag"] for c in changes]
    won = {etag for _, etag in landed}
    checks = {
        "items_match_successes": sorted(notes) == sorted(item for item, _ in landed),
        "no_duplicate_items": len(set(notes)) == len(notes),
        "changes_equal_successes": len(changes) == len(landed),
        "one_writer_per_etag": len(set(pre_etags)) == len(pre_etags) == len(landed),
        "winning_etags_distinct": len(won) == len(landed),
        "winning_etags_in_history": won == {c["post_etag"] for c in changes},
        "history_complete": not history["truncated"],
    }
    return {"items": len(notes), "distinct_pre_etags": len(set(pre_etags)),
            "checks": checks, "verified": all(checks.values())}
