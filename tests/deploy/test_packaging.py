"""The deployment package, checked by a tool made for it (issue 13 item 5).

`azure-functions-doctor` runs offline on the package as `func` / `azd` would ship it (the
files `.funcignore` keeps, plus the Bicep it reads the hosting plan and app settings from,
plus `local.settings.json` made from the example as `scripts/serve` makes it). Every failure
fails the test, and so does every warning except the few that can only describe the machine
running the check, never a deployed app (listed in NOT_APPLICABLE with the reason).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pathspec
import pytest

from scripts.preflight import funcignore, ships

ROOT = Path(__file__).resolve().parents[2]
DOCTOR = Path(sys.executable).with_name("azure-functions-doctor")

# Doctor rules whose warning describes the checking machine, not the app Azure runs.
NOT_APPLICABLE = {
    "check_venv": "an activated virtualenv on the machine running the check; Azure "
    "builds its own environment from requirements.txt (remote build)",
    "check_func_cli": "a local Azure Functions Core Tools install; the local host here is "
    "funchost, and Azure runs its own Functions host",
    "check_func_core_tools_version": "the same local Core Tools install",
    "check_native_dependency_risk": "advice to build on Linux; the deployment is a remote "
    "build (azd / Flex Consumption), which builds cryptography's wheels on the runtime's Linux",
}

# Doctor rules that cannot read this project's Bicep (it reads app settings only from
# `name: '...' value: '...'` pairs or ARM JSON; ours are object keys), so the test checks the
# template itself before accepting the warning.
CHECKED_IN_THE_TEMPLATE = {
    "check_app_insights": "APPLICATIONINSIGHTS_CONNECTION_STRING",
}

# Paths that must never ship (gitignore semantics, as the Functions tooling reads .funcignore).
MUST_EXCLUDE = [
    "tests/deploy/test_packaging.py",
    "tests/__init__.py",
    "bench/run.py",
    "node_modules/some-package/index.js",
    ".venv/bin/python",
    "venv/bin/python",
    ".git/HEAD",
    "memnet/__pycache__/settings.cpython-311.pyc",
    ".pytest_cache/v/cache/lastfailed",
    ".pytest-logs/run.log",
    ".mypy_cache/3.11/memnet.json",
    ".ruff_cache/CACHEDIR.TAG",
    ".hypothesis/examples/x",
    ".memnet/queue.sqlite3",
    ".azurite/__blobstorage__/x",
    ".azure/env/.env",
    ".ci/run",
    "scripts/serve",
    "bicep/main.bicep",
    "docs/deploy.md",
    "funchost/__init__.py",
    "local.settings.json",
    "local.settings.json.example",
    "callers.dev.json",
    "requirements-dev.txt",
    "package.json",
    "package-lock.json",
]

# What the app needs at runtime, beyond every file under memnet/ and profiles/.
MUST_INCLUDE = ["function_app.py", "host.json", "requirements.txt", "callers.json"]


def _package_files(spec: pathspec.GitIgnoreSpec) -> list[str]:
    kept: list[str] = []
    for folder, dirs, files in os.walk(ROOT):
        rel_folder = Path(folder).relative_to(ROOT).as_posix()
        prefix = "" if rel_folder == "." else rel_folder + "/"
        dirs[:] = [d for d in dirs if not spec.match_file(prefix + d + "/")]
        kept.extend(prefix + f for f in files if not spec.match_file(prefix + f))
    return sorted(kept)


@pytest.mark.parametrize("relative", MUST_EXCLUDE)
def test_funcignore_keeps_out(relative: str) -> None:
    assert not ships(relative), f".funcignore ships {relative}"


def test_funcignore_keeps_what_the_app_runs() -> None:
    needed = list(MUST_INCLUDE)
    for folder in ("memnet", "profiles"):
        needed += [
            p.relative_to(ROOT).as_posix()
            for p in (ROOT / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        ]
    assert any(n.startswith("profiles/") for n in needed)
    ignored = [n for n in needed if not ships(n)]
    assert ignored == [], f".funcignore drops files the app needs: {ignored}"


def test_function_app_imports_nothing_that_is_not_shipped() -> None:
    """Every module of this repository that importing function_app loads is in the package."""
    code = (
        "import json, sys, function_app\n"
        "files = [getattr(m, '__file__', None) or '' for m in list(sys.modules.values())]\n"
        "print(json.dumps(files))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    mine = []
    for file in json.loads(out):
        path = Path(file).resolve() if file else None
        if path is not None and path.is_relative_to(ROOT) and ".venv" not in path.parts:
            mine.append(path.relative_to(ROOT).as_posix())
    assert "memnet/bootstrap.py" in mine
    assert [m for m in mine if not ships(m)] == []


_CONNECTIONS = """
import json, function_app
names = set()
for function in function_app.app.get_functions():
    for binding in function.get_bindings():
        names.add(binding.get_dict_repr().get("connection") or "")
