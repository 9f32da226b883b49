"""Telemetry setup, once per process at bootstrap (never at import): which exporter the
metrics and request spans of :mod:`memnet.services.telemetry` go to (docs/observability.md).

- ``APPLICATIONINSIGHTS_CONNECTION_STRING`` set: the Azure Monitor OpenTelemetry distro
  (``configure_azure_monitor``) exports traces, metrics and logs to Application Insights;
- else ``MEMNET_TELEMETRY``: ``none`` (the default: nothing is imported or installed),
  ``console`` (JSON lines on stdout, for local runs), ``otlp`` (OTLP/HTTP to
  ``OTEL_EXPORTER_OTLP_ENDPOINT``), or ``azure`` (needs the connection string).

Every SDK module is imported here, lazily, only for the mode chosen: importing the distro
costs about 0.5 s (measured in docs/performance.md), which a process that exports nothing
should not pay within Flex Consumption's 30 s start budget.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memnet.services import telemetry
from memnet.settings import Settings

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger("memnet.telemetry_setup")
_configured = False


def configure(settings: Settings) -> None:
    """Install the exporters ``settings`` name, once per process; later calls do nothing
    (the OpenTelemetry global providers may be set only once)."""
    global _configured
    if _configured or settings.telemetry == "none":
        return
    _configured = True  # whatever happens next: providers may be set only once
    try:
        if settings.telemetry == "azure":
            _azure_monitor(settings)
        else:
            _sdk(settings.telemetry)
    except Exception:  # telemetry must not keep the memory service from serving
        log.warning("telemetry could not be configured; running without it", exc_info=True)
        return
    log.info("telemetry: exporting to %s", settings.telemetry)


def _azure_monitor(settings: Settings) -> None:
    from azure.monitor.opentelemetry import configure_azure_monitor
    from opentelemetry import metrics, trace

    configure_azure_monitor(
        connection_string=settings.applicationinsights_connection_string,
        logger_name="memnet",  # our log records, with their trace and request ids
        # Dependency spans of the HTTP and Azure SDK clients would carry blob URLs, whose
        # names hold tenant and user ids: not exported (docs/observability.md, privacy).
        instrumentation_options={
            name: {"enabled": False}
            for name in ("azure_sdk", "requests", "urllib", "urllib3", "httpx")
        },
    )
    telemetry.use(telemetry.Recorder.of(metrics.get_meter_provider(), trace.get_tracer_provider()))


def _sdk(mode: str) -> None:
    """SDK providers with a periodic metric reader and a batching span processor: exports
    run on background threads, never on the request path."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    metric_exporter, span_exporter = exporters(mode)
    resource = Resource.create({"service.name": "memnet"})
    reader = PeriodicExportingMetricReader(metric_exporter)  # OTEL_METRIC_EXPORT_INTERVAL
    meters = MeterProvider(metric_readers=[reader], resource=resource)
    tracers = TracerProvider(resource=resource)
    tracers.add_span_processor(BatchSpanProcessor(span_exporter))
    metrics.set_meter_provider(meters)
    trace.set_tracer_provider(tracers)
    telemetry.use(telemetry.Recorder.of(meters, tracers))


def exporters(mode: str) -> tuple[MetricExporter, SpanExporter]:
    if mode == "otlp":  # endpoint and headers from the standard OTEL_EXPORTER_OTLP_* settings
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPMetricExporter(), OTLPSpanExporter()
    from opentelemetry.sdk.metrics.export import ConsoleMetricExporter
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    return ConsoleMetricExporter(), ConsoleSpanExporter()
