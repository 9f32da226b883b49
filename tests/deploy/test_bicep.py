"""The Bicep templates, parsed with tree-sitter-bicep: no Bicep compiler or Azure can be
reached where these tests run (docs/deploy.md). Here: the grammar, module wiring, the
parameters file, azure.yaml and the Event Grid subscription; the settings and resources
against the code are in test_app_settings.py and test_resources.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

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
from tests.deploy.sources import SUBSCRIPTION, function_index

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
    (blob,) = function_index().blob_functions
    sub = parse(SUBSCRIPTION)
    default = sub.declarations("parameter")["functionName"].named_children[-1]
    assert string_value(default) == blob.name
    endpoint = string_value(sub.variable("endpoint"))
    assert "/runtime/webhooks/blobs?functionName=Host.Functions.${functionName}" in endpoint
    assert "systemKeys.blobs_extension" in text(sub.variable("blobsExtensionKey"))
    kind = "Microsoft.EventGrid/systemTopics/eventSubscriptions"
    (subscription,) = sub.resources_of_type(kind).values()
    props = body(subscription)
    assert string_value(path(props, "properties", "destination", "endpointType")) == "WebHook"
    events = path(props, "properties", "filter", "includedEventTypes").named_children
    assert [string_value(e) for e in events] == ["Microsoft.Storage.BlobCreated"]
    assert "/snapshots/" in blob.path


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


def test_azure_yaml_deploys_the_api_and_runs_the_post_provision_script() -> None:
    azure_yaml = (ROOT / "azure.yaml").read_text()
    assert re.search(
        r"^\s+api:\n\s+project: \.\n\s+language: python\n\s+host: function", azure_yaml, re.M
    )
    assert "scripts/postprovision.py" in azure_yaml
    assert (ROOT / "scripts" / "postprovision.py").exists()


def test_the_snapshot_subscription_waits_for_the_flag_the_postdeploy_hook_sets() -> None:
    module = parse(MAIN).declarations("module")["snapshotSubscription"]
    condition = next(c for c in module.named_children if c.type == "if_statement")
    assert text(condition.named_children[0]) == "(enableSnapshotSubscription)"
    values = json.loads((BICEP / "main.parameters.json").read_text())["parameters"]
    flag = re.fullmatch(r"\$\{(\w+)=false\}", values["enableSnapshotSubscription"]["value"])
    assert flag is not None
    hook = (ROOT / "scripts" / "postprovision.py").read_text()
    assert f'SUBSCRIPTION_FLAG = "{flag.group(1)}"' in hook
