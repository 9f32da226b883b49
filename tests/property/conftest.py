"""Hypothesis profiles for the property suite, and the service fixture.

``HYPOTHESIS_PROFILE=ci`` (the default) keeps the whole suite to a few minutes under
``pytest -n 2``; ``HYPOTHESIS_PROFILE=dev`` runs many more examples. Both have
``deadline=None``: the tests assert wall time per request themselves
(``harness.MAX_SECONDS``), which is what the service promises, rather than per example.
The example database lives under ``.pytest_cache`` (ignored by git), so a failure found
once is tried first on the next run.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.database import DirectoryBasedExampleDatabase

from tests.conftest import REPO
from tests.property.harness import Harness

_COMMON = {
    "deadline": None,
    "print_blob": True,
    "database": DirectoryBasedExampleDatabase(REPO / ".pytest_cache" / "hypothesis"),
    # Examples share one service per test (each on its own user), and some bodies are
    # built big on purpose.
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
}
# ci: one failure per test, shrunk (a failing state machine replays whole sequences, so
# shrinking several distinct failures at once would take many minutes).
settings.register_profile(
    "ci", max_examples=200, stateful_step_count=25, report_multiple_bugs=False, **_COMMON
)
settings.register_profile("dev", max_examples=1000, stateful_step_count=50, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Shrinking a failure may take Hypothesis up to five minutes; let it finish and print the
# minimal example rather than have the default 300 s pytest-timeout cut it off.
SHRINK_TIMEOUT = 900


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.timeout(SHRINK_TIMEOUT))


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    """The service on a fresh data directory; examples isolate themselves by user."""
    found = Harness(tmp_path)
    yield found
    found.close()
