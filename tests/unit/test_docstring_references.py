"""Docstrings and comments point at real code: every ``memnet.x.y`` / ``funchost.x.y`` /
``scripts.x.y`` they name, and every Sphinx role (``:func:`name```) they use, resolves to
a module or an attribute that exists (issue 9: docstrings cited modules that no longer existed)."""

from __future__ import annotations

import builtins
import importlib
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memnet.services import telemetry

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(f for d in ("memnet", "funchost", "scripts") for f in ROOT.joinpath(d).rglob("*.py"))
DOTTED = re.compile(r"(?<![\w/.-])((?:memnet|funchost|scripts)(?:\.[A-Za-z_]\w*)+)")
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):`~?([\w.]+)`")
_MISSING = object()


def module_of(path: Path) -> ModuleType:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return importlib.import_module(name)


def resolve(dotted: str, start: Any) -> bool:
    """Whether ``dotted`` names something: modules first, then attributes."""
    parts, found = dotted.split("."), start
    for i in range(len(parts), 0, -1):
        if start is None:
            try:
                found = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            rest = parts[i:]
        else:
            rest = parts
        for part in rest:
            found = getattr(found, part, _MISSING)
            if found is _MISSING:
                break
        else:
            return True
        if start is not None:
            return False
    return False


def resolvable(name: str, module: ModuleType) -> bool:
    """An absolute name, or one relative to ``module``: its package (``.x``), its own
    names, a member of one of its classes (``:meth:`read``` in a class docstring), or a
    builtin."""
    if name.split(".")[0] in ("memnet", "funchost", "scripts"):
        return resolve(name, None)
    if name.startswith("."):
        package = module.__name__.rsplit(".", 1)[0]
        return resolve(package + name, None)
    classes = [v for v in vars(module).values() if isinstance(v, type)]
    scopes: list[Any] = [module, builtins, *classes]
    return any(resolve(name, scope) for scope in scopes)


# Telemetry names share the "memnet." prefix but name instruments and attributes, not code.
TELEMETRY_NAMES = frozenset(
    [*telemetry.METRICS, telemetry.REQUEST_ID_ATTRIBUTE, telemetry.ENDPOINT_ATTRIBUTE]
)


def references(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    found = [("absolute", m) for m in DOTTED.findall(text) if m not in TELEMETRY_NAMES]
    found += [("role", m) for m in ROLE.findall(text)]
    return sorted(set(found))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_reference_in_a_docstring_names_real_code(path: Path):
    module = module_of(path)
    broken = []
    for kind, name in references(path):
        ok = resolvable(name, module)
        if not ok:
            broken.append(f"{kind} {name}")
    assert broken == []


def test_a_stale_reference_is_caught():
    assert not resolve("memnet.api.render", None)
    assert not resolve("memnet.domain.policy.no_such_rule", None)
    assert resolve("memnet.domain.policy.plan_ops", None)
    assert resolve("memnet.ports.Condition.create_only", None)
