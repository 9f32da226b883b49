"""Handlers get a context (docs/architecture.md, "The layers"): the entry points
hand ``memnet.api`` the services, so no module of it imports the composition root or
looks the services up in a global (``bootstrap.services()``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.test_layering import ROOT, imports, module_name

API_FILES = sorted(ROOT.joinpath("memnet", "api").rglob("*.py"))


def global_lookups(source: str, module: str) -> list[str]:
    """What in ``source`` (as ``module``) reaches for the process-wide services."""
    found = [f"imports {n}" for n in imports(source, module) if n.startswith("memnet.bootstrap")]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id == "bootstrap":
                found.append(f"calls bootstrap.{node.func.attr}() on line {node.lineno}")
    return found


@pytest.mark.parametrize("path", API_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_api_module_reaches_for_the_global_services(path: Path):
    assert global_lookups(path.read_text(), module_name(path)) == []


@pytest.mark.parametrize(
    "planted",
    [
        "from memnet import bootstrap",
        "import memnet.bootstrap",
        "from memnet.bootstrap import services",
        "from .. import bootstrap",
        "def f():\n    return bootstrap.services()",
    ],
)
def test_a_planted_lookup_is_found(planted: str):
    source = ROOT.joinpath("memnet", "api", "events.py").read_text() + "\n" + planted + "\n"
    assert global_lookups(source, "memnet.api.events"), planted
