"""Settings, read once from the environment (app settings on Azure, ``local.settings.json``
locally), typed, and checked at startup.

Each setting is declared once, as a field of :class:`Settings`: its variable, its
:class:`Kind` (how the text becomes a value), its default and its own check. One loop
(:meth:`Settings.from_env`) reads them all; :data:`NEEDS` lists what settings need of
each other. A bad value stops startup with a :class:`ConfigError` naming the variable.

A relative path in a setting (``MEMNET_CALLERS_FILE``, ``MEMNET_PROFILES_DIR``,
``MEMNET_DATA_DIR``, ``MEMNET_KEY_FILE``, ``MEMNET_RETENTION_FILE``) is relative to the
app's root, :data:`APP_ROOT`, never to the working directory, which a host or a shell
may set anywhere: ``callers.json`` is the file shipped beside ``function_app.py``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any, NamedTuple

from memnet.domain.errors import ConfigError

STORAGE_KINDS = ("local", "azure")
# The blob store and queue also run in memory (tests, a throwaway server: docs/decisions.md
# "Storage: the memory backend"); search and keys are "local" or "azure" only.
BLOB_QUEUE_KINDS = ("local", "memory", "azure")
EXTRACTORS = ("rules", "openai", "azure-openai")
EMBEDDERS = ("none", "openai", "azure-openai")
AUTH_MODES = ("apikeys", "entra", "appservice")
TELEMETRY_MODES = ("none", "console", "otlp", "azure")
TOKEN_PARAMETERS = ("max_tokens", "max_completion_tokens")
ENTRA_AUTHORITY = "https://login.microsoftonline.com"
CONSOLE_SCOPE = "Memory.Access"  # the API's delegated scope (docs/identity.md)
# The folder of function_app.py and host.json: memnet/ ships beside them (a deployment
# package, or this repository), so it is the parent of this package.
APP_ROOT = Path(__file__).resolve().parent.parent
# The values file `func start` reads from the app's folder; the commands read it by default.
LOCAL_SETTINGS = APP_ROOT / "local.settings.json"

Check = Callable[[Any], str | None]  # a value's problem, or None


@dataclass(frozen=True)
class Kind:
    """How a variable's text becomes a value: ``parse(text, variable)`` (raising a
    :class:`ConfigError` that names the variable), unless ``unset(text)`` says the text
    means "not set", which gives the field's default."""

    parse: Callable[[str, str], Any]
    unset: Callable[[str], bool] = lambda text: text == ""


@dataclass(frozen=True)
class Spec:
    """Where a field comes from: ``env`` (or, unset, ``fallback``) read as ``kind``."""

    env: str
    kind: Kind
    check: Check | None = None
    fallback: str | None = None


def setting(
    env: str,
    kind: Kind,
    default: Any = None,
    check: Check | None = None,
    *,
    secret: bool = False,
    fallback: str | None = None,
) -> Any:
    """A field of :class:`Settings` read from the variable ``env``; a secret stays out of
    ``repr`` (settings name secrets, they never print them)."""
    spec = Spec(env, kind, check, fallback)
    return field(default=default, repr=not secret, metadata={"spec": spec})


def _number(parse: Callable[[str], float], kind: str, most: float) -> Kind:
    """A number in [0, most]; an empty value is unset."""

    def read(text: str, name: str) -> float:
        try:
            value = parse(text)
        except ValueError as exc:
            raise ConfigError("settings", name, f"must be {kind}, got {text!r}") from exc
        if not 0 <= value <= most:
            raise ConfigError("settings", name, f"must be from 0 to {most:g}")
        return value

    return Kind(read)


def _flag(text: str, name: str) -> bool:
    if text.strip().lower() not in ("true", "false"):
        raise ConfigError("settings", name, f"must be true or false, got {text!r}")
    return text.strip().lower() == "true"


def _blank(text: str) -> bool:
    return not text.strip()


def _never(text: str) -> bool:
    return False


TEXT = Kind(lambda text, name: text, unset=_never)  # "" is a value; only absence is unset
OPTIONAL = Kind(lambda text, name: text)  # "" is unset: None
PATH = Kind(lambda text, name: APP_ROOT / text, unset=_never)  # an absolute path stays
OPTIONAL_PATH = Kind(lambda text, name: APP_ROOT / text)
FLAG = Kind(_flag, unset=_blank)  # true or false, any case
INT = _number(int, "an integer", 2**31)
SECONDS = _number(float, "a number of seconds", 3600)
FRACTION = _number(float, "a number from 0 to 1", 1)
SIZE = Kind(lambda text, name: INT.parse(text, name) or None)  # 0 or unset: None
LIST = Kind(lambda text, name: tuple(p.strip() for p in text.split(",") if p.strip()), _blank)
MODE = Kind(lambda text, name: text.strip().lower(), unset=_blank)
PLATFORM_ON = Kind(lambda text, name: text.strip().lower() == "true")  # "True", from Azure