print(json.dumps(sorted(names - {""})))
"""


@functools.cache
def _declared_connections() -> frozenset[str]:
    """Every binding's `connection=`, from a fresh app: get_functions() runs once per app."""
    out = subprocess.run(
        [sys.executable, "-c", _CONNECTIONS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return frozenset(json.loads(out))


def test_every_binding_connection_is_in_the_local_settings_example() -> None:
    declared = _declared_connections()
    assert {"MEMNET_QUEUE", "MEMNET_BLOB"} <= declared
    example = ROOT / "local.settings.json.example"
    values = json.loads(example.read_text(encoding="utf-8"))["Values"]
    for name in sorted(declared | {"AzureWebJobsStorage"}):
        assert name in values or any(k.startswith(name + "__") for k in values), name
    assert values["MEMNET_STORAGE"] == "local", "the example is the embedded first session"


def _bicep_text() -> str:
    files = sorted((ROOT / "bicep").rglob("*.bicep"))
    return "\n".join(p.read_text(encoding="utf-8") for p in files)


def test_every_binding_connection_is_identity_based_in_the_template() -> None:
    """The doctor resolves connections from local settings only (it cannot read our Bicep)."""
    bicep = _bicep_text()
    for name in sorted(_declared_connections() | {"AzureWebJobsStorage"}):
        keys = set(re.findall(rf"^\s*{re.escape(name)}__(\w+)\s*:", bicep, re.MULTILINE))
        assert "credential" in keys, f"{name}: no {name}__credential app setting in bicep/"
        assert keys & {"accountName", "queueServiceUri", "blobServiceUri"}, name
        assert not re.search(rf"^\s*{re.escape(name)}\s*:", bicep, re.MULTILINE), (
            f"{name} is also set as a connection string (shared key)"
        )


def test_the_python_runtime_is_pinned_in_the_template() -> None:
    runtime = re.search(r"runtime:\s*\{\s*name:\s*'(\w+)'\s*version:\s*'([\d.]+)'", _bicep_text())
    assert runtime is not None and runtime.groups() == ("python", "3.11")


def test_host_json_pins_the_extension_bundle_to_one_major_version() -> None:
    host = json.loads((ROOT / "host.json").read_text(encoding="utf-8"))
    assert host["version"] == "2.0"
    bundle = host["extensionBundle"]
    assert bundle["id"] == "Microsoft.Azure.Functions.ExtensionBundle"
    version = bundle["version"].replace(" ", "")
    assert version.startswith("[") and version.endswith(")"), version
    low, high = version[1:-1].split(",")
    major = int(low.split(".")[0])
    assert high == f"{major + 1}.0.0", f"bundle range spans more than major {major}: {version}"


@pytest.fixture(scope="module")
def doctor_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    assert DOCTOR.exists(), "pip install -r requirements-dev.txt (azure-functions-doctor)"
    stage = tmp_path_factory.mktemp("package")
    for relative in _package_files(funcignore()):
        target = stage / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    # The doctor reads the hosting plan, runtime and app settings from the infrastructure.
    shutil.copytree(ROOT / "bicep", stage / "bicep")
    shutil.copy2(ROOT / ".funcignore", stage / ".funcignore")
    shutil.copy2(ROOT / "local.settings.json.example", stage / "local.settings.json")
    report = stage.parent / (stage.name + "-doctor.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMNET_")}
    run = subprocess.run(
        [
            str(DOCTOR),
            "doctor",
            "--path",
            str(stage),
            "--profile",
            "full",
            "--target-python",
            "3.11",
            "--hosting-plan",
            "flex-consumption",
            "--deployment-mode",
            "remote-build",
            "--format",
            "json",
            "--output",
            str(report),
        ],
        cwd=stage,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert report.exists(), f"azure-functions-doctor wrote no report: {run.stderr[-2000:]}"
    return json.loads(report.read_text(encoding="utf-8"))


def _items(report: dict) -> list[dict]:
    return [item for section in report["results"] for item in section["items"]]


def test_doctor_finds_no_failure_and_no_applicable_warning(doctor_report: dict) -> None:
    assert doctor_report["metadata"]["programming_model"] == "v2"
    findings = [
        f"{item['rule_id']} ({item['status']}): {item['value']}"
        for item in _items(doctor_report)
        if item["status"] not in ("pass", "skip") and item["rule_id"] not in NOT_APPLICABLE
    ]
    bicep = _bicep_text()
    for rule_id, setting in CHECKED_IN_THE_TEMPLATE.items():
        if re.search(rf"^\s*{setting}\s*:", bicep, re.MULTILINE):
            findings = [f for f in findings if not f.startswith(rule_id + " ")]
    assert findings == []


@pytest.mark.parametrize(
    "rule_id",
    ["check_binding_connection_resolution", "check_funcignore", "check_unused_files"],
)
def test_doctor_passes_the_packaging_rules(doctor_report: dict, rule_id: str) -> None:
    statuses = {item["rule_id"]: item["status"] for item in _items(doctor_report)}
    assert statuses.get(rule_id) == "pass", statuses.get(rule_id)
