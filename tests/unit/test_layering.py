"""Layout shows the architecture (CONVENTIONS principle 1): azure.functions only in entry
points, Azure SDKs only in the Azure adapters, and the domain free of I/O imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "memnet"
AZURE_ADAPTERS = CORE / "adapters" / "azure"
AZURE_SDKS = ("azure.storage", "azure.identity", "azure.core", "azure.search", "azure.keyvault")


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


CORE_FILES = sorted(CORE.rglob("*.py"))


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(CORE)))
def test_core_never_imports_azure_functions(path: Path):
    assert not any(name.startswith("azure.functions") for name in imports(path))


@pytest.mark.parametrize("path", CORE_FILES, ids=lambda p: str(p.relative_to(CORE)))
def test_azure_sdks_only_in_azure_adapters(path: Path):
    if AZURE_ADAPTERS in path.parents:
        return
    assert not any(name.startswith(AZURE_SDKS) for name in imports(path)), path


DOMAIN = (
    "pointers",
    "patching",
    "policy",
    "profiles",
    "validation",
    "envelope",
    "errors",
    "identifiers",
)


@pytest.mark.parametrize("module", DOMAIN)
def test_domain_modules_do_no_io(module: str):
    names = imports(CORE / f"{module}.py")
    assert not names & {"os", "pathlib", "socket", "sqlite3", "memnet.ports", "memnet.bootstrap"}
