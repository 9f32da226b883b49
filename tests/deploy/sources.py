"""What the deploy tests compare: the template files, the app settings the template sets,
the functions the app declares, and the metric names of the issue 13 design."""

from __future__ import annotations

from funchost.index import FunctionIndex
from tests.deploy.bicep_tree import BICEP, MAIN, parse, properties, string_value, walk

FUNCTION_APP = BICEP / "modules" / "functionapp.bicep"
STORAGE = BICEP / "modules" / "storage.bicep"
ROLES = BICEP / "modules" / "roles.bicep"
ALERTS = BICEP / "modules" / "alerts.bicep"
WORKBOOK = BICEP / "modules" / "workbook.bicep"
# The instruments of the issue 13 design note (meter "memnet"): the one copy the alerts and
# the dashboard are checked against. memnet/telemetry_setup.py was written alongside this
# template; test_the_code_emits_the_design_metrics compares them once it exists.
METRICS = frozenset(
    {
        "memnet.request.duration",
        "memnet.patch.outcomes",
        "memnet.document.size_utilisation",
        "memnet.replay.applies",
        "memnet.replay.backlog_age",
        "memnet.search.duration",
        "memnet.search.results",
        "memnet.index.lag",
    }
)


def app_settings() -> dict[str, str | None]:
    """The app settings the template sets: name to literal value (None: an expression).
    The function app's appsettings resource is union(connectionSettings, workerSettings,
    memnetSettings), and main passes its memnetSettings variable (plus extraAppSettings)
    as memnetSettings."""
    found: dict[str, str | None] = {}
    variables = (
        (FUNCTION_APP, "connectionSettings"),
        (FUNCTION_APP, "workerSettings"),
        (MAIN, "memnetSettings"),
    )
    for file, var in variables:
        for name, value in properties(parse(file).variable(var)).items():
            literal = value.type == "string" and not any(
                n.type == "interpolation" for n in walk(value)
            )
            found[name] = string_value(value) if literal else None
    return found


def function_index() -> FunctionIndex:
    import function_app
    from funchost import functions_of

    return functions_of(function_app.app)
