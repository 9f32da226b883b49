"""Layout shows the architecture (CONVENTIONS principle 1; ARCHITECTURE.md section 1).

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
  (``function_app.py``, ``funchost/__main__.py``) and the host itself.

Also: ``azure.functions`` only in entry points and the host; Azure SDKs only in
``memnet.adapters.azure``, but for ``azure.storage.blob`` in the host, which hands a blob
function typed as the SDK's ``BlobClient`` that client, as the Functions worker does.
The rule runs over ``memnet/``, ``funchost/`` and ``function_app.py``;
``test_a_planted_import_breaks_the_rule`` shows it failing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
AZURE_SDKS = ("azure.storage", "azure.identity", "azure.core", "azure.search", "azure.keyvault")
IO_MODULES = frozenset({"os", "pathlib", "socket", "sqlite3", "shutil", "subprocess", "io"})
ENTRY_POINTS = frozenset({"function_app", "funchost.__main__"})
HOST_SDK = "azure.storage.blob"  # funchost/blobs.py: the SDK-type binding's BlobClient


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(source: str, module: str) -> set[str]:
    """Every module ``source`` imports, absolute; ``from x import y`` counts ``x.y`` too."""
    found: set[str] = set()
    package = module if module.count(".") == 0 else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
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


def layer(module: str) -> str:
    """The layer a module of ours belongs to."""
    if module in ENTRY_POINTS:
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
        "memnet.__main__",  # ``python -m memnet``: the core's commands (root layer)
        "memnet.commands",  # its governance commands: sweep, compact, forget, hold
        "memnet.bootstrap",
        "memnet.container",  # the services bootstrap wires, as handlers receive them
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
    ],
)
def test_a_planted_import_breaks_the_rule(module: str, planted: str):
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    source = path.read_text() + "\n" + planted + "\n"
    assert violations(source, module), planted