def one_of(choices: tuple[str, ...], problem: str = "") -> Check:
    return lambda value: None if value in choices else problem or f"must be one of {choices}"


def within(least: int, most: int) -> Check:
    return lambda value: None if least <= value <= most else f"must be from {least} to {most}"


def at_least_1(value: int) -> str | None:
    return None if value >= 1 else "must be at least 1"


def _modes(value: tuple[str, ...]) -> str | None:
    return None if value and set(value) <= set(AUTH_MODES) else f"must name some of {AUTH_MODES}"


@dataclass(frozen=True)
class Settings:
    storage: str = setting("MEMNET_STORAGE", TEXT, "local", one_of(BLOB_QUEUE_KINDS))
    data_dir: Path = setting("MEMNET_DATA_DIR", PATH, APP_ROOT / ".memnet")
    profiles_dir: Path = setting("MEMNET_PROFILES_DIR", PATH, APP_ROOT / "profiles")
    callers_file: Path | None = setting("MEMNET_CALLERS_FILE", OPTIONAL_PATH)  # required
    # The name the blob trigger's connection "MEMNET_BLOB" reads too (one setting).
    blob_connection_string: str | None = setting("MEMNET_BLOB", OPTIONAL, secret=True)
    blob_account_url: str | None = setting("MEMNET_BLOB_ACCOUNT_URL", OPTIONAL)
    blob_container: str = setting("MEMNET_BLOB_CONTAINER", TEXT, "memnet")
    local_fsync: bool = setting("MEMNET_LOCAL_FSYNC", FLAG, True)
    idempotency_ttl_seconds: int = setting("MEMNET_IDEMPOTENCY_TTL_SECONDS", INT, 86_400)
    idempotency_lease_seconds: int = setting("MEMNET_IDEMPOTENCY_LEASE_SECONDS", INT, 30)
    max_body_bytes: int = setting("MEMNET_MAX_BODY_BYTES", INT, 1_048_576)
    history_limit: int = 100  # a history page's default size; no variable sets it
    # The names the Functions queue trigger's connection "MEMNET_QUEUE" reads too.
    queue_connection_string: str | None = setting("MEMNET_QUEUE", OPTIONAL, secret=True)
    queue_account_url: str | None = setting("MEMNET_QUEUE__queueServiceUri", OPTIONAL)
    search: str = setting("MEMNET_SEARCH", TEXT, "local", one_of(STORAGE_KINDS))
    search_endpoint: str | None = setting("MEMNET_SEARCH_ENDPOINT", OPTIONAL)
    search_index_name: str = setting("MEMNET_SEARCH_INDEX", TEXT, "memnet-events")
    search_api_key: str | None = setting("MEMNET_SEARCH_API_KEY", OPTIONAL, secret=True)
    search_max_postings: int = setting("MEMNET_SEARCH_MAX_POSTINGS", INT, 512)
    search_max_vectors: int = setting("MEMNET_SEARCH_MAX_VECTORS", INT, 20_000, at_least_1)
    search_dense_weight: float = setting("MEMNET_SEARCH_DENSE_WEIGHT", FRACTION, 0.7)
    # Hybrid retrieval (docs/search.md).
    embedder: str = setting("MEMNET_EMBEDDER", TEXT, "none", one_of(EMBEDDERS))
    embedder_base_url: str | None = setting("MEMNET_EMBEDDER_BASE_URL", OPTIONAL)
    embedder_endpoint: str | None = setting(  # Azure OpenAI
        "MEMNET_EMBEDDER_ENDPOINT", OPTIONAL, fallback="MEMNET_AZURE_OPENAI_ENDPOINT"
    )
    embedder_api_key: str | None = setting("MEMNET_EMBEDDER_API_KEY", OPTIONAL, secret=True)
    # The model, or the Azure OpenAI deployment.
    embedder_model: str | None = setting("MEMNET_EMBEDDER_MODEL", OPTIONAL)
    embedder_dimensions: int | None = setting("MEMNET_EMBEDDER_DIMENSIONS", SIZE)
    embedder_api_version: str = setting("MEMNET_EMBEDDER_API_VERSION", TEXT, "2024-10-21")
    embedder_timeout_seconds: float = setting("MEMNET_EMBEDDER_TIMEOUT_SECONDS", SECONDS, 30.0)
    embedder_max_retries: int = setting("MEMNET_EMBEDDER_MAX_RETRIES", INT, 2)
    context_index_ttl_seconds: float = setting("MEMNET_CONTEXT_INDEX_TTL_SECONDS", SECONDS, 1.0)
    context_semantic_ttl_seconds: float = setting(
        "MEMNET_CONTEXT_SEMANTIC_TTL_SECONDS", SECONDS, 30.0
    )
    context_read_workers: int = setting("MEMNET_CONTEXT_READ_WORKERS", INT, 8)
    # A burst of events promotes once, after it.
    promote_delay_seconds: float = setting("MEMNET_PROMOTE_DELAY_SECONDS", SECONDS, 30.0)
    keys: str = setting("MEMNET_KEYS", TEXT, "local", one_of(STORAGE_KINDS))
    # Unset: <data_dir>/keys/snapshot-kek.json (snapshot_key_file).
    key_file: Path | None = setting("MEMNET_KEY_FILE", OPTIONAL_PATH)
    keyvault_key_id: str | None = setting("MEMNET_KEYVAULT_KEY_ID", OPTIONAL)
    extractor: str = setting("MEMNET_EXTRACTOR", TEXT, "rules", one_of(EXTRACTORS))
    extractor_base_url: str | None = setting("MEMNET_OPENAI_BASE_URL", OPTIONAL)
    extractor_api_key: str | None = setting("MEMNET_OPENAI_API_KEY", OPTIONAL, secret=True)
    extractor_model: str | None = setting("MEMNET_OPENAI_MODEL", OPTIONAL)
    azure_openai_endpoint: str | None = setting("MEMNET_AZURE_OPENAI_ENDPOINT", OPTIONAL)
    azure_openai_deployment: str | None = setting("MEMNET_AZURE_OPENAI_DEPLOYMENT", OPTIONAL)
    azure_openai_api_version: str = setting("MEMNET_AZURE_OPENAI_API_VERSION", TEXT, "2024-10-21")
    extractor_timeout_seconds: float = setting("MEMNET_EXTRACTOR_TIMEOUT_SECONDS", SECONDS, 60.0)
    extractor_max_retries: int = setting("MEMNET_EXTRACTOR_MAX_RETRIES", INT, 2)
    extractor_max_tokens: int = setting("MEMNET_EXTRACTOR_MAX_TOKENS", INT, 4096)
    extractor_max_prompt_chars: int = setting("MEMNET_EXTRACTOR_MAX_PROMPT_CHARS", INT, 60_000)
    extractor_token_parameter: str = setting(
        "MEMNET_EXTRACTOR_TOKEN_PARAMETER",
        TEXT,
        "max_tokens",
        one_of(TOKEN_PARAMETERS, "must be max_tokens or max_completion_tokens"),
    )
    replay_retry_base_seconds: int = setting(
        "MEMNET_REPLAY_RETRY_BASE_SECONDS", INT, 60, at_least_1
    )
    replay_retry_limit: int = setting("MEMNET_REPLAY_RETRY_LIMIT", INT, 5, at_least_1)
    # Organisation and tenant ceilings (docs/retention.md).
    retention_file: Path | None = setting("MEMNET_RETENTION_FILE", OPTIONAL_PATH)
    audit_floor_days: int = setting("MEMNET_AUDIT_FLOOR_DAYS", INT, 365)
    # Work one governance job invocation may do.
    job_max_seconds: int = setting("MEMNET_JOB_MAX_SECONDS", INT, 240, at_least_1)
    sweep_page_size: int = setting("MEMNET_SWEEP_PAGE_SIZE", INT, 1000, within(1, 5000))
    forget_grace_seconds: int = setting("MEMNET_FORGET_GRACE_SECONDS", INT, 60)
    forget_quiet_seconds: int = setting("MEMNET_FORGET_QUIET_SECONDS", INT, 3600)
    # The storage account's soft delete (forget receipts).
    blob_soft_delete_days: int = setting("MEMNET_BLOB_SOFT_DELETE_DAYS", INT, 0, within(0, 365))
    auth_modes: tuple[str, ...] = setting("MEMNET_AUTH", LIST, ("apikeys",), _modes)
    api_key_pepper: str | None = setting("MEMNET_API_KEY_PEPPER", OPTIONAL, secret=True)
    entra_tenant_id: str | None = setting("MEMNET_ENTRA_TENANT_ID", OPTIONAL)
    entra_audiences: tuple[str, ...] = setting("MEMNET_ENTRA_AUDIENCES", LIST, ())
    # Unset: the tenant's v2.0 OpenID configuration (entra_metadata).
    entra_metadata_url: str | None = setting("MEMNET_ENTRA_METADATA_URL", OPTIONAL)
    entra_leeway_seconds: int = setting("MEMNET_ENTRA_LEEWAY_SECONDS", INT, 60)
    # The console's own (single-page app) registration: set, the console offers Entra
    # sign-in (docs/console.md "Signing in with Entra ID").
    console_client_id: str | None = setting("MEMNET_CONSOLE_CLIENT_ID", OPTIONAL)
    # Unset: <the API's Application ID URI>/Memory.Access (console_api_scope).
    console_scope: str | None = setting("MEMNET_CONSOLE_SCOPE", OPTIONAL)
    # Secrets not set here are read from this vault.
    keyvault_url: str | None = setting("MEMNET_KEYVAULT_URL", OPTIONAL)
    # Requests per window; 0: no quota.
    quota_user_requests: int = setting("MEMNET_QUOTA_USER_REQUESTS", INT, 0)
    quota_user_writes: int = setting("MEMNET_QUOTA_USER_WRITES", INT, 0)
    quota_service_requests: int = setting("MEMNET_QUOTA_SERVICE_REQUESTS", INT, 0)
    quota_service_writes: int = setting("MEMNET_QUOTA_SERVICE_WRITES", INT, 0)
    quota_window_seconds: int = setting("MEMNET_QUOTA_WINDOW_SECONDS", INT, 60, within(1, 3600))
    # Tokens one quota reservation takes at most.
    quota_batch_max: int = setting("MEMNET_QUOTA_BATCH_MAX", INT, 50, at_least_1)
    # Set by App Service when its authentication is on ("True"); never an app setting.
    app_service_auth_on: bool = setting("WEBSITE_AUTH_ENABLED", PLATFORM_ON, False)
    # Unset: azure when APPLICATIONINSIGHTS_CONNECTION_STRING is set (docs/observability.md).
    telemetry: str = setting("MEMNET_TELEMETRY", MODE, "none", one_of(TELEMETRY_MODES))
    applicationinsights_connection_string: str | None = setting(
        "APPLICATIONINSIGHTS_CONNECTION_STRING", OPTIONAL, secret=True
    )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Settings:
        """The settings in ``env`` (default: the process environment), each field read
        from its variable as it declares, then checked."""
        env = os.environ if env is None else env
        values = {f.name: _read(f.metadata["spec"], env, f.default) for f in _declared()}
        connected = values["applicationinsights_connection_string"]
        if connected and _blank(env.get("MEMNET_TELEMETRY", "")):
            values["telemetry"] = "azure"  # unset, the mode follows the connection string
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """Stop at the first problem: each setting's own check in the order declared,
        then what the settings need of each other (:data:`NEEDS`, in order)."""
        for f in _declared():
            spec: Spec = f.metadata["spec"]
            problem = spec.check(getattr(self, f.name)) if spec.check else None
            if problem:
                raise ConfigError("settings", spec.env, problem)
        for need in NEEDS:
            if need.missing(self):
                raise ConfigError("settings", need.env, need.problem)

    @property
    def entra_metadata(self) -> str:
        """The OpenID configuration tokens are checked against."""
        if self.entra_metadata_url:
            return self.entra_metadata_url
        tenant = self.entra_tenant_id
        return f"{ENTRA_AUTHORITY}/{tenant}/v2.0/.well-known/openid-configuration"

    @property
    def console_authority(self) -> str:
        """Where the console signs people in: the tenant's authority."""
        return f"{ENTRA_AUTHORITY}/{self.entra_tenant_id}"

    @property
    def console_api_scope(self) -> str:
        """The delegated scope the console asks for: ``MEMNET_CONSOLE_SCOPE``, else the
        scope ``Memory.Access`` (docs/identity.md) of the API's Application ID URI (the
        first audience that is a URI, else the first audience)."""
        if self.console_scope:
            return self.console_scope
        uris = [a for a in self.entra_audiences if "://" in a] or list(self.entra_audiences)
        return f"{uris[0].rstrip('/')}/{CONSOLE_SCOPE}" if uris else CONSOLE_SCOPE

    @property
    def snapshot_key_file(self) -> Path:
        return self.key_file or self.data_dir / "keys" / "snapshot-kek.json"


