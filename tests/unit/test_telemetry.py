"""Telemetry settings and setup (docs/observability.md): the mode follows
``MEMNET_TELEMETRY`` and the Application Insights connection string; ``none`` installs
nothing and imports no OpenTelemetry SDK."""

from __future__ import annotations

import pytest

from memnet import telemetry_setup as setup
from memnet.domain.errors import ConfigError
from memnet.services import telemetry
from memnet.settings import Settings

BASE = {"MEMNET_CALLERS_FILE": "callers.dev.json"}
CONNECTION = "InstrumentationKey=00000000-0000-0000-0000-000000000000"


def mode(**env: str) -> str:
    return Settings.from_env({**BASE, **env}).telemetry


def test_telemetry_is_off_by_default():
    assert mode() == "none"


def test_a_connection_string_implies_azure_monitor():
    assert mode(APPLICATIONINSIGHTS_CONNECTION_STRING=CONNECTION) == "azure"


def test_an_explicit_mode_wins_over_the_connection_string():
    env = {"APPLICATIONINSIGHTS_CONNECTION_STRING": CONNECTION, "MEMNET_TELEMETRY": "none"}
    assert mode(**env) == "none"
    assert mode(MEMNET_TELEMETRY="OTLP") == "otlp"


def test_the_connection_string_is_kept_out_of_repr():
    settings = Settings.from_env({**BASE, "APPLICATIONINSIGHTS_CONNECTION_STRING": CONNECTION})
    assert CONNECTION not in repr(settings)


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"MEMNET_TELEMETRY": "prometheus"}, "MEMNET_TELEMETRY"),
        ({"MEMNET_TELEMETRY": "azure"}, "APPLICATIONINSIGHTS_CONNECTION_STRING"),
    ],
)
def test_a_bad_telemetry_setting_stops_startup(env: dict[str, str], field: str):
    with pytest.raises(ConfigError) as raised:
        Settings.from_env({**BASE, **env})
    assert raised.value.field == field


def test_none_installs_nothing():
    setup.configure(Settings.from_env(BASE))
    assert not telemetry.active()


def test_hooks_do_nothing_when_off():
    assert not telemetry.active()
    telemetry.patch_outcome("applied", "p", "b")
    telemetry.searched(True, 1.0, 0)
    with telemetry.request_span("get_document", "GET", "req_x") as span:
        assert span is None


@pytest.mark.parametrize("name", ["console", "otlp"])
def test_each_sdk_mode_has_a_metric_and_a_span_exporter(name: str):
    metrics, spans = setup.exporters(name)
    assert type(metrics).__name__.lower().startswith(name)
    assert type(spans).__name__.lower().startswith(name)
    metrics.shutdown()
    spans.shutdown()
