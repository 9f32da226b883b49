"""The resources of the template against the code: queues and container, the security
settings of storage, search and vault, role assignments, and the spec 19.4 alerts and the
dashboard over the metrics the code emits."""

from __future__ import annotations

import re
from collections.abc import Mapping

from memnet.services.compaction.service import COMPACT_QUEUE
from memnet.services.exports.service import EXPORT_QUEUE
from memnet.services.forget.ledger import FORGET_QUEUE
from memnet.services.replay.writes import REPLAY_QUEUE
from memnet.services.search.index import INDEX_QUEUE
from memnet.settings import Settings
from tests.deploy.bicep_tree import (
    BICEP,
    MAIN,
    BicepFile,
    Node,
    body,
    identifiers,
    parse,
    path,
    properties,
    string_value,
    text,
    walk,
)
from tests.deploy.sources import (
    ALERTS,
    METRICS,
    ROLES,
    STORAGE,
    WORKBOOK,
    function_index,
)

# What the code needs from Azure RBAC -> who needs it, the built-in role, its global id.
ROLE_NEEDS = {
    "blob data, host storage, blob trigger, deployment package": (
        "identity",
        "Storage Blob Data Owner",
        "b7e6dc6d-f1e8-4753-8033-0f276bb0955b",
    ),
    "queue send, receive, delete, poison": (
        "identity",
        "Storage Queue Data Contributor",
        "974c5e8b-45b9-4653-ba55-5f855dd0fb88",
    ),
    "host diagnostic events (Table storage behind AzureWebJobsStorage)": (
        "identity",
        "Storage Table Data Contributor",
        "0a9a7e1f-b9d0-4cc4-a60d-0319b160aaa3",
    ),
    "search documents": (
        "identity",
        "Search Index Data Contributor",
        "8ebe5a00-799e-43f5-93ac-243d3dce84a7",
    ),
    "snapshot key wrap and unwrap": (
        "identity",
        "Key Vault Crypto Service Encryption User",
        "e147488a-f6f5-4113-8e2d-b22465e65bf6",
    ),
    "secrets from MEMNET_KEYVAULT_URL": (
        "identity",
        "Key Vault Secrets User",
        "4633458b-17de-408a-b874-0445c86b69e6",
    ),
    "telemetry with Entra auth": (
        "identity",
        "Monitoring Metrics Publisher",
        "3913510d-42f4-4e42-8a64-420c390055eb",
    ),
    "post-provision index creation": (
        "deployer",
        "Search Service Contributor",
        "7ca78c08-252a-4471-8644-bb5ff32d4ba0",
    ),
}

# -- storage --------------------------------------------------------------------------------


def test_every_queue_the_code_uses_and_its_poison_queue_exists() -> None:
    index = function_index()
    used = {INDEX_QUEUE, REPLAY_QUEUE, COMPACT_QUEUE, FORGET_QUEUE, EXPORT_QUEUE}
    used |= {f.queue_name.removesuffix("-poison") for f in index.queue_functions}
    declared = {string_value(n) for n in parse(STORAGE).variable("queueNames").named_children}
    assert declared == used | {f"{q}-poison" for q in used}


def test_the_blob_container_is_the_code_default_and_is_created() -> None:
    default = parse(MAIN).declarations("parameter")["blobContainerName"].named_children[-1]
    assert string_value(default) == Settings().blob_container
    storage = parse(STORAGE).resources_of_type(
        "Microsoft.Storage/storageAccounts/blobServices/containers"
    )
    assert text(properties(body(storage["dataContainer"]))["name"]) == "containerName"
    assert "containerName" in parse(STORAGE).declarations("parameter")


def test_storage_denies_shared_keys_and_public_blobs() -> None:
    account = parse(STORAGE).resources_of_type("Microsoft.Storage/storageAccounts@")["account"]
    props = properties(path(body(account), "properties"))
    assert text(props["allowSharedKeyAccess"]) == "false"
    assert text(props["allowBlobPublicAccess"]) == "false"
    assert string_value(props["minimumTlsVersion"]) == "TLS1_2"


