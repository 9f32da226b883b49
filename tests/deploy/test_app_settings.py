"""The app settings of the template against the code: every setting
``Settings.from_env`` reads, every trigger connection and ``%NAME%``, the telemetry
settings, the runtime pin of Flex Consumption, and the snapshot trigger's SDK-type binding
as the Azure worker resolves it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from types import SimpleNamespace

import azurefunctions.extensions.bindings.blob as blob
import pytest
from azure.identity import ManagedIdentityCredential
from azurefunctions.extensions.base import Datum, get_binding_registry
from azurefunctions.extensions.bindings.blob.utils import using_user_managed_identity

from memnet.settings import Settings
from tests.conftest import REPO
from tests.deploy.bicep_tree import (
    MAIN,
    ROOT,
    Node,
    body,
    parse,
    path,
    properties,
    string_value,
    text,
)
from tests.deploy.sources import FUNCTION_APP, app_settings, function_index

# Settings the code reads that the template leaves to their code defaults, each on purpose.
DEFAULTED = {
    "MEMNET_DATA_DIR": "embedded adapters only; storage, search and keys are azure",
    "MEMNET_LOCAL_FSYNC": "embedded storage only",
    "MEMNET_KEY_FILE": "local keys only; MEMNET_KEYS=azure uses the Key Vault key",
    "MEMNET_SEARCH_MAX_POSTINGS": "embedded search index only",
    "MEMNET_BLOB": "a connection string; identity-based MEMNET_BLOB__* is set instead",
    "MEMNET_QUEUE": "a connection string; identity-based MEMNET_QUEUE__* is set instead",
    "MEMNET_SEARCH_API_KEY": "search local auth is disabled; the identity is used",
    "MEMNET_API_KEY_PEPPER": "a secret: read from the vault (MEMNET_KEYVAULT_URL) if apikeys",
    "MEMNET_OPENAI_API_KEY": "a secret: read from the vault when extractor is openai",
    "MEMNET_OPENAI_BASE_URL": "extractor openai only: extraAppSettings",
    "MEMNET_OPENAI_MODEL": "extractor openai only: extraAppSettings",
    "MEMNET_AZURE_OPENAI_ENDPOINT": "extractor azure-openai only: extraAppSettings",
    "MEMNET_AZURE_OPENAI_DEPLOYMENT": "extractor azure-openai only: extraAppSettings",
    "MEMNET_AZURE_OPENAI_API_VERSION": "code default is the supported API version",
    "MEMNET_EXTRACTOR_TIMEOUT_SECONDS": "tuning; code default",
    "MEMNET_EXTRACTOR_MAX_RETRIES": "tuning; code default",
    "MEMNET_EXTRACTOR_MAX_TOKENS": "tuning; code default",
    "MEMNET_EXTRACTOR_MAX_PROMPT_CHARS": "tuning; code default",
    "MEMNET_EXTRACTOR_TOKEN_PARAMETER": "model-specific; extraAppSettings when needed",
    "MEMNET_IDEMPOTENCY_TTL_SECONDS": "spec default (24 h)",
    "MEMNET_IDEMPOTENCY_LEASE_SECONDS": "spec default",
    "MEMNET_MAX_BODY_BYTES": "spec default (1 MiB)",
    "MEMNET_CONTEXT_INDEX_TTL_SECONDS": "tuning; code default",
    "MEMNET_CONTEXT_SEMANTIC_TTL_SECONDS": "tuning; code default",
    "MEMNET_CONTEXT_READ_WORKERS": "tuning; code default",
    "MEMNET_PROMOTE_DELAY_SECONDS": "tuning; code default",
    "MEMNET_REPLAY_RETRY_BASE_SECONDS": "tuning; code default",
    "MEMNET_REPLAY_RETRY_LIMIT": "tuning; code default",
    "MEMNET_RETENTION_FILE": "optional ceilings file; docs/retention.md",
    "MEMNET_AUDIT_FLOOR_DAYS": "spec default (365)",
    "MEMNET_JOB_MAX_SECONDS": "code default fits the Flex Consumption timeout",
    "MEMNET_SWEEP_PAGE_SIZE": "tuning; code default",
    "MEMNET_FORGET_GRACE_SECONDS": "spec default",
    "MEMNET_FORGET_QUIET_SECONDS": "spec default",
    "MEMNET_ENTRA_METADATA_URL": "derived from MEMNET_ENTRA_TENANT_ID",
    "MEMNET_ENTRA_LEEWAY_SECONDS": "code default (60 s)",
    "MEMNET_CONSOLE_SCOPE": "derived from MEMNET_ENTRA_AUDIENCES; extraAppSettings for another",
    "MEMNET_EMBEDDER": "hybrid search is off by default: extraAppSettings to turn it on",
    "MEMNET_EMBEDDER_BASE_URL": "embedder openai only: extraAppSettings",
    "MEMNET_EMBEDDER_ENDPOINT": "embedder azure-openai only: extraAppSettings",
    "MEMNET_EMBEDDER_API_KEY": "a secret: read from the vault; else the managed identity",
    "MEMNET_EMBEDDER_MODEL": "with an embedder only: extraAppSettings",
    "MEMNET_EMBEDDER_DIMENSIONS": "with an embedder only: extraAppSettings",
    "MEMNET_EMBEDDER_API_VERSION": "code default is the supported API version",
    "MEMNET_EMBEDDER_TIMEOUT_SECONDS": "tuning; code default",
    "MEMNET_EMBEDDER_MAX_RETRIES": "tuning; code default",
    "MEMNET_SEARCH_MAX_VECTORS": "embedded search index only",
    "MEMNET_SEARCH_DENSE_WEIGHT": "tuning; code default (with an embedder only)",
    "WEBSITE_AUTH_ENABLED": "set by App Service when its authentication is on; as an app "
    "setting it would claim the platform strips X-MS-CLIENT-PRINCIPAL when it does not",
}

# An environment like the deployed one, so that Settings.from_env reads what it reads there.
DEPLOYED = {
    "MEMNET_STORAGE": "azure",
    "MEMNET_BLOB_ACCOUNT_URL": "https://st.blob.core.windows.net/",
    "MEMNET_QUEUE__queueServiceUri": "https://st.queue.core.windows.net/",
    "MEMNET_SEARCH": "azure",
    "MEMNET_SEARCH_ENDPOINT": "https://srch.search.windows.net",
    "MEMNET_KEYS": "azure",
    "MEMNET_KEYVAULT_KEY_ID": "https://kv.vault.azure.net/keys/snapshot-kek",
    "MEMNET_AUTH": "entra",
    "MEMNET_ENTRA_TENANT_ID": "00000000-0000-0000-0000-000000000000",
    "MEMNET_ENTRA_AUDIENCES": "api://memnet",
    "MEMNET_CALLERS_FILE": "callers.json",
}


class RecordingEnv(dict[str, str]):
    """A mapping that remembers every name looked up in it."""

    def __init__(self, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.read: set[str] = set()

    def get(self, key: str, default: str | None = None) -> str | None:  # type: ignore[override]
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)


def settings_the_code_reads() -> set[str]:
    env = RecordingEnv(DEPLOYED)
    Settings.from_env(env)
    return env.read


def test_every_setting_the_code_reads_is_set_or_defaulted_on_purpose() -> None:
    missing = settings_the_code_reads() - set(app_settings()) - set(DEFAULTED)
    assert missing == set(), "set these in bicep/main.bicep or add them to DEFAULTED"


def test_every_defaulted_setting_is_still_read_and_not_also_set() -> None:
    assert set(DEFAULTED) <= settings_the_code_reads()
    assert set(DEFAULTED) & set(app_settings()) == set()


def test_the_wiring_of_app_settings_is_the_one_this_test_reads() -> None:
    appsettings = parse(FUNCTION_APP).resources_of_type("Microsoft.Web/sites/config")
    assert text(path(body(appsettings["appSettings"]), "properties")) == (
        "union(connectionSettings, workerSettings, memnetSettings)"
    )
    passed = properties(path(body(parse(MAIN).declarations("module")["functionApp"]), "params"))
    assert text(passed["memnetSettings"]) == "union(memnetSettings, extraAppSettings)"


def test_every_trigger_connection_is_identity_based() -> None:
    index = function_index()
    connections = {f.connection for f in index.queue_functions + index.blob_functions}
    settings = app_settings()
    assert connections == {"MEMNET_QUEUE", "MEMNET_BLOB"}
    for connection in connections:
        assert settings[f"{connection}__credential"] == "managedidentity"
        assert f"{connection}__clientId" in settings
        assert any(f"{connection}__{s}ServiceUri" in settings for s in ("queue", "blob"))
    # A blob trigger given blobServiceUri also needs queueServiceUri (its poison queue).
    assert "MEMNET_BLOB__queueServiceUri" in settings


def test_host_storage_and_default_credential_use_the_user_assigned_identity() -> None:
    settings = app_settings()
    assert settings["AzureWebJobsStorage__credential"] == "managedidentity"
    assert {"AzureWebJobsStorage__accountName", "AzureWebJobsStorage__clientId"} <= set(settings)
    assert "AZURE_CLIENT_ID" in settings
    assert "AzureWebJobsStorage" not in settings  # no connection string


def test_every_percent_setting_in_a_trigger_is_set() -> None:
    index = function_index()
    templates = [f.schedule for f in index.timer_functions] + [f.path for f in index.blob_functions]
    names = {name for t in templates for name in re.findall(r"%([^%]+)%", t)}
    assert names == {"MEMNET_SWEEP_SCHEDULE", "MEMNET_COMPACTION_SCHEDULE", "MEMNET_BLOB_CONTAINER"}
    assert names <= set(app_settings())


def test_telemetry_settings_of_the_design_are_set() -> None:
    settings = app_settings()
    assert settings["MEMNET_TELEMETRY"] == "azure"
    assert "APPLICATIONINSIGHTS_CONNECTION_STRING" in settings
    assert "APPLICATIONINSIGHTS_AUTHENTICATION_STRING" in settings


def test_runtime_is_pinned_by_function_app_config_not_app_settings() -> None:
    site = parse(FUNCTION_APP).resources_of_type("Microsoft.Web/sites@")["site"]
    runtime = path(body(site), "properties", "functionAppConfig", "runtime")
    assert {k: string_value(v) for k, v in properties(runtime).items()} == {
        "name": "python",
        "version": "3.11",
    }
    plan = body(parse(FUNCTION_APP).resources_of_type("Microsoft.Web/serverfarms")["plan"])
    assert string_value(path(plan, "sku", "tier")) == "FlexConsumption"
    assert string_value(path(plan, "sku", "name")) == "FC1"
    # Flex Consumption rejects these two; the runtime above and host.json's bundle pin it.
    rejected = {"FUNCTIONS_EXTENSION_VERSION", "FUNCTIONS_WORKER_RUNTIME"}
    assert rejected & set(app_settings()) == set()


# -- per-instance concurrency (issue 26 item 10) ----------------------------------------------

PERFORMANCE = ROOT / "docs" / "performance.md"


def concurrency_default() -> int:
    default = parse(MAIN).declarations("parameter")["httpPerInstanceConcurrency"]
    return int(text(default.named_children[-1]))


def test_one_measured_concurrency_sets_the_plan_the_worker_and_the_quota_batches() -> None:
    """perInstanceConcurrency, the worker's thread pool and the quota batch cap are one
    number: a pool smaller than it queues requests inside the worker, and a batch larger
    than it strands tokens on every instance of a scaled-out plan."""
    app = parse(FUNCTION_APP)
    site = body(app.resources_of_type("Microsoft.Web/sites@")["site"])
    scale = path(site, "properties", "functionAppConfig", "scaleAndConcurrency")
    http = path(scale, "triggers", "http")
    assert text(properties(http)["perInstanceConcurrency"]) == "httpPerInstanceConcurrency"
    worker = properties(app.variable("workerSettings"))
    assert text(worker["PYTHON_THREADPOOL_THREAD_COUNT"]) == "string(httpPerInstanceConcurrency)"
    settings = properties(parse(MAIN).variable("memnetSettings"))
    assert text(settings["MEMNET_QUOTA_BATCH_MAX"]) == "string(httpPerInstanceConcurrency)"
    passed = properties(path(body(parse(MAIN).declarations("module")["functionApp"]), "params"))
    assert text(passed["httpPerInstanceConcurrency"]) == "httpPerInstanceConcurrency"


def test_the_concurrency_is_the_one_measured_and_not_pythons_default_of_one() -> None:
    chosen = re.search(r"`httpPerInstanceConcurrency` = (\d+)", PERFORMANCE.read_text())
    assert chosen is not None, "docs/performance.md states the chosen value"
    assert concurrency_default() == int(chosen.group(1)) > 1


# -- App Service Authentication (issue 26 item 12) ---------------------------------------------


def auth_settings() -> Node:
    configs = parse(FUNCTION_APP).resources_of_type("Microsoft.Web/sites/config")
    (auth,) = (
        n for n in configs.values() if string_value(properties(body(n))["name"]) == "authsettingsV2"
    )
    return auth


def test_app_service_authentication_is_on_exactly_when_appservice_mode_is_chosen() -> None:
    condition = next(c for c in auth_settings().named_children if c.type == "if_statement")
    assert text(condition.named_children[0]) == "(appServiceAuth)"
    passed = properties(path(body(parse(MAIN).declarations("module")["functionApp"]), "params"))
    assert text(passed["appServiceAuth"]) == "contains(authModeList, 'appservice')"
    assert "split(authModes, ',')" in text(parse(MAIN).variable("authModeList"))


def test_app_service_authentication_requires_an_entra_token_on_every_app_route() -> None:
    props = path(body(auth_settings()), "properties")
    assert text(path(props, "platform", "enabled")) == "true"
    checks = properties(path(props, "globalValidation"))
    assert text(checks["requireAuthentication"]) == "true"
    assert string_value(checks["unauthenticatedClientAction"]) == "Return401"
    excluded = [string_value(n) for n in checks["excludedPaths"].named_children]
    assert excluded == ["/runtime/webhooks/blobs"]  # Event Grid's delivery, keyed by itself
    routes = ["/" + r.route for r in function_index().http_routes] + ["/runtime/webhooks/mcp"]
    assert not [r for r in routes if any(r.startswith(e) for e in excluded)]
    entra = path(props, "identityProviders", "azureActiveDirectory")
    assert text(properties(entra)["enabled"]) == "true"
    assert text(path(entra, "registration", "clientId")) == "entraClientId"
    issuer = string_value(path(entra, "registration", "openIdIssuer"))
    assert "${tenant().tenantId}/v2.0" in issuer  # the app pins principals to this tenant
    assert text(path(entra, "validation", "allowedAudiences")) == "entraAudiences"


# Values of local.settings.json.example that the Functions host reads, not the app.
HOST_VALUES = {
    "FUNCTIONS_WORKER_RUNTIME": "func start: the worker's language",
    "AzureWebJobsStorage": "func start: the host's own storage (timers' leases)",
}


def test_every_value_of_the_local_settings_example_is_read_by_something() -> None:
    """A value nothing reads is a trap: it looks like configuration and changes nothing
    (the example once set MEMNET_BLOB while the blob store read another name)."""
    values = json.loads((REPO / "local.settings.json.example").read_text())["Values"]
    env = RecordingEnv(values)
    Settings.from_env(env)
    index = function_index()
    triggers = {f.connection for f in index.queue_functions + index.blob_functions}
    templates = [f.schedule for f in index.timer_functions] + [f.path for f in index.blob_functions]
    percent = {name for t in templates for name in re.findall(r"%([^%]+)%", t)}
    unread = set(values) - env.read - triggers - percent - set(HOST_VALUES)
    assert unread == set()
    assert {"MEMNET_BLOB", "MEMNET_QUEUE"} <= env.read & triggers  # one name, both readers


# -- the snapshot trigger's SDK-type binding (issue 26 item 13) -------------------------------

SAMPLE_VALUES = {  # for the settings the template computes (None in app_settings())
    "MEMNET_BLOB__blobServiceUri": "https://st.blob.core.windows.net/",
    "MEMNET_BLOB__queueServiceUri": "https://st.queue.core.windows.net/",
    "MEMNET_BLOB__clientId": "00000000-0000-0000-0000-00000000c11d",
}


# What the Azure worker sends the host for each blob trigger when it indexes the app (its
# loader hands the extensions' registry the resolved parameter types), from a fresh app:
# get_functions() runs once per app.
_RAW_BLOB_BINDINGS = """
import json, typing, function_app
from azurefunctions.extensions.base import get_binding_registry

