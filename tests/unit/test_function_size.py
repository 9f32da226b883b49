"""No function of the app over 60 lines (issue 32; docs/architecture.md, "The layers"):
a longer one is split into named steps. ruff's C901 bounds its branches (pyproject.toml)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_LINES = 60


def long_functions(source: str, most: int = MOST_LINES) -> list[str]:
    return [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > most
    ]


def test_no_function_of_the_app_is_over_60_lines():
    paths = [*ROOT.joinpath("memnet").rglob("*.py"), *ROOT.joinpath("funchost").rglob("*.py")]
    found = {str(p.relative_to(ROOT)): long_functions(p.read_text()) for p in paths}
    assert {path: names for path, names in found.items() if names} == {}


def test_a_long_function_is_found():
    body = "\n".join(f"    x{i} = {i}" for i in range(MOST_LINES))
    assert long_functions(f"def f():\n{body}\n") == [f"f ({MOST_LINES + 1} lines)"]
    assert long_functions(f"def f():\n{body}\n", most=MOST_LINES + 1) == []