def _declared() -> list[Field[Any]]:
    """The fields of :class:`Settings` read from a variable."""
    return [f for f in fields(Settings) if "spec" in f.metadata]


def _read(spec: Spec, env: Mapping[str, str], default: Any) -> Any:
    """The value of ``spec``'s variable (else its fallback's), or ``default`` if unset."""
    for name in filter(None, (spec.env, spec.fallback)):
        text = env.get(name)
        if text is not None and not spec.kind.unset(text):
            return spec.kind.parse(text, name)
    return default


class Need(NamedTuple):
    """A setting another one's value requires: ``env`` is named when ``missing``."""

    env: str
    problem: str
    missing: Callable[[Settings], bool]


NEEDS = (
    Need(
        "MEMNET_BLOB",
        "azure storage needs it (connection string) or MEMNET_BLOB_ACCOUNT_URL",
        lambda s: s.storage == "azure" and not (s.blob_connection_string or s.blob_account_url),
    ),
    Need(
        "MEMNET_QUEUE",
        "azure storage needs it (connection string) or MEMNET_QUEUE__queueServiceUri",
        lambda s: s.storage == "azure" and not (s.queue_connection_string or s.queue_account_url),
    ),
    Need(
        "MEMNET_SEARCH_ENDPOINT",
        "azure search needs it",
        lambda s: s.search == "azure" and not s.search_endpoint,
    ),
    Need(
        "MEMNET_EMBEDDER_BASE_URL",
        "openai needs it",
        lambda s: s.embedder == "openai" and not s.embedder_base_url,
    ),
    Need(
        "MEMNET_EMBEDDER_ENDPOINT",
        "azure-openai needs it",
        lambda s: s.embedder == "azure-openai" and not s.embedder_endpoint,
    ),
    Need(
        "MEMNET_EMBEDDER_MODEL",
        "name the model (the deployment on Azure)",
        lambda s: s.embedder != "none" and not s.embedder_model,
    ),
    Need(
        "MEMNET_EMBEDDER_DIMENSIONS",
        "Azure AI Search needs the vector size for its vector field",
        lambda s: s.embedder != "none" and s.search == "azure" and not s.embedder_dimensions,
    ),
    Need(
        "MEMNET_KEYVAULT_KEY_ID",
        "azure keys need the key's URL",
        lambda s: s.keys == "azure" and not s.keyvault_key_id,
    ),
    Need(
        "MEMNET_OPENAI_BASE_URL",
        "openai needs it",
        lambda s: s.extractor == "openai" and not s.extractor_base_url,
    ),
    Need(
        "MEMNET_AZURE_OPENAI_ENDPOINT",
        "azure-openai needs it",
        lambda s: s.extractor == "azure-openai" and not s.azure_openai_endpoint,
    ),
    Need(
        "MEMNET_OPENAI_MODEL",
        "name the model (or MEMNET_AZURE_OPENAI_DEPLOYMENT for azure-openai)",
        lambda s: s.extractor != "rules" and not (s.extractor_model or s.azure_openai_deployment),
    ),
    Need(
        "MEMNET_ENTRA_TENANT_ID",
        "entra auth needs it",
        lambda s: "entra" in s.auth_modes and not (s.entra_tenant_id or s.entra_metadata_url),
    ),
    Need(
        "MEMNET_ENTRA_TENANT_ID",
        "appservice auth needs it (principals are pinned to it)",
        lambda s: "appservice" in s.auth_modes and not s.entra_tenant_id,
    ),
    Need(
        "MEMNET_ENTRA_AUDIENCES",
        "entra auth needs the API's audience(s)",
        lambda s: "entra" in s.auth_modes and not s.entra_audiences,
    ),
    Need(
        "MEMNET_AUTH",
        "the console's Entra sign-in (MEMNET_CONSOLE_CLIENT_ID) needs entra among the modes",
        lambda s: bool(s.console_client_id) and "entra" not in s.auth_modes,
    ),
    Need(
        "MEMNET_ENTRA_TENANT_ID",
        "the console's Entra sign-in (MEMNET_CONSOLE_CLIENT_ID) signs people in to it",
        lambda s: bool(s.console_client_id) and not s.entra_tenant_id,
    ),
    Need(
        "MEMNET_AUTH",
        "appservice needs App Service Authentication on for this app (the platform sets "
        "WEBSITE_AUTH_ENABLED=True); without it a client could forge the "
        "X-MS-CLIENT-PRINCIPAL header",
        lambda s: "appservice" in s.auth_modes and not s.app_service_auth_on,
    ),
    Need(
        "APPLICATIONINSIGHTS_CONNECTION_STRING",
        "azure telemetry needs it",
        lambda s: s.telemetry == "azure" and not s.applicationinsights_connection_string,
    ),
    Need(
        "MEMNET_CALLERS_FILE",
        "must name the callers registry (see local.settings.json.example)",
        lambda s: s.callers_file is None,
    ),
)