def test_blob_soft_delete_is_one_parameter_for_the_account_and_the_forget_receipts() -> None:
    """What the account keeps recoverable after a delete is what a forget receipt reports
    (recoverable_until): one parameter sets both, and 0 turns soft delete off."""
    main = parse(MAIN)
    assert text(main.declarations("parameter")["blobSoftDeleteDays"].named_children[-1]) == "7"
    settings = properties(main.variable("memnetSettings"))
    assert text(settings["MEMNET_BLOB_SOFT_DELETE_DAYS"]) == "string(blobSoftDeleteDays)"
    passed = properties(path(body(main.declarations("module")["storage"]), "params"))
    assert text(passed["softDeleteDays"]) == "blobSoftDeleteDays"
    service = parse(STORAGE).resources_of_type("Microsoft.Storage/storageAccounts/blobServices@")
    policy = text(path(body(service["blobService"]), "properties", "deleteRetentionPolicy"))
    assert policy.startswith("softDeleteDays > 0 ?") and "days: softDeleteDays" in policy
    assert "enabled: false" in policy


def test_search_and_vault_allow_only_entra_and_rbac() -> None:
    search = parse(BICEP / "modules" / "search.bicep").resources_of_type("Microsoft.Search")
    assert text(path(body(search["search"]), "properties", "disableLocalAuth")) == "true"
    vault = parse(BICEP / "modules" / "keyvault.bicep").resources_of_type(
        "Microsoft.KeyVault/vaults@"
    )
    props = properties(path(body(vault["vault"]), "properties"))
    for flag in ("enableRbacAuthorization", "enableSoftDelete", "enablePurgeProtection"):
        assert text(props[flag]) == "true"


# -- roles ------------------------------------------------------------------------------------


def assignments() -> set[tuple[str, str]]:
    """(principal parameter, role id) of every role assignment in roles.bicep."""
    roles = parse(ROLES)
    ids = {name: string_value(v) for name, v in properties(roles.variable("roles")).items()}
    found = set()
    for node in roles.resources_of_type("Microsoft.Authorization/roleAssignments").values():
        props = properties(path(body(node), "properties"))
        role = re.fullmatch(r".*roles\.(\w+)\)", text(props["roleDefinitionId"]))
        assert role is not None, text(props["roleDefinitionId"])
        found.add((text(props["principalId"]), ids[role.group(1)]))
    return found


def test_every_role_the_code_needs_is_assigned_and_nothing_more() -> None:
    principal = {"identity": "identityPrincipalId", "deployer": "deployerPrincipalId"}
    needed = {(principal[who], role) for who, _name, role in ROLE_NEEDS.values()}
    assert assignments() == needed


def test_every_role_id_is_named_in_the_comment_above_it() -> None:
    names = {role: name for _who, name, role in ROLE_NEEDS.values()}
    for prop in parse(ROLES).variable("roles").named_children:
        if prop.type != "object_property":
            continue
        comment: list[str] = []
        sibling = prop.prev_named_sibling
        while sibling is not None and sibling.type == "comment":
            comment.insert(0, text(sibling))
            sibling = sibling.prev_named_sibling
        role = string_value(prop.named_children[-1])
        assert names[role] in " ".join(comment), role


def test_roles_go_to_the_app_identity_and_the_deploying_principal() -> None:
    passed = properties(path(body(parse(MAIN).declarations("module")["roles"]), "params"))
    assert text(passed["identityPrincipalId"]) == "identity.outputs.principalId"
    assert text(passed["deployerPrincipalId"]) == "principalId"


# -- alerts and dashboard -------------------------------------------------------------------------


def query_strings(node: Node, file_vars: Mapping[str, Node]) -> list[str]:
    """The strings under ``node``, and those of the file's variables it refers to."""
    strings = [string_value(n) for n in walk(node) if n.type == "string"]
    return strings + [string_value(file_vars[i]) for i in identifiers(node) if i in file_vars]


def metric_names(node: Node, file_vars: Mapping[str, Node]) -> set[str]:
    """Metric names in ``Name == "..."`` / ``Name in (...)`` of the query strings."""
    names: set[str] = set()
    for query in query_strings(node, file_vars):
        names.update(re.findall(r'Name == "([^"]+)"', query))
        for group in re.findall(r"Name in \(([^)]*)\)", query):
            names.update(re.findall(r'"([^"]+)"', group))
    return names


def string_vars(file: BicepFile) -> dict[str, Node]:
    """The file's variables whose value is a string literal."""
    values = {name: file.variable(name) for name in file.declarations("variable")}
    return {name: value for name, value in values.items() if value.type == "string"}


def criteria(rule: Node) -> list[Node]:
    return list(path(body(rule), "properties", "criteria", "allOf").named_children)


