"""Layout shows the architecture (CONVENTIONS principle 1; ARCHITECTURE.md section 1).

The layers are packages and every import of ours points inward:

- ``memnet.domain`` imports nothing of ours but ``memnet.domain``, and no I/O modules;
- ``memnet.ports`` imports the domain only;
- ``memnet.services`` imports the domain, the ports and other services;
- ``memnet.api`` imports services, domain, ports and the composition root
  (``memnet.bootstrap``, ``memnet.settings``) that hands it the services;
- ``memnet.adapters.X`` imports ports, domain and its own ``memnet.adapters.X``, never
  another adapter family;
- the composition root imports anything of ours but ``memnet.api``;
- nothing imports ``memnet.api``, ``funchost`` or ``function_app`` but the entry points
  (``function_app.py``; the command line, ``memnet.cli`` and ``memnet/__main__.py``) and
  the host itself.

Also: ``azure.functions`` only in entry points and the host; Azure SDKs only in
``memnet.adapters.azure``, but for ``azure.storage.blob`` in the host, which hands a blob
function typed as the SDK's ``BlobClient`` that client, as the Functions worker does.
The rule runs over ``memnet/``, ``funchost/`` and ``function_app.py``;
``test_a_planted_import_breaks_the_rule`` shows it failing. And no import circles among
the modules of ``funchost/`` (``test_no_import_circles``).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AZURE_SDKS = ("azure.storage", "azure.identity", "azure.core", "azure.search", "azure.keyvault")
IO_MODULES = frozenset({"os", "pathlib", "socket", "sqlite3", "shutil", "subprocess", "io"})
ENTRY_POINTS = frozenset({"function_app", "memnet.__main__", "memnet.cli"})
TYPE_CHECKING = ("TYPE_CHECKING", "typing.TYPE_CHECKING")
HOST_SDK = "azure.storage.blob"  # funchost/blobs.py: the SDK-type binding's BlobClient


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str, type_checking: bool = True) -> set[str]:
    """Every module ``source`` imports, absolute; ``from x import y`` counts ``x.y`` too.
    Without ``type_checking``, not those under ``if TYPE_CHECKING:`` (they never run)."""
    found: set[str] = set()
    package = module if module.count(".") == 0 else module.rsplit(".", 1)[0]
    for node in _walk(ast.parse(source), type_checking):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _walk(node: ast.AST, type_checking: bool) -> Iterator[ast.AST]:
    """``ast.walk``, but past the bodies of ``if TYPE_CHECKING:`` unless ``type_checking``."""
    yield node
    for child in ast.iter_child_nodes(node):
        typing_only = isinstance(child, ast.If) and ast.unparse(child.test) in TYPE_CHECKING
        for grandchild in child.orelse if typing_only and not type_checking else [child]:
            yield from _walk(grandchild, type_checking)


def layer(module: str) -> str:
    """The layer a module of ours belongs to."""
    if module in ENTRY_POINTS or module.startswith("memnet.cli."):
        return "entry"
    for prefix in (
        "memnet.domain",
        "memnet.services",
        "memnet.api",
        "memnet.adapters.local",
        "memnet.adapters.azure",
        "memnet.adapters",
        "funchost",
    ):
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    if module == "memnet.ports" or module.startswith("memnet.ports."):
        return "memnet.ports"
    return "root"  # memnet, memnet.bootstrap, memnet.wiring, memnet.settings


ALLOWED = {
    "memnet.domain": {"memnet.domain"},
    "memnet.ports": {"memnet.domain", "memnet.ports"},
    "memnet.services": {"memnet.domain", "memnet.ports", "memnet.services"},
    "memnet.api": {"memnet.domain", "memnet.ports", "memnet.services", "memnet.api", "root"},
    "memnet.adapters": {"memnet.domain", "memnet.ports", "memnet.adapters"},
    "memnet.adapters.local": {"memnet.domain", "memnet.ports", "memnet.adapters.local"},
    "memnet.adapters.azure": {"memnet.domain", "memnet.ports", "memnet.adapters.azure"},
    "root": {
        "memnet.domain",
        "memnet.ports",
        "memnet.services",
        "memnet.adapters",
        "memnet.adapters.local",
        "memnet.adapters.azure",
        "root",
    },
    "funchost": {"funchost", "memnet.ports"},
    "entry": {
        "memnet.domain",
        "memnet.ports",
        "memnet.services",
        "memnet.api",
        "root",
        "memnet.adapters",
        "memnet.adapters.local",
        "memnet.adapters.azure",
        "funchost",
        "entry",
    },
}


def ours(name: str) -> bool:
    return name.split(".")[0] in ("memnet", "funchost", "function_app")


def violations(source: str, module: str) -> list[str]:
    """Why ``source``, as module ``module``, breaks the rule (empty if it does not)."""
    own = layer(module)
    found = imports(source, module)
    bad = [
        f"{module} ({own}) imports {name} ({layer(name)})"
        for name in sorted(found)
        if ours(name) and name != "memnet" and layer(name) not in ALLOWED[own]
    ]
    if own not in ("entry", "funchost"):
        bad += [f"{module} imports {n}" for n in found if n.startswith("azure.functions")]
    if own != "memnet.adapters.azure":
        sdks = [n for n in found if n.startswith(AZURE_SDKS)]
        if own == "funchost":
            sdks = [n for n in sdks if n != HOST_SDK and not n.startswith(HOST_SDK + ".")]
        bad += [f"{module} imports {n}" for n in sdks]
    if own == "memnet.domain":
        bad += [f"{module} does I/O via {n}" for n in found if n.split(".")[0] in IO_MODULES]
    return bad


FILES = sorted(
    [
        *ROOT.joinpath("memnet").rglob("*.py"),
        *ROOT.joinpath("funchost").rglob("*.py"),
        ROOT / "function_app.py",
    ]
)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_import_points_inward(path: Path):
    assert violations(path.read_text(), module_name(path)) == []


def test_every_module_of_the_core_is_in_a_layer():
    top = {module_name(p) for p in ROOT.joinpath("memnet").glob("*.py")}
    assert top == {
        "memnet",
        "memnet.__main__",  # ``python -m memnet``: the command line, memnet.cli (entry)
        "memnet.bootstrap",
        "memnet.wiring",  # which adapter each setting selects, for the bootstrap
        "memnet.callers",  # the bootstrap's wiring of authentication and vault secrets
        "memnet.settings",
        "memnet.ports",
        "memnet.telemetry",  # telemetry setup at bootstrap (its hooks: memnet.services)
    }


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("memnet.domain.policy", "from memnet.adapters.local.blobstore import FileBlobStore"),
        ("memnet.domain.policy", "import os"),
        ("memnet.domain.policy", "from memnet.services.documents import DocumentService"),
        ("memnet.services.documents", "from memnet.api import parsing"),
        ("memnet.services.documents", "from memnet.adapters.local import blobstore"),
        ("memnet.services.documents", "from memnet import bootstrap"),
        ("memnet.adapters.azure.queue", "from memnet.adapters.local.queue import check_body"),
        ("memnet.adapters.local.queue", "from memnet.services.events import EventService"),
        ("memnet.ports", "from memnet.services.audit import AuditLog"),
        ("memnet.bootstrap", "from memnet.api.documents import patch_document"),
        ("memnet.services.events", "from ..api import http"),
        ("funchost.server", "from memnet.api.http import ApiRequest"),
        ("memnet.domain.errors", "import azure.functions as func"),
        ("memnet.services.audit", "from azure.storage.blob import BlobClient"),
        ("funchost.blobs", "from azure.identity import DefaultAzureCredential"),
        ("funchost.server", "import azure.storage.queue"),
        ("memnet.bootstrap", "from memnet.cli import main"),
        ("memnet.services.replay", "import funchost"),
    ],
)
def test_a_planted_import_breaks_the_rule(module: str, planted: str):
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    source = path.read_text() + "\n" + planted + "\n"
    assert violations(source, module), planted


def import_graph(package: str, planted: Mapping[str, str] | None = None) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of it that it imports when it runs: lazy
    imports in functions count (they only hide a circle), ``if TYPE_CHECKING:`` ones do not,
    nor a module's imports of its own packages (``__init__`` re-exports its modules).
    ``planted``: source to add at the end of a module."""
    paths = {module_name(p): p for p in ROOT.joinpath(*package.split(".")).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        source = path.read_text() + "\n" + (planted or {}).get(module, "")
        found = imports(source, module, type_checking=False)
        graph[module] = {n for n in found if n in paths and not module.startswith(n + ".")}
    return graph


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import one another, directly or through others, sorted."""
    reached = {module: _reach(graph, module) for module in graph}
    found = {frozenset(n for n in reached[m] if m in reached[n]) for m in graph if m in reached[m]}
    return sorted(sorted(circle) for circle in found)


def _reach(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for name in graph[todo.pop()] - seen:
            seen.add(name)
            todo.append(name)
    return seen


@pytest.mark.parametrize("package", ["funchost"])
def test_no_import_circles(package: str):
    assert circles(import_graph(package)) == []


def test_a_planted_circle_is_found_unless_it_is_for_the_type_checker_only():
    lazy = "def f():\n    from funchost.dispatch import FunctionHost\n"
    assert circles(import_graph("funchost", {"funchost.mcp": lazy})) == [
        ["funchost.dispatch", "funchost.mcp"]
    ]
    typing_only = "if TYPE_CHECKING:\n    from funchost.server import Server\n"
    assert circles(import_graph("funchost", {"funchost.handler": typing_only})) == []
