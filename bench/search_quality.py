"""Event search quality on the multi-session judged set (tests/data/search_sessions, see
its README): recall@5, recall@10 and MRR per category for each ranker, beside SQLite
FTS5 ``bm25()`` with the porter stemmer as the reference, in the same run.

    .venv/bin/python -m bench.search_quality [--write-docs]

Rankers are entries of :func:`rankers` (name, query -> labels, best first); dense and
hybrid rankers join that list. Both rankers here get the same words
(:func:`memnet.domain.search_words.query_words`) and the same time filter.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import report
from bench.harness import REPO, machine
from memnet.adapters.local.search import SqliteSearchIndex
from memnet.domain.search_words import query_words
from memnet.ports import EventQuery, IndexedEvent

DATA = REPO / "tests" / "data" / "search_sessions"
CATEGORIES = ("single_hop", "multi_hop", "temporal", "open_domain")
TENANT, TOP_K = "t1", 10
SECTION, ANALYSIS, AFTER = "search-quality", "search-quality-analysis", "<!-- /search -->"

Query = dict[str, Any]
Ranker = tuple[str, Callable[[Query], list[str]]]


def load() -> tuple[list[dict[str, Any]], list[Query]]:
    read = (
        json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
        for name in ("events", "queries")
    )
    events, queries = read
    return events, queries


def _window(query: Query) -> tuple[str | None, str | None]:
    window = query["filters"].get("time_range", {})
    return window.get("from"), window.get("to")


def ours(events: list[dict[str, Any]], root: Path) -> Callable[[Query], list[str]]:
    """Our embedded index, every persona a user of tenant ``t1``; event ids are the
    events' positions, so labels never reach the index."""
    index = SqliteSearchIndex(root / "ours.sqlite3")
    index.upsert([_indexed(n, e) for n, e in enumerate(events)])
    labels = [e["label"] for e in events]

    def rank(query: Query) -> list[str]:
        since, until = _window(query)
        asked = EventQuery(TENANT, query["user"], query["text"], TOP_K, since, until)
        return [labels[int(hit.event_id[4:])] for hit in index.search(asked)]

    return rank


def _indexed(n: int, event: dict[str, Any]) -> IndexedEvent:
    return IndexedEvent(
        tenant_id=TENANT,
        user_id=event["user"],
        event_id=f"evt_{n:05d}",
        timestamp=event["timestamp"],
        service_id=event["service_id"],
        source_type=event["source_type"],
        digest=event["digest"],
        keywords=tuple(event["keywords"]),
        project_ids=tuple(event["project_ids"]),
    )


def fts5(events: list[dict[str, Any]], root: Path) -> Callable[[Query], list[str]]:
    """The reference: a plain FTS5 table, porter stemmer, ranked by ``bm25(events, 1.0,
    1.5)`` (lower is better), the query the OR of its words as quoted strings."""
    db = sqlite3.connect(root / "fts5.sqlite3")
    db.execute(
        "CREATE VIRTUAL TABLE events USING fts5(digest, keywords, label UNINDEXED, "
        "user UNINDEXED, ts UNINDEXED, tokenize='porter unicode61 remove_diacritics 2')"
    )
    rows = [
        (e["digest"], " ".join(e["keywords"]), e["label"], e["user"], e["timestamp"])
        for e in events
    ]
    db.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?)", rows)
    db.commit()
    sql = """SELECT label FROM events WHERE events MATCH ? AND user = ? AND ts >= ? AND ts < ?
        ORDER BY bm25(events, 1.0, 1.5) LIMIT ?"""

    def rank(query: Query) -> list[str]:
        since, until = _window(query)
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in query_words(query["text"]))
        found = db.execute(sql, (match, query["user"], since or "", until or "~", TOP_K))
        return [label for (label,) in found]

    return rank


def rankers(events: list[dict[str, Any]], root: Path) -> list[Ranker]:
    """Every ranker measured, in report order; the reference last."""
    return [("lexical (ours)", ours(events, root)), ("FTS5 bm25 (reference)", fts5(events, root))]


def score(found: list[str], relevant: set[str]) -> dict[str, float]:
    first = next((1 / rank for rank, label in enumerate(found, 1) if label in relevant), 0.0)
    return {
        "recall@5": len(set(found[:5]) & relevant) / len(relevant),
        "recall@10": len(set(found[:10]) & relevant) / len(relevant),
        "mrr": first,
    }


def measure(ranker: Ranker, queries: list[Query]) -> dict[str, Any]:
    name, rank = ranker
    rows = [(q["category"], score(rank(q), set(q["relevant"]))) for q in queries]
    table = {}
    for category in (*CATEGORIES, "overall"):
        part = [m for c, m in rows if category in ("overall", c)]
        means = {k: round(sum(m[k] for m in part) / len(part), 3) for k in part[0]}
        table[category] = {"n": len(part), **means}
    return {"ranker": name, "categories": table}


def run() -> dict[str, Any]:
    started, (events, queries) = time.perf_counter(), load()
    with tempfile.TemporaryDirectory() as tmp:
        results = [measure(r, queries) for r in rankers(events, Path(tmp))]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "command": ".venv/bin/python -m bench.search_quality " + " ".join(sys.argv[1:]),
        "events": len(events),
        "users": len({e["user"] for e in events}),
        "queries": len(queries),
        "results": results,
    }


def markdown_table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| ranker | category | queries | recall@5 | recall@10 | MRR |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for result in results:
        for category, m in result["categories"].items():
            name = f"**{category}**" if category == "overall" else category
            values = " | ".join(f"{m[k]:.3f}" for k in ("recall@5", "recall@10", "mrr"))
            lines.append(f"| {result['ranker']} | {name} | {m['n']} | {values} |")
    return "\n".join(lines)


def header(out: dict[str, Any]) -> str:
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
            f"- Data: `tests/data/search_sessions/` (see its README): {out['events']} event "
            f"digests of {out['users']} users, {out['queries']} queries judged before any "
            "search ran. Each query searches its user's events, top 10; recall@k is the "
            "share of the relevant events in the top k, MRR the reciprocal rank of the "
            "first relevant one in the top 10 (else 0).",
            "- Rankers: **lexical (ours)**, `SqliteSearchIndex.search` (impact-ordered BM25); "
            "**FTS5 bm25 (reference)**, a plain FTS5 table (`porter unicode61 "
            "remove_diacritics 2`) ranked by `bm25(events, 1.0, 1.5)`, the query the OR of "
            "the same words (stop words dropped) as quoted strings.",
        ]
    )


def write_docs(out: dict[str, Any], path: Path) -> Path:
    """The section goes right after the event search section the first time."""
    text = path.read_text()
    if f"<!-- {SECTION} -->" not in text:
        empty = f"\n\n<!-- {SECTION} -->\n<!-- /{SECTION} -->"
        path.write_text(text.replace(AFTER, AFTER + empty, 1))
    parts = [header(out), markdown_table(out["results"])]
    return report.write_with_analysis(path, SECTION, parts, ANALYSIS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-docs", action="store_true", help="rewrite docs/performance.md")
    args = parser.parse_args()
    out = run()
    print(markdown_table(out["results"]))
    if args.write_docs:
        print(f"wrote {write_docs(out, REPO / 'docs' / 'performance.md')}")


if __name__ == "__main__":
    main()
