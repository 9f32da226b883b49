"""The Bicep templates, parsed with tree-sitter-bicep: no Bicep compiler or Azure can be
reached where these tests run (docs/deploy.md). Here: the grammar, module wiring, the
parameters file, azure.yaml and the Event Grid subscription; the settings and resources
against the code are in test_app_settings.py and test_resources.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scripts import azd_hooks
from tests.deploy.bicep_tree import (
    BICEP,
    MAIN,
    ROOT,
    Node,
    bicep_files,
    body,
    parse,
    path,
    properties,
    string_value,
    text,
    walk,
)
from tests.deploy.sources import function_index

# -- the grammar --------------------------------------------------------------------------


@pytest.mark.parametrize("bicep", bicep_files(), ids=lambda p: str(p.relative_to(BICEP)))
def test_every_bicep_file_parses_with_no_error_or_missing_node(bicep: Path) -> None:
    bad = [
        f"{n.type} at line {n.start_point[0] + 1}"
        for n in walk(parse(bicep).root)
        if n.type == "ERROR" or n.is_missing
    ]
    assert bad == []


# -- Event Grid --------------------------------------------------------------------------------


def test_snapshot_events_go_to_the_snapshot_blob_trigger() -> None:
    """The subscription the postdeploy hook creates targets the app's blob trigger, only
    for what its path matches (issue 26 item 9: it is no longer in the template)."""
    (blob,) = function_index().blob_functions
    assert blob.name == azd_hooks.BLOB_FUNCTION
    body = azd_hooks.subscription_body("https://app.example/", "k", "memnet")["properties"]
    endpoint = body["destination"]["properties"]["endpointUrl"]
    assert endpoint.startswith(
        f"https://app.example/runtime/webhooks/blobs?functionName=Host.Functions.{blob.name}&"
    )
    assert body["destination"]["endpointType"] == "WebHook"
    assert body["filter"]["includedEventTypes"] == ["Microsoft.Storage.BlobCreated"]
    container, _, template = blob.path.partition("/")
    assert container == "%MEMNET_BLOB_CONTAINER%"
    prefix = template.partition("{")[0]  # "tenants/"
    assert (
        body["filter"]["subjectBeginsWith"]
        == f"/blobServices/default/containers/memnet/blobs/{prefix}"
    )
    assert template.endswith(body["filter"]["subjectEndsWith"])
    (contains,) = body["filter"]["advancedFilters"]
    assert all(f in template for f in contains["values"])


def test_no_template_declares_the_subscription_the_hook_owns() -> None:
    """Created by the template it raced the host restart the same provision causes, and
    a second owner would fight the hook over its endpoint."""
    kind = "Microsoft.EventGrid/systemTopics/eventSubscriptions"
    assert [f.name for f in bicep_files() if parse(f).resources_of_type(kind)] == []
    assert "listKeys(" not in "".join(f.read_text() for f in bicep_files())


# -- modules and parameters -----------------------------------------------------------------------


def module_references() -> list[tuple[Path, str, Path, Node]]:
    """(file, module name, module file, declaration) of every module declaration."""
    found = []
    for file in bicep_files():
        for name, node in parse(file).declarations("module").items():
            target = (file.parent / string_value(node.named_children[1])).resolve()
            found.append((file, name, target, node))
    return found


def test_every_module_file_exists() -> None:
    assert [str(t) for _, _, t, _ in module_references() if not t.exists()] == []


def test_module_params_are_declared_and_required_ones_passed() -> None:
    for _file, name, target, node in module_references():
        module = parse(target)
        passed = set(properties(path(body(node), "params")))
        assert passed <= set(module.declarations("parameter")), name
        assert module.required_params() <= passed, name


def test_module_outputs_used_are_declared() -> None:
    for file in bicep_files():
        modules = {n: t for f, n, t, _ in module_references() if f == file}
        for node in walk(parse(file).root):
            if node.type != "member_expression" or not text(node).count(".outputs."):
                continue
            owner, _, output = text(node).partition(".outputs.")
            if owner in modules:
                assert output in parse(modules[owner]).declarations("output"), text(node)


def test_parameters_file_names_declared_params_and_every_required_one() -> None:
    values = json.loads((BICEP / "main.parameters.json").read_text())["parameters"]
    declared = parse(MAIN).declarations("parameter")
    assert set(values) <= set(declared)
    assert parse(MAIN).required_params() <= set(values)


def test_azure_yaml_deploys_the_api_and_runs_each_hook() -> None:
    azure_yaml = (ROOT / "azure.yaml").read_text()
    assert re.search(
        r"^\s+api:\n\s+project: \.\n\s+language: python\n\s+host: function", azure_yaml, re.M
    )
    expected = {
        "preprovision": "check",
        "postprovision": "search-index",
        "predeploy": "check",
        "postdeploy": "snapshot-events",
    }
    for hook, command in expected.items():
        block = re.search(rf"^  {hook}:\n((?:    .*\n)+)", azure_yaml, re.M)
        assert block is not None, hook
        runs = re.findall(r"run: (.*)", block.group(1))
        assert len(runs) == 2 and all(r.endswith(f"-m scripts.azd_hooks {command}") for r in runs)
        assert command in azd_hooks.COMMANDS


def test_every_name_a_hook_reads_is_set_by_azd_or_the_template() -> None:
    """A hook reading a name nobody sets fails only on a real deployment."""
    hooks = "".join((ROOT / "scripts" / n).read_text() for n in ("azd_hooks.py", "preflight.py"))
    read = set(re.findall(r"env(?:\.get\(|\[)[\"'](\w+)[\"']", hooks))
    outputs = set(parse(MAIN).declarations("output"))
    values = json.loads((BICEP / "main.parameters.json").read_text())["parameters"]
    from_parameters = {
        m for v in values.values() for m in re.findall(r"\$\{(\w+)", str(v["value"]))
    }
    azd_sets = {"AZURE_SUBSCRIPTION_ID", "AZURE_ENV_NAME", "AZURE_LOCATION", "AZURE_PRINCIPAL_ID"}
    assert "AZURE_FUNCTION_APP_NAME" in read and "MEMNET_EVENTGRID_TOPIC" in read
    assert read - outputs - from_parameters - azd_sets == set()
