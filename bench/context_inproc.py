"""Context assembly in-process, on a backend's raw store: the storage calls one assembly
makes (counted with :class:`bench.storage.CountingStore`) and a cProfile of assemblies.

Calls go straight to the function of ``function_app`` (``tests.clients.DirectClient``), in
this thread, so cProfile sees the whole request: parsing, auth, routing, reads, JSON."""

from __future__ import annotations

import contextlib
import cProfile
import pstats
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.context_data import ADMIN_KEY, PROFILE_ID, World, seed, world
from bench.harness import AGENT_KEY, REPO, profiles_env
from bench.storage import CountingStore
from memnet.ports import BlobStore

PROFILES = REPO / "bench" / "profiles"
TOP = 12


def assemble_url(user: str) -> str:
    return f"/v1/tenants/bench/users/{user}/context:assemble"


def assemble_body(hint: dict[str, Any]) -> dict[str, Any]:
    return {"profile_id": PROFILE_ID, "conversation_hint": hint["hint"], "max_docs": 4}


@contextlib.contextmanager
def in_process(store: BlobStore) -> Iterator[CountingStore]:
    """The service on ``store`` (counted) with the bench profiles, installed process-wide."""
    from memnet import bootstrap
    from memnet.settings import Settings

    with tempfile.TemporaryDirectory(prefix="memnet-bench-ctx-") as tmp:
        callers = Path(profiles_env(Path(tmp), PROFILES)["MEMNET_CALLERS_FILE"])
        counting = CountingStore(store)
        settings = Settings(profiles_dir=PROFILES, callers_file=callers)
        bootstrap.install(bootstrap.build(settings, blobs=counting))
        try:
            yield counting
        finally:
            bootstrap.install(None)


def _seeded(made: World) -> tuple[Any, str]:
    from tests.clients import DirectClient

    user = f"inproc-{uuid.uuid4().hex[:8]}-n{made.projects}"
    seed(DirectClient(ADMIN_KEY), user, made)
    agent = DirectClient(AGENT_KEY)
    for hint in made.hints:  # warm: the routing index is built once per version
        _assemble(agent, user, hint)
    return agent, user


def _assemble(agent: Any, user: str, hint: dict[str, Any]) -> None:
    reply = agent.request("POST", assemble_url(user), assemble_body(hint))
    if reply.status != 200:
        raise RuntimeError(f"assemble: {reply.status} {reply.body[:300]!r}")


def storage_reads(store: BlobStore, sizes: tuple[int, ...]) -> dict[str, Any]:
    """Mean storage calls per assembly by hint kind, index cache warm, for each size."""
    out: dict[str, Any] = {}
    with in_process(store) as counting:
        for n in sizes:
            made = world(n)
            agent, user = _seeded(made)
            per_kind: dict[str, list[int]] = {}
            kinds: Counter[str] = Counter()
            for hint in made.hints:
                counting.calls.clear()
                _assemble(agent, user, hint)
                per_kind.setdefault(hint["kind"], []).append(len(counting.calls))
                kinds.update(counting.calls)
            means = {k: round(statistics.mean(v), 2) for k, v in per_kind.items()}
            total = [c for v in per_kind.values() for c in v]
            means["all"] = round(statistics.mean(total), 2)
            means["max"] = max(total)
            out[str(n)] = {"mean_calls": means, "calls": dict(kinds)}
    return out


def profile(store: BlobStore, projects: int, rounds: int) -> dict[str, Any]:
    """cProfile ``rounds`` passes over the hints at ``projects`` projects; per assembly."""
    with in_process(store):
        made = world(projects)
        agent, user = _seeded(made)
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        for _ in range(rounds):
            for hint in made.hints:
                _assemble(agent, user, hint)
        profiler.disable()
        elapsed = time.perf_counter() - started
    count = rounds * len(made.hints)
    return summarize_profile(pstats.Stats(profiler), count, elapsed)


def summarize_profile(stats: pstats.Stats, count: int, elapsed: float) -> dict[str, Any]:
    rows = [
        {
            "function": f"{_short(file)}:{name}",
            "calls_per_assembly": round(nc / count, 2),
            "cum_ms": round(ct / count * 1000, 3),
            "own_ms": round(tt / count * 1000, 3),
        }
        for (file, _, name), (_, nc, tt, ct, _) in stats.stats.items()  # type: ignore[attr-defined]
    ]
    total = next((r["cum_ms"] for r in rows if r["function"] == "tests/clients.py:request"), 0.0)
    storage = sum(r["cum_ms"] for r in rows if r["function"].startswith("bench/storage.py:read"))
    ours = [r for r in rows if r["function"].startswith(("memnet/", "bench/storage.py"))]
    return {
        "assemblies": count,
        "wall_ms_per_assembly": round(elapsed / count * 1000, 3),
        "profiled_ms_per_assembly": total,
        "storage_ms_per_assembly": round(storage, 3),
        "storage_share": round(storage / total, 3) if total else None,
        "top_cumulative": sorted(ours, key=lambda r: -r["cum_ms"])[:TOP],
        "top_own": sorted(rows, key=lambda r: -r["own_ms"])[:TOP],
    }


def _short(file: str) -> str:
    path = Path(file)
    try:
        return str(path.relative_to(REPO))
    except ValueError:
        return path.name if path.suffix else file
