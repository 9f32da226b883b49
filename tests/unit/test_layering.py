"""Layout shows the architecture (docs/architecture.md, "The layers").

The layers are packages and every import of ours points inward:

- ``memnet.domain`` imports nothing of ours but ``memnet.domain``, and no I/O modules;
- ``memnet.ports`` imports the domain only;
- ``memnet.services`` imports the domain, the ports and other services;
- ``memnet.api`` imports services, domain, ports and the root's values (``memnet.settings``,
  ``memnet.container``), never ``memnet.bootstrap``: the entry points hand it the
  services (tests/unit/test_api_context.py);
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
``test_a_planted_import_breaks_the_rule`` shows it failing.

And no import circles among the modules of ``memnet/`` or ``funchost/`` (docs/architecture.md, "The
layers"): within a layer too, each module's imports point one way, so any module can be
imported first and a type the rules need lives below them (``memnet.domain.bindings``
below the rule parsers, below ``memnet.domain.profiles``).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AZURE_SDKS = ("azure.storage", "azure.identity", "azure.core", "azure.search", "azure.keyvault")
IO_MODULES = frozenset({"os", "pathlib", "socket", "sqlite3", "shutil", "subprocess", "io"})
ENTRY_POINTS = frozenset({"function_app", "memnet.__main__", "memnet.cli"})
HOST_SDK = "azure.storage.blob"  # funchost/blobs.py: the SDK-type binding's BlobClient


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str) -> set[str]:
    """Every module ``source`` imports, absolute; ``from x import y`` counts ``x.y`` too."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node, module)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def absolute(node: ast.ImportFrom, module: str) -> str:
    """The module ``from … import`` names, a relative one made absolute."""
    if not node.level:
        return node.module or ""
    package = module if module.count(".") == 0 else module.rsplit(".", 1)[0]
    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*anchor, node.module] if node.module else anchor)


def layer(module: str) -> str:
    """The layer a module of ours belongs to."""
    if module in ENTRY_POINTS or module.startswith("memnet.cli."):
        return "entry"
    for prefix in (
        "memnet.domain",
        "memnet.services",
        "memnet.api",
        "memnet.adapters.local",
        "memnet.adapters.memory",
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
    "memnet.adapters.memory": {"memnet.domain", "memnet.ports", "memnet.adapters.memory"},
    "memnet.adapters.azure": {"memnet.domain", "memnet.ports", "memnet.adapters.azure"},
    "root": {
        "memnet.domain",
        "memnet.ports",
        "memnet.services",
        "memnet.adapters",
        "memnet.adapters.local",
        "memnet.adapters.memory",
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
        "memnet.adapters.memory",
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
        "memnet.container",  # the services bootstrap wires, as handlers receive them
        "memnet.wiring",  # which adapter each setting selects, for the bootstrap
        "memnet.auth_wiring",  # the bootstrap's wiring of authentication and vault secrets
        "memnet.settings",
        "memnet.local_settings",  # local.settings.json into the environment, for the commands
        "memnet.ports",
        "memnet.telemetry_setup",  # telemetry setup at bootstrap (its hooks: memnet.services)
    }


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("memnet.domain.policy", "from memnet.adapters.local.blobstore import FileBlobStore"),
        ("memnet.domain.policy", "import os"),
        ("memnet.domain.policy", "from memnet.services.documents.service import DocumentService"),
        ("memnet.services.documents.service", "from memnet.api import parsing"),
        ("memnet.services.documents.service", "from memnet.adapters.local import blobstore"),
        ("memnet.services.documents.service", "from memnet import bootstrap"),
        ("memnet.adapters.azure.queue", "from memnet.adapters.local.queue import check_body"),
        ("memnet.adapters.local.queue", "from memnet.services.events.service import EventService"),
        ("memnet.ports", "from memnet.services.documents.audit import AuditLog"),
        ("memnet.bootstrap", "from memnet.api.documents import patch_document"),
        ("memnet.services.events.service", "from ...api import http"),
        ("funchost.server", "from memnet.api.http import ApiRequest"),
        ("memnet.domain.errors", "import azure.functions as func"),
        ("memnet.services.documents.audit", "from azure.storage.blob import BlobClient"),
        ("funchost.blobs", "from azure.identity import DefaultAzureCredential"),
        ("funchost.server", "import azure.storage.queue"),
        ("memnet.bootstrap", "from memnet.cli import main"),
        ("memnet.services.replay.worker", "import funchost"),
    ],
)
def test_a_planted_import_breaks_the_rule(module: str, planted: str):
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    source = path.read_text() + "\n" + planted + "\n"
    assert violations(source, module), planted


def module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports run when a module loads: at its top level, in ``if`` (``if
    TYPE_CHECKING:`` too: a type checker follows it, and a circle there is one a reader
    follows as well) and ``try`` blocks, never in a function."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If):
            yield from module_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            handlers = [s for h in node.handlers for s in h.body]
            yield from module_level(node.body + handlers + node.orelse + node.finalbody)


def loads(source: str, module: str, modules: Collection[str]) -> set[str]:
    """The ``modules`` that ``source`` imports at module level; ``from x import y`` is
    module ``x.y`` if there is one, else ``x``."""
    found: set[str] = set()
    for node in module_level(ast.parse(source).body):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        base = absolute(node, module)
        found.update(
            f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names
        )
    return {name for name in found if name in modules and name != module}


def import_graph(
    planted: Mapping[str, str] | None = None, package: str = "memnet"
) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of it that it loads; ``planted`` adds a
    line to a module's source."""
    sources = {module_name(p): p.read_text() for p in ROOT.joinpath(package).rglob("*.py")}
    for module, line in (planted or {}).items():
        sources[module] += "\n" + line + "\n"
    return {module: loads(source, module, sources) for module, source in sources.items()}


def circles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import one another, directly or not, sorted."""
    reach = {module: reachable(graph, module) for module in graph}
    found = {
        tuple(sorted(other for other in reach[module] if module in reach[other]))
        for module in graph
        if module in reach[module]
    }
    return sorted(map(list, found))


def reachable(graph: Mapping[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph[start])
    while todo:
        module = todo.pop()
        if module not in seen:
            seen.add(module)
            todo.extend(graph[module])
    return seen


@pytest.mark.parametrize("package", ["memnet", "funchost"])
def test_no_modules_import_one_another_in_a_circle(package: str):
    assert circles(import_graph(package=package)) == []


@pytest.mark.parametrize(
    "planted",
    [
        "from memnet.domain.bindings import Binding",
        "from memnet.domain import bindings",
        "if TYPE_CHECKING:\n    from memnet.domain.bindings import Binding",
        "try:\n    import memnet.domain.bindings\nexcept ImportError:\n    pass",
    ],
)
def test_a_planted_import_makes_a_circle(planted: str):
    found = circles(import_graph({"memnet.domain.envelope": planted}))
    assert [c for c in found if {"memnet.domain.envelope", "memnet.domain.bindings"} <= set(c)]


def test_an_import_inside_a_function_makes_no_circle():
    planted = "def later():\n    from memnet.domain.bindings import Binding"
    assert circles(import_graph({"memnet.domain.envelope": planted})) == []