def alert_rules() -> dict[str, Node]:
    return parse(ALERTS).resources_of_type("Microsoft.Insights/scheduledQueryRules")


def test_every_alert_query_names_only_metrics_the_code_emits() -> None:
    file_vars = string_vars(parse(ALERTS))
    for name, rule in alert_rules().items():
        (criterion,) = criteria(rule)
        names = metric_names(properties(criterion)["query"], file_vars)
        assert names and names <= METRICS, name


def test_the_spec_alerts_exist_with_thresholds_as_main_parameters() -> None:
    alerts, main = parse(ALERTS), parse(MAIN)
    expected = {
        "etagConflictRate": ("memnet.patch.outcomes", "etagConflictRateThreshold"),
        "validationFailures": ("memnet.patch.outcomes", "validationFailureThreshold"),
        "replayBacklogAge": ("memnet.replay.backlog_age", "replayBacklogAgeSeconds"),
        "indexLag": ("memnet.index.lag", "indexLagSeconds"),
    }
    assert set(alert_rules()) == set(expected)
    passed = properties(path(body(main.declarations("module")["alerts"]), "params"))
    for name, (metric, threshold) in expected.items():
        (criterion,) = criteria(alert_rules()[name])
        assert threshold in identifiers(properties(criterion)["threshold"])
        assert text(passed[threshold]) == threshold and threshold in main.declarations("parameter")
        assert metric in metric_names(properties(criterion)["query"], string_vars(alerts))
    outcomes = {"etagConflictRate": "etag_mismatch", "validationFailures": "validation_failed"}
    for name, outcome in outcomes.items():
        (criterion,) = criteria(alert_rules()[name])
        queries = query_strings(properties(criterion)["query"], string_vars(alerts))
        assert any(f'"{outcome}"' in query for query in queries), name
    assert "etagConflictMinPatches" in main.declarations("parameter")


def test_no_alert_rule_can_fail_the_provision_that_creates_its_workspace() -> None:
    """The workspace is created by the same deployment and has no AppMetrics rows yet:
    a rule that validates its query on creation can fail the whole provision (issue 26
    item 7). The queries are checked against the code's metric names above instead."""
    for name, rule in alert_rules().items():
        assert text(path(body(rule), "properties", "skipQueryValidation")) == "true", name


def test_the_code_emits_the_design_metrics() -> None:
    """The instrument names the telemetry module creates are the design's, so every
    alert and dashboard panel reads a metric the code emits."""
    from memnet.services import telemetry

    assert set(telemetry.METRICS) == METRICS


def test_the_dashboard_shows_every_metric() -> None:
    workbook = parse(WORKBOOK)
    assert metric_names(workbook.variable("panels"), {}) == METRICS


# -- diagnostics and private networking ------------------------------------------------------


def resource_properties(node: Node) -> dict[str, Node]:
    """The ``properties`` object of a resource declaration, empty when it has none."""
    value = properties(body(node)).get("properties")
    return properties(value) if value is not None and value.type == "object" else {}


MODULES = BICEP / "modules"


def test_storage_vault_search_and_the_app_send_diagnostics_to_the_workspace() -> None:
    expected = {
        "storage.bicep": {"blobService", "queueService"},
        "keyvault.bicep": {"vault"},
        "search.bicep": {"search"},
        "functionapp.bicep": {"site"},
    }
    for name, scopes in expected.items():
        settings = parse(MODULES / name).resources_of_type("Microsoft.Insights/diagnosticSettings")
        found = {text(properties(body(node))["scope"]) for node in settings.values()}
        assert found == scopes, name
        for node in settings.values():
            assert text(path(body(node), "properties", "workspaceId")) == "workspaceId"


def test_private_networking_turns_public_access_off_and_adds_every_endpoint() -> None:
    for name in ("storage.bicep", "search.bicep", "keyvault.bicep"):
        module = parse(MODULES / name)
        (access,) = (
            props["publicNetworkAccess"]
            for node in module.declarations("resource").values()
            if "publicNetworkAccess" in (props := resource_properties(node))
        )
        assert text(access).startswith("enablePrivateNetworking ?"), name
    endpoints = parse(MAIN).variable("privateEndpoints").named_children
    groups = {string_value(properties(e)["groupId"]) for e in endpoints}
    assert groups == {"blob", "queue", "searchService", "vault"}
    app = properties(path(body(parse(MAIN).declarations("module")["functionApp"]), "params"))
    assert "enablePrivateNetworking" in text(app["subnetId"])