class Param:  # the worker's record of a parameter, of which the extension reads the type
    def __init__(self, pytype):
        self.pytype = pytype

found = {}
for f in function_app.app.get_functions():
    if f.get_trigger().type == "blobTrigger":
        hints = typing.get_type_hints(f.get_user_function())
        params = {b.name: Param(hints.get(b.name)) for b in f.get_bindings()}
        raw, _ = get_binding_registry().get_raw_bindings(f, params)
        found[f.get_function_name()] = [json.loads(r) for r in raw]
print(json.dumps(found))
"""


def test_the_snapshot_trigger_asks_the_host_for_the_blobs_name_not_its_content() -> None:
    """Typed as the SDK's BlobClient, the trigger is marked SupportsDeferredBinding, so the
    host sends the blob's connection, container and name (model binding data), never its
    content."""
    run = [sys.executable, "-c", _RAW_BLOB_BINDINGS]
    out = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, check=True, timeout=120)
    (trigger,) = json.loads(out.stdout)["snapshot_written"]
    assert trigger["properties"] == {"SupportsDeferredBinding": True}
    assert (trigger["type"], trigger["source"]) == ("blobTrigger", "EventGrid")


def test_the_workers_blob_client_uses_the_templates_identity_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker turns the host's model binding data into a BlobClient with the
    connection's app settings (the extension reads ``<connection>``, ``__serviceUri`` or
    ``__blobServiceUri``, and with ``__credential`` and ``__clientId`` the user-assigned
    identity): the template's MEMNET_BLOB__* settings must be ones it reads."""
    for name in [n for n in os.environ if n == "MEMNET_BLOB" or n.startswith("MEMNET_BLOB__")]:
        monkeypatch.delenv(name)
    for name, value in app_settings().items():
        if name.startswith("MEMNET_BLOB__"):
            monkeypatch.setenv(name, value if value is not None else SAMPLE_VALUES[name])
    content = {"Connection": "MEMNET_BLOB", "ContainerName": "memnet", "BlobName": "tenants/t.json"}
    data = SimpleNamespace(
        version="1.0",
        source="AzureStorageBlobs",
        content_type="application/json",
        content=json.dumps(content),
    )
    converter = get_binding_registry().get("blobTrigger")
    datum = Datum(data, "model_binding_data")
    client = converter.decode(datum, trigger_metadata={}, pytype=blob.BlobClient)
    assert (client.container_name, client.blob_name) == ("memnet", "tenants/t.json")
    assert client.url.startswith(SAMPLE_VALUES["MEMNET_BLOB__blobServiceUri"])
    assert isinstance(client.credential, ManagedIdentityCredential)
    assert using_user_managed_identity("MEMNET_BLOB")  # the client id, not the system identity
