"""Ranking for the embedded search index (:mod:`.search`), without I/O: BM25 in integers
over impact-ordered postings, and the threshold algorithm that stops reading them as soon
as no unread event can enter the top k.

Score of an event for a query: the sum, over the query's distinct terms that it holds, of
``weight(term) * impact(term, event)``, both integers, so ties are exact and sums do not
depend on order:

- ``impact`` = ``round(1000 * f * (k1 + 1) / (f + k1 * (1 - b + b * length / L)))``, BM25's
  saturated frequency with ``k1 = 1.2``, ``b = 0.75``; ``f`` = the term's occurrences in
  the digest plus 1.5 x those in the keywords, ``length`` = the event's word count.
  ``L`` is a constant (:data:`AVERAGE_LENGTH`), not the running mean of the user's events,
  so that an impact computed when the event is indexed stays true and the postings stay
  sorted.
- ``weight`` = ``round(1000 * ln(1 + (N - n + 0.5) / (n + 0.5)))``, the inverse document
  frequency of Lucene's BM25 (Azure AI Search's ranking), with ``N`` the user's events and
  ``n`` those holding the term: rarer terms weigh more; at least 1, so that a term
  every event holds still matches.

Ties rank newer events first, then smaller event ids. Each term's postings are read in
that same order: impact descending, then time descending (:func:`top`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

K1, B = 1.2, 0.75
DIGEST_WEIGHT, KEYWORDS_WEIGHT = 1.0, 1.5
AVERAGE_LENGTH = 24.0  # words of a typical digest plus its keywords
SCALE = 1000
MAX_BATCH = 256  # postings fetched per call at most
SCORE_BATCH = 32  # candidates scored per call


def impact(frequency: float, length: int) -> int:
    norm = K1 * (1 - B + B * length / AVERAGE_LENGTH)
    return max(1, round(SCALE * frequency * (K1 + 1) / (frequency + norm)))


def weight(events: int, holding: int) -> int:
    return max(1, round(SCALE * math.log(1 + (events - holding + 0.5) / (holding + 0.5))))


def impacts(digest_terms: Iterable[str], keyword_terms: Iterable[str]) -> dict[str, int]:
    """Each distinct term of an event with its impact (``terms`` are already analysed)."""
    frequency: dict[str, float] = {}
    length = 0
    for terms, each in ((digest_terms, DIGEST_WEIGHT), (keyword_terms, KEYWORDS_WEIGHT)):
        for term in terms:
            frequency[term] = frequency.get(term, 0.0) + each
            length += 1
    return {term: impact(f, length) for term, f in frequency.items()}


# A scored event, (-score, -ts_us, event_id, doc_id): sorted ascending, the best first.
Ranked = tuple[int, int, str, int]


# A posting as read: (-impact, -ts_us, doc_id, passes the query's filters).
Posting = tuple[int, int, int, bool]
# The next postings of term i after a position (None: from the start), at most n of them.
Fetch = Callable[[int, tuple[int, int, int] | None, int], list[Posting]]
# Whole scores of events: (doc_id, ts_us, event_id, score) each.
Score = Callable[[list[int]], list[tuple[int, int, str, int]]]


@dataclass
class _Cursor:
    weight: int
    rows: list[Posting]
    next: int = 0  # index in ``rows`` of the next unread posting
    position: tuple[int, int, int] | None = None
    done: bool = False
    batch: int = 8

    def head(self, term: int, fetch: Fetch) -> Posting | None:
        if self.next == len(self.rows) and not self.done:
            self.rows, self.next = fetch(term, self.position, self.batch), 0
            self.done = len(self.rows) < self.batch
            self.batch = min(MAX_BATCH, self.batch * 2)
        return self.rows[self.next] if self.next < len(self.rows) else None

    def run(self, floor: int, limit: int) -> list[Posting]:
        """The next postings (at least one, at most ``limit``) while each could add at
        least ``floor``; the cursor moves past them."""
        rows, start = self.rows, self.next
        end, stop = min(len(rows), start + limit), start + 1
        while stop < end and self.weight * -rows[stop][0] >= floor:
            stop += 1
        self.next, self.position = stop, rows[stop - 1][:3]
        return rows[start:stop]


class _Best:
    """The k best events scored so far (best first), and the events met but not yet
    scored, which are scored in batches."""

    def __init__(self, k: int, score: Score) -> None:
        self.k, self.score = k, score
        self.ranked: list[Ranked] = []
        self.seen: set[int] = set()
        self.pending: list[int] = []

    def meet(self, postings: list[Posting]) -> None:
        for _, _, doc, passes in postings:
            if passes and doc not in self.seen:
                self.seen.add(doc)
                self.pending.append(doc)
        ranked, pending = len(self.ranked), len(self.pending)
        if pending >= SCORE_BATCH or ranked < self.k <= ranked + pending:
            self.flush()

    def flush(self) -> list[Ranked]:
        if self.pending:
            scored = self.score(self.pending)
            self.ranked.extend((-total, -ts, eid, doc) for doc, ts, eid, total in scored)
            self.ranked.sort()
            del self.ranked[self.k :], self.pending[:]
        return self.ranked


def top(
    weights: list[int], fetch: Fetch, score: Score, k: int, budget: int
) -> tuple[list[Ranked], bool, int]:
    """The best ``k`` events holding any term with a positive weight, best first,
    whether the answer is exact, and the postings read.

    Threshold algorithm (Fagin, Lotem and Naor, 2003): read postings from the term whose
    next posting could add most (``weight * impact``), as long as it could add more than
    any other term's; score each new event whole (``score``, a random access, in
    batches); stop when the k-th best beats any event not yet seen, which scores at most
    ``T`` = the sum of each term's next ``weight * impact`` and, if it reaches ``T``, is no
    newer than any term's next posting. That bound is exact, so is the answer. After
    ``budget`` postings it stops anyway and returns the best of the events seen (``exact``
    False): they were met in impact order, so they are the likeliest to score high
    (docs/performance.md measures how often the answer differs).
    """
    cursors = [(i, _Cursor(w, [])) for i, w in enumerate(weights) if w > 0]
    best, read = _Best(k, score), 0
    while True:
        live = [(c.weight * -h[0], c, h) for i, c in cursors if (h := c.head(i, fetch))]
        if not live:
            return best.flush(), True, read
        bound = sum(gain for gain, _, _ in live)
        kth = best.ranked[-1] if len(best.ranked) == k else None
        if kth and _beats(kth, bound, min(-h[1] for _, _, h in live)):
            return best.flush(), True, read
        if read >= budget:
            return best.flush(), False, read
        live.sort(key=lambda entry: entry[0], reverse=True)
        postings = live[0][1].run(live[1][0] if len(live) > 1 else 0, budget - read)
        read += len(postings)
        best.meet(postings)


def _beats(kth: Ranked, bound: int, newest_unread_us: int) -> bool:
    """Whether the k-th best ranks above every unseen event: those score at most
    ``bound``, and one that scores exactly ``bound`` is no newer than ``newest_unread_us``
    (an equal time could still win on its event id, so it does not count)."""
    score, ts_us = -kth[0], -kth[1]
    return score > bound or (score == bound and ts_us > newest_unread_us)
