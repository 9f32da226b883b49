"""Spec 19.1's metrics and the request spans, read from in-memory OpenTelemetry readers
while real requests run through the real functions (docs/observability.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.cli.search import OPERATOR
from memnet.services import telemetry
from memnet.services.replay.writes import REPLAY_QUEUE
from tests.api.test_documents import create, patch
from tests.api.test_events import event, post, search
from tests.api.test_policy import FACT
from tests.api.test_replay import SNAP, transcript
from tests.clients import ApiClient, DirectClient
from tests.conftest import AGENT_KEY, doc_url, make_settings

PRIVATE = {"t1", "u1", "tenant_id", "user_id", "doc_id"}


@dataclass
class Readings:
    metrics: InMemoryMetricReader
    spans: InMemorySpanExporter

    def points(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        """The data points of instrument ``name``: (attributes, sum or count)."""
        found: list[tuple[dict[str, Any], Any]] = []
        data = self.metrics.get_metrics_data()
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in (m for m in scope.metrics if m.name == name):
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        found.append((dict(point.attributes or {}), value or point.count))
        return found

    def counts(self, name: str, key: str) -> dict[Any, Any]:
        return {attributes[key]: value for attributes, value in self.points(name)}


@pytest.fixture
def readings() -> Iterator[Readings]:
    """An SDK meter and tracer provider, with in-memory readers, for this test only."""
    reader, exporter = InMemoryMetricReader(), InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    previous = telemetry.use(telemetry.Recorder.of(MeterProvider([reader]), tracers))
    yield Readings(reader, exporter)
    telemetry.use(previous)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Services]:
    built = bootstrap.build(make_settings(tmp_path / "data"))
    bootstrap.install(built)
    yield built
    bootstrap.install(None)


def test_a_request_has_a_span_with_the_request_id_the_response_shows(
    client: ApiClient, readings: Readings
):
    reply = client.request("GET", doc_url())
    assert reply.status == 404
    (span,) = [s for s in readings.spans.get_finished_spans() if s.name == "get_document"]
    attributes = dict(span.attributes or {})
    assert attributes["memnet.request_id"] == reply.headers["x-request-id"]
    assert attributes["memnet.endpoint"] == "get_document"
    assert attributes["http.response.status_code"] == 404
    (point,) = readings.points(telemetry.REQUEST_DURATION)
    assert point[0] == {"endpoint": "get_document", "method": "GET", "status_code": 404}


def test_each_patch_outcome_is_counted_once_with_its_binding(local: Services, readings: Readings):
    client = DirectClient(AGENT_KEY)
    first = create(client, key="k1")
    assert create(client, key="k1").status == 201  # the stored response again
    other = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "Other."}}]
    assert create(client, ops=other, key="k1").status == 409
    assert patch(client, '"stale"', [], "k2").status == 412
    ops = [{"op": "replace", "path": "/content/preferences/0", "value": {"text": ""}}]
    assert patch(client, first.data["etag"], ops, "k3").status == 422
    fact = [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}]
    evidence = {"message_ids": ["m1"]}
    low = patch(client, first.data["etag"], fact, "k4", confidence=0.75, evidence=evidence)
    assert low.data["redirected_ops"]
    assert readings.counts(telemetry.PATCH_OUTCOMES, "outcome") == {
        "applied": 1,
        "idempotent_replay": 1,
        "idempotency_conflict": 1,
        "etag_mismatch": 1,
        "validation_failed": 1,
        "redirected": 1,
    }
    for attributes, _ in readings.points(telemetry.PATCH_OUTCOMES):
        assert attributes.keys() == {"outcome", "profile_id", "binding_id"}
        assert attributes["binding_id"] == "user_dynamic"
    (size,) = readings.points(telemetry.SIZE_UTILISATION)
    assert size == ({"profile_id": "project-copilot-v1", "binding_id": "user_dynamic"}, 2)


def test_metric_attributes_carry_no_tenant_user_or_request_id(local: Services, readings: Readings):
    client = DirectClient(AGENT_KEY)
    create(client)
    client.request("GET", doc_url())
    for name in telemetry.METRICS:
        for attributes, _ in readings.points(name):
            assert not PRIVATE & {*attributes, *map(str, attributes.values())}
            assert not any(str(v).startswith("req_") for v in attributes.values())


def test_search_and_index_record_latency_results_and_lag(local: Services, readings: Readings):
    client = DirectClient(AGENT_KEY)
    assert post(client, event(), "e1").status in (200, 201)
    local.events.reindex(OPERATOR, "t1", "u1")  # queues an index job
    assert local.events.drain().indexed == 1
    ((lag_attributes, lagged),) = readings.points(telemetry.INDEX_LAG)
    assert lag_attributes == {} and lagged == 2  # inline, then by the worker
    assert search(client, text="contention").data["count"] == 1
    assert search(client, text="nothing-matches-this").data["count"] == 0
    assert search(client).status == 200
    assert readings.counts(telemetry.SEARCH_DURATION, "ranked") == {True: 2, False: 1}
    results = {(a["ranked"], v) for a, v in readings.points(telemetry.SEARCH_RESULTS)}
    assert results == {(True, 2), (False, 1)}  # counts of searches per attribute set


def test_a_replay_records_its_outcome_and_backlog_age(local: Services, readings: Readings):
    client = DirectClient(AGENT_KEY)
    assert client.request("PUT", SNAP, transcript("I live in Lisbon.")).status == 202
    for message in local.queue.receive(REPLAY_QUEUE, max_messages=16):
        local.replay.handle_message(message.body)
        local.queue.delete(REPLAY_QUEUE, message)
    status = client.request("GET", SNAP + "/replay").data["status"]
    assert readings.counts(telemetry.REPLAY_APPLIES, "status") == {status: 1}
    ((attributes, taken),) = readings.points(telemetry.REPLAY_BACKLOG_AGE)
    assert attributes == {} and taken == 1
