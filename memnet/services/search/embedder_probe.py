"""Whether the configured embeddings model answers, for ``GET /v1/health/details``
(docs/search.md, "Health").

One real call, embedding one short text, is the only proof that the endpoint, the key
or identity and the model (the Azure deployment) all work; listing models would pass
with a wrong model name. So the probe makes that call, but at most once per
:data:`PROBE_TTL_SECONDS` per process, on a thread of its own with the search's budget
(a short timeout, no retry), and only when health details are asked for: a monitor
polling health costs one embedding of two words every five minutes per instance, never
one per request. Health never waits long for it: the first asker waits at most
:data:`PROBE_WAIT_SECONDS`, then answers ``reachable: null`` ("checking"); a later
asker after the answer expired gets the last answer at once while a new probe runs.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from memnet.domain.timestamps import format_timestamp
from memnet.ports import Clock, Embedder, EmbedderError

log = logging.getLogger("memnet.services.events.service")

PROBE_TEXT = "health probe"
PROBE_TTL_SECONDS = 300.0
PROBE_WAIT_SECONDS = 1.0


@dataclass(frozen=True)
class Reachability:
    """The last probe's answer: ``reachable`` None while the first probe runs."""

    reachable: bool | None
    checked_at: str | None = None
    error: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"reachable": self.reachable, "checked_at": self.checked_at, "error": self.error}


class EmbedderProbe:
    """At most one probe at a time per process; its answer kept for ``ttl`` seconds."""

    def __init__(
        self,
        embedder: Embedder,
        clock: Clock,
        ttl: float = PROBE_TTL_SECONDS,
        wait: float = PROBE_WAIT_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._embedder, self._clock = embedder, clock
        self._ttl, self._wait, self._monotonic = ttl, wait, monotonic
        self._lock = threading.Lock()
        self._last = Reachability(None)
        self._asked_at: float | None = None  # when the last probe began (monotonic)
        self._done = threading.Event()

    def status(self) -> Reachability:
        """The last answer; a new probe started when there is none or it expired, and
        waited for (at most ``wait`` seconds) only when there was no answer yet."""
        with self._lock:
            now = self._monotonic()
            due = self._asked_at is None or now - self._asked_at >= self._ttl
            if due and (self._asked_at is None or self._done.is_set()):
                self._asked_at, done = now, threading.Event()
                self._done = done
                threading.Thread(target=self._probe, args=(done,), daemon=True).start()
            running, first = self._done, self._last.reachable is None
        if first:
            running.wait(self._wait)
        with self._lock:
            return self._last

    def _probe(self, done: threading.Event) -> None:
        try:
            self._embedder.embed([PROBE_TEXT])
            answer = Reachability(True, self._now())
        except EmbedderError as error:
            log.warning("embedder health probe failed: %s", error)
            answer = Reachability(False, self._now(), str(error)[:300])
        except Exception:  # an adapter bug must not leave health "checking" forever
            log.exception("embedder health probe failed")
            answer = Reachability(False, self._now(), "unexpected error (see the log)")
        with self._lock:
            self._last = answer
        done.set()

    def _now(self) -> str:
        return format_timestamp(self._clock.now())
