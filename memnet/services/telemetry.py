"""The service's metrics and request spans (spec 19.1), as OpenTelemetry instruments of the
meter ``memnet``; the names are fixed because the Bicep alerts query them
(docs/observability.md, "Metrics").

The hooks below are what the code calls; they do nothing until :func:`use` installs a
:class:`Recorder` (``memnet.telemetry_setup.configure`` at bootstrap, or a test with in-memory
readers). Off, a hook costs one function call and a ``None`` check, and OpenTelemetry is
not even imported. Attributes are low-cardinality: endpoint, outcome, profile and binding
ids, never a tenant, user or document id; the request id goes on the span only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

METER = "memnet"
REQUEST_DURATION = "memnet.request.duration"
PATCH_OUTCOMES = "memnet.patch.outcomes"
SIZE_UTILISATION = "memnet.document.size_utilisation"
REPLAY_APPLIES = "memnet.replay.applies"
REPLAY_BACKLOG_AGE = "memnet.replay.backlog_age"
SEARCH_DURATION = "memnet.search.duration"
SEARCH_RESULTS = "memnet.search.results"
INDEX_LAG = "memnet.index.lag"
METRICS = (
    REQUEST_DURATION,
    PATCH_OUTCOMES,
    SIZE_UTILISATION,
    REPLAY_APPLIES,
    REPLAY_BACKLOG_AGE,
    SEARCH_DURATION,
    SEARCH_RESULTS,
    INDEX_LAG,
)
PATCH_OUTCOME_VALUES = (
    "applied",
    "etag_mismatch",
    "validation_failed",
    "redirected",
    "idempotent_replay",
    "idempotency_conflict",
)
REQUEST_ID_ATTRIBUTE = "memnet.request_id"
ENDPOINT_ATTRIBUTE = "memnet.endpoint"


@dataclass(frozen=True)
class Recorder:
    """The instruments, made once from a meter provider, and the tracer for requests."""

    tracer: Tracer
    request_duration: Histogram
    patch_outcomes: Counter
    size_utilisation: Histogram
    replay_applies: Counter
    replay_backlog_age: Histogram
    search_duration: Histogram
    search_results: Histogram
    index_lag: Histogram

    @classmethod
    def of(cls, meters: MeterProvider, tracers: TracerProvider) -> Recorder:
        meter = meters.get_meter(METER)
        return cls(
            tracers.get_tracer(METER),
            meter.create_histogram(REQUEST_DURATION, "ms", "HTTP request duration"),
            meter.create_counter(PATCH_OUTCOMES, "1", "PATCH requests by outcome"),
            meter.create_histogram(SIZE_UTILISATION, "1", "Document bytes / binding maximum"),
            meter.create_counter(REPLAY_APPLIES, "1", "Finished replays by status"),
            meter.create_histogram(REPLAY_BACKLOG_AGE, "s", "Replay message age when taken"),
            meter.create_histogram(SEARCH_DURATION, "ms", "Event search duration"),
            meter.create_histogram(SEARCH_RESULTS, "1", "Results per event search"),
            meter.create_histogram(INDEX_LAG, "s", "Index job age when indexed"),
        )


_recorder: Recorder | None = None


def use(recorder: Recorder | None) -> Recorder | None:
    """Record through ``recorder`` from now on (None: record nothing); returns the old one."""
    global _recorder
    previous, _recorder = _recorder, recorder
    return previous


def active() -> bool:
    return _recorder is not None


@contextlib.contextmanager
def request_span(endpoint: str, method: str, request_id: str) -> Iterator[Span | None]:
    """A span around one request carrying its request id; ``None`` when off."""
    if _recorder is None:
        yield None
        return
    attributes = {REQUEST_ID_ATTRIBUTE: request_id, ENDPOINT_ATTRIBUTE: endpoint}
    attributes["http.request.method"] = method
    with _recorder.tracer.start_as_current_span(endpoint, attributes=attributes) as span:
        yield span


def request_finished(endpoint: str, method: str, status: int, millis: float) -> None:
    if _recorder is not None:
        attributes: dict[str, Any] = {"endpoint": endpoint, "method": method}
        attributes["status_code"] = status
        _recorder.request_duration.record(millis, attributes)


def patch_outcome(outcome: str, profile_id: str, binding_id: str) -> None:
    """Exactly one per PATCH that reached its binding (the 412 rate is a share of them)."""
    if _recorder is not None:
        attributes = {"outcome": outcome, "profile_id": profile_id, "binding_id": binding_id}
        _recorder.patch_outcomes.add(1, attributes)


def size_utilisation(ratio: float, profile_id: str, binding_id: str) -> None:
    if _recorder is not None:
        attributes = {"profile_id": profile_id, "binding_id": binding_id}
        _recorder.size_utilisation.record(ratio, attributes)


def replay_finished(status: str) -> None:
    if _recorder is not None:
        _recorder.replay_applies.add(1, {"status": status})


def replay_taken(age_seconds: float) -> None:
    if _recorder is not None:
        _recorder.replay_backlog_age.record(max(age_seconds, 0.0))


def searched(ranked: bool, millis: float, results: int) -> None:
    if _recorder is not None:
        attributes: dict[str, Any] = {"ranked": ranked}
        _recorder.search_duration.record(millis, attributes)
        _recorder.search_results.record(results, attributes)


def index_lagged(lag_seconds: float) -> None:
    if _recorder is not None:
        _recorder.index_lag.record(max(lag_seconds, 0.0))
