"""The ranked half of the embedded search index (:mod:`.search`): the analyser that turns
text into terms, the postings and per-user counts a write keeps, and a ranked search's
reads (:class:`Ranking`, which feeds :func:`.search_rank.top`).

Analyser: SQLite FTS5's tokenizer, run through a per-connection temporary FTS5 table and
read back per occurrence with ``fts5vocab``; the text is split into words first
(:func:`memnet.domain.search_words.words`), so the tokenizer only folds and stems them.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memnet.adapters.local import search_rank
from memnet.adapters.local.search_terms import field_counts, filters
from memnet.domain.search_words import words
from memnet.ports import EventQuery

TOKENIZER = "porter unicode61 remove_diacritics 2 categories 'L* N* Co M*' tokenchars '_'"
FILTER_FIRST = 256  # a filter selecting at most this many events: score them all

ANALYSER = (
    f"""CREATE VIRTUAL TABLE IF NOT EXISTS temp.analyse USING fts5 (digest, keywords,
        tokenize="{TOKENIZER}")""",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.analysed USING fts5vocab (temp, analyse, instance)",
)
POSTINGS = """SELECT p.rank, p.age, p.doc_id, {} FROM postings AS p
    WHERE p.scope_id = ? AND p.term = ? {} ORDER BY p.rank, p.age, p.doc_id LIMIT ?"""
AFTER = "AND (p.rank, p.age, p.doc_id) > (?, ?, ?)"
PASSES = "EXISTS (SELECT 1 FROM events AS e WHERE e.doc_id = p.doc_id {})"
MET = "e.doc_id IN ({}) AND +e.scope_id = ?"  # by doc_id, then the user checked per row
SCORED = "SELECT e.doc_id, e.ts_us, e.event_id, e.terms FROM events AS e WHERE {}"


@dataclass(frozen=True)
class SearchStats:
    """How a search went: postings read and whether the ranking is exact."""

    postings: int
    exact: bool


class Ranking:
    """One ranked search's access to the file: the postings of its terms, in ranking
    order, and whole scores of events (SQL sums ``weight * impact`` from ``terms``)."""

    def __init__(
        self,
        db: sqlite3.Connection,
        scope: int,
        events: int,
        terms: list[str],
        query: EventQuery,
    ) -> None:
        holding = dict(
            db.execute(
                f"SELECT term, docs FROM term_docs WHERE scope_id = ?"
                f" AND term IN ({','.join('?' * len(terms))})",
                (scope, *terms),
            ).fetchall()
        )
        self._db, self._scope, self._query = db, scope, query
        self._where, self._params = filters(query, scope)
        self._probe, self._probe_params = filters(query, scope, correlated=True)
        self._terms = terms
        self._weights = [
            search_rank.weight(events, holding[t]) if holding.get(t) else 0 for t in terms
        ]
        used = zip(self._weights, terms, strict=True)
        self._needles = [(w, f'"{t}":') for w, t in used if w > 0]  # t: word characters

    def top(self, k: int, budget: int) -> tuple[list[search_rank.Ranked], SearchStats]:
        if not self._needles:
            return [], SearchStats(0, True)
        if self._where and self._filtered_at_most(FILTER_FIRST):
            return self._score_filtered(k), SearchStats(0, True)
        ranked, exact, read = search_rank.top(self._weights, self._fetch, self._scores, k, budget)
        return ranked, SearchStats(read, exact)

    def _filtered_at_most(self, limit: int) -> bool:
        """Whether one of the filtered fields alone selects at most ``limit`` events."""
        for sql, params in field_counts(self._query, self._scope):
            if self._db.execute(sql, (*params, limit + 1)).fetchone()[0] <= limit:
                return True
        return False

    def _score_filtered(self, k: int) -> list[search_rank.Ranked]:
        """Every event the filters select, scored whole: exact, and cheap when they are few."""
        sql = SCORED.format(f"e.scope_id = ? {self._where}")
        scored = self._scored(self._db.execute(sql, (self._scope, *self._params)))
        return sorted((-s, -ts, eid, doc) for doc, ts, eid, s in scored if s > 0)[:k]

    def _fetch(
        self, term: int, after: tuple[int, int, int] | None, limit: int
    ) -> list[search_rank.Posting]:
        passes = PASSES.format(self._probe) if self._probe else "1"
        sql = POSTINGS.format(passes, AFTER if after else "")
        head = self._probe_params if self._probe else []
        rows = self._db.execute(sql, (*head, self._scope, self._terms[term], *(after or ()), limit))
        return [(r, a, d, bool(ok)) for r, a, d, ok in rows]

    def _scores(self, doc_ids: list[int]) -> list[tuple[int, int, str, int]]:
        """Whole scores of events met in this user's postings; the user is checked again
        here, as on every statement of a search (``+``: a check on each row found by its
        doc_id, never a scan of the user's events through an index on scope_id)."""
        marks = ",".join("?" * len(doc_ids))
        sql = SCORED.format(MET.format(marks))
        return self._scored(self._db.execute(sql, (*doc_ids, self._scope)))

    def _scored(self, rows: Iterable[tuple[int, int, str, str]]) -> list[tuple[int, int, str, int]]:
        """Whole scores, summed from each event's ``terms`` JSON: a term's key is ``"term":``
        followed by its integer impact (keys are word characters, never escaped, and a
        key's quotes delimit it, so ``"term":`` cannot match inside another key)."""
        out = []
        for doc_id, ts_us, event_id, terms in rows:
            total = 0
            for weight, needle in self._needles:
                at = terms.find(needle)
                if at >= 0:
                    start = at + len(needle)
                    end = terms.find(",", start)
                    total += weight * int(terms[start : end if end >= 0 else -1])
            out.append((doc_id, ts_us, event_id, total))
        return out


class Counts:
    """Changes to ``term_docs`` and ``scopes.docs`` within one write, applied at its end."""

    def __init__(self) -> None:
        self.terms: Counter[tuple[int, str]] = Counter()
        self.events: Counter[int] = Counter()

    def add(self, scope: int, terms: Iterable[str], sign: int) -> None:
        self.events[scope] += sign
        for term in terms:
            self.terms[scope, term] += sign

    def apply(self, db: sqlite3.Connection) -> None:
        db.executemany(
            "INSERT INTO term_docs (scope_id, term, docs) VALUES (?, ?, ?) ON CONFLICT"
            " (scope_id, term) DO UPDATE SET docs = docs + excluded.docs",
            ((scope, term, n) for (scope, term), n in self.terms.items() if n),
        )
        db.executemany(
            "DELETE FROM term_docs WHERE scope_id = ? AND term = ? AND docs <= 0",
            (key for key, n in self.terms.items() if n < 0),
        )
        db.executemany(
            "UPDATE scopes SET docs = docs + ? WHERE scope_id = ?",
            ((n, scope) for scope, n in self.events.items() if n),
        )


def prepare(db: sqlite3.Connection) -> None:
    """Give a connection the analyser's temporary tables (idempotent)."""
    for statement in ANALYSER:
        db.execute(statement)


def analyse(
    db: sqlite3.Connection, texts: Sequence[tuple[str, str]]
) -> list[tuple[list[str], list[str]]]:
    """The terms of (digest, keywords) pairs, in order, by FTS5's tokenizer: the text is
    split into words first, then written to the connection's temporary FTS5 table and read
    back per occurrence with ``fts5vocab``."""
    if not texts:
        return []
    db.executemany(
        "INSERT INTO temp.analyse (rowid, digest, keywords) VALUES (?, ?, ?)",
        ((i, " ".join(words(d)), " ".join(words(k))) for i, (d, k) in enumerate(texts)),
    )
    out: list[tuple[list[str], list[str]]] = [([], []) for _ in texts]
    for doc, term, column in db.execute("SELECT doc, term, col FROM temp.analysed"):
        if term:  # a word of diacritics alone ("¨" is NFKC " \u0308") folds to no term
            out[doc][column == "keywords"].append(term)
    db.execute("DELETE FROM temp.analyse")
    return out


def to_json(weighted: dict[str, int]) -> str:
    return json.dumps(weighted, ensure_ascii=False, separators=(",", ":"))


def post(
    db: sqlite3.Connection, scope: int, doc_id: int, ts_us: int, weighted: dict[str, int]
) -> None:
    db.executemany(
        "INSERT INTO postings (scope_id, term, rank, age, doc_id) VALUES (?, ?, ?, ?, ?)",
        ((scope, term, -value, -ts_us, doc_id) for term, value in weighted.items()),
    )
