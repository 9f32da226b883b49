"""Settings, read once from the environment (app settings on Azure, ``local.settings.json``
locally), typed, and checked at startup.

A relative path in a setting (``MEMNET_CALLERS_FILE``, ``MEMNET_PROFILES_DIR``,
``MEMNET_DATA_DIR``, ``MEMNET_KEY_FILE``, ``MEMNET_RETENTION_FILE``) is relative to the
app's root, :data:`APP_ROOT`, never to the working directory, which a host or a shell
may set anywhere: ``callers.json`` is the file shipped beside ``function_app.py``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from memnet.domain.errors import ConfigError

STORAGE_KINDS = ("local", "azure")
# MEMNET_STORAGE (blobs and queues) may also be "memory": tests, a throwaway local host.
BLOB_QUEUE_KINDS = ("local", "memory", "azure")
EXTRACTORS = ("rules", "openai", "azure-openai")
EMBEDDERS = ("none", "openai", "azure-openai")
AUTH_MODES = ("apikeys", "entra", "appservice")
TELEMETRY_MODES = ("none", "console", "otlp", "azure")
ENTRA_AUTHORITY = "https://login.microsoftonline.com"
# The folder of function_app.py and host.json: memnet/ ships beside them (a deployment
# package, or this repository), so it is the parent of this package.
APP_ROOT = Path(__file__).resolve().parent.parent
# The values file `func start` reads from the app's folder; the commands read it by default.
LOCAL_SETTINGS = APP_ROOT / "local.settings.json"


@dataclass(frozen=True)
class Settings:
    storage: str = "local"
    data_dir: Path = APP_ROOT / ".memnet"
    profiles_dir: Path = APP_ROOT / "profiles"
    callers_file: Path | None = None
    blob_connection_string: str | None = field(default=None, repr=False)  # secret
    blob_account_url: str | None = None
    blob_container: str = "memnet"
    local_fsync: bool = True
    idempotency_ttl_seconds: int = 86_400
    idempotency_lease_seconds: int = 30
    max_body_bytes: int = 1_048_576
    history_limit: int = 100
    queue_connection_string: str | None = field(default=None, repr=False)  # secret
    queue_account_url: str | None = None
    search: str = "local"
    search_endpoint: str | None = None
    search_index_name: str = "memnet-events"
    search_api_key: str | None = field(default=None, repr=False)  # secret
    search_max_postings: int = 512
    search_max_vectors: int = 20_000
    search_dense_weight: float = 0.7
    embedder: str = "none"  # hybrid retrieval (docs/search.md)
    embedder_base_url: str | None = None
    embedder_endpoint: str | None = None  # Azure OpenAI; default: MEMNET_AZURE_OPENAI_ENDPOINT
    embedder_api_key: str | None = field(default=None, repr=False)  # secret
    embedder_model: str | None = None  # the model, or the Azure OpenAI deployment
    embedder_dimensions: int | None = None
    embedder_api_version: str = "2024-10-21"
    embedder_timeout_seconds: float = 30.0
    embedder_max_retries: int = 2
    context_index_ttl_seconds: float = 1.0
    context_semantic_ttl_seconds: float = 30.0
    context_read_workers: int = 8
    promote_delay_seconds: float = 30.0  # a burst of events promotes once, after it
    keys: str = "local"
    key_file: Path | None = None  # default: <data_dir>/keys/snapshot-kek.json
    keyvault_key_id: str | None = None
    extractor: str = "rules"
    extractor_base_url: str | None = None
    extractor_api_key: str | None = field(default=None, repr=False)  # secret
    extractor_model: str | None = None
    azure_openai_endpoint: str | None = None
    azure_openai_deployment: str | None = None
    azure_openai_api_version: str = "2024-10-21"
    extractor_timeout_seconds: float = 60.0
    extractor_max_retries: int = 2
    extractor_max_tokens: int = 4096
    extractor_max_prompt_chars: int = 60_000
    extractor_token_parameter: str = "max_tokens"
    replay_retry_base_seconds: int = 60
    replay_retry_limit: int = 5
    retention_file: Path | None = None  # organisation/tenant ceilings (docs/retention.md)
    audit_floor_days: int = 365
    job_max_seconds: int = 240  # work one governance job invocation may do
    sweep_page_size: int = 1000
    forget_grace_seconds: int = 60
    forget_quiet_seconds: int = 3600
    blob_soft_delete_days: int = 0  # the storage account's soft delete (forget receipts)
    auth_modes: tuple[str, ...] = ("apikeys",)
    api_key_pepper: str | None = field(default=None, repr=False)  # secret
    entra_tenant_id: str | None = None
    entra_audiences: tuple[str, ...] = ()
    entra_metadata_url: str | None = None  # default: the tenant's v2.0 OpenID configuration
    entra_leeway_seconds: int = 60
    keyvault_url: str | None = None  # secrets not set here are read from this vault
    quota_user_requests: int = 0  # per window; 0: no quota
    quota_user_writes: int = 0
    quota_service_requests: int = 0
    quota_service_writes: int = 0
    quota_window_seconds: int = 60
    quota_batch_max: int = 50  # tokens one quota reservation takes at most
    app_service_auth_on: bool = False  # the platform's WEBSITE_AUTH_ENABLED
    telemetry: str = "none"  # none | console | otlp | azure (docs/observability.md)
    applicationinsights_connection_string: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, root: Path = APP_ROOT) -> Settings:
        """The settings in ``env`` (default: the process environment), each relative
        path taken from ``root``."""
        env = os.environ if env is None else env
        settings = cls(
            storage=env.get("MEMNET_STORAGE", "local"),
            data_dir=root / env.get("MEMNET_DATA_DIR", ".memnet"),
            profiles_dir=root / env.get("MEMNET_PROFILES_DIR", "profiles"),
            callers_file=_path(env.get("MEMNET_CALLERS_FILE"), root),
            # The name the blob trigger's connection "MEMNET_BLOB" reads too (one setting).
            blob_connection_string=env.get("MEMNET_BLOB") or None,
            blob_account_url=env.get("MEMNET_BLOB_ACCOUNT_URL") or None,
            blob_container=env.get("MEMNET_BLOB_CONTAINER", "memnet"),
            local_fsync=_flag(env, "MEMNET_LOCAL_FSYNC", True),
            idempotency_ttl_seconds=_int(env, "MEMNET_IDEMPOTENCY_TTL_SECONDS", 86_400),
            idempotency_lease_seconds=_int(env, "MEMNET_IDEMPOTENCY_LEASE_SECONDS", 30),
            max_body_bytes=_int(env, "MEMNET_MAX_BODY_BYTES", 1_048_576),
            # The names the Functions queue trigger's connection "MEMNET_QUEUE" reads too.
            queue_connection_string=env.get("MEMNET_QUEUE") or None,
            queue_account_url=env.get("MEMNET_QUEUE__queueServiceUri") or None,
            search=env.get("MEMNET_SEARCH", "local"),
            search_endpoint=env.get("MEMNET_SEARCH_ENDPOINT") or None,
            search_index_name=env.get("MEMNET_SEARCH_INDEX", "memnet-events"),
            search_api_key=env.get("MEMNET_SEARCH_API_KEY") or None,
            search_max_postings=_int(env, "MEMNET_SEARCH_MAX_POSTINGS", 512),
            search_max_vectors=_int(env, "MEMNET_SEARCH_MAX_VECTORS", 20_000),
            search_dense_weight=_fraction(env, "MEMNET_SEARCH_DENSE_WEIGHT", 0.7),
            embedder=env.get("MEMNET_EMBEDDER", "none"),
            embedder_base_url=env.get("MEMNET_EMBEDDER_BASE_URL") or None,
            embedder_endpoint=(
                env.get("MEMNET_EMBEDDER_ENDPOINT")
                or env.get("MEMNET_AZURE_OPENAI_ENDPOINT")
                or None
            ),
            embedder_api_key=env.get("MEMNET_EMBEDDER_API_KEY") or None,
            embedder_model=env.get("MEMNET_EMBEDDER_MODEL") or None,
            embedder_dimensions=_int(env, "MEMNET_EMBEDDER_DIMENSIONS", 0) or None,
            embedder_api_version=env.get("MEMNET_EMBEDDER_API_VERSION", "2024-10-21"),
            embedder_timeout_seconds=_seconds(env, "MEMNET_EMBEDDER_TIMEOUT_SECONDS", 30.0),
            embedder_max_retries=_int(env, "MEMNET_EMBEDDER_MAX_RETRIES", 2),
            context_index_ttl_seconds=_seconds(env, "MEMNET_CONTEXT_INDEX_TTL_SECONDS", 1.0),
            context_semantic_ttl_seconds=_seconds(env, "MEMNET_CONTEXT_SEMANTIC_TTL_SECONDS", 30.0),
            context_read_workers=_int(env, "MEMNET_CONTEXT_READ_WORKERS", 8),
            promote_delay_seconds=_seconds(env, "MEMNET_PROMOTE_DELAY_SECONDS", 30.0),
            keys=env.get("MEMNET_KEYS", "local"),
            key_file=_path(env.get("MEMNET_KEY_FILE"), root),
            keyvault_key_id=env.get("MEMNET_KEYVAULT_KEY_ID") or None,
            extractor=env.get("MEMNET_EXTRACTOR", "rules"),
            extractor_base_url=env.get("MEMNET_OPENAI_BASE_URL") or None,
            extractor_api_key=env.get("MEMNET_OPENAI_API_KEY") or None,
            extractor_model=env.get("MEMNET_OPENAI_MODEL") or None,
            azure_openai_endpoint=env.get("MEMNET_AZURE_OPENAI_ENDPOINT") or None,
            azure_openai_deployment=env.get("MEMNET_AZURE_OPENAI_DEPLOYMENT") or None,
            azure_openai_api_version=env.get("MEMNET_AZURE_OPENAI_API_VERSION", "2024-10-21"),
            extractor_timeout_seconds=_seconds(env, "MEMNET_EXTRACTOR_TIMEOUT_SECONDS", 60.0),
            extractor_max_retries=_int(env, "MEMNET_EXTRACTOR_MAX_RETRIES", 2),
            extractor_max_tokens=_int(env, "MEMNET_EXTRACTOR_MAX_TOKENS", 4096),
            extractor_max_prompt_chars=_int(env, "MEMNET_EXTRACTOR_MAX_PROMPT_CHARS", 60_000),
            extractor_token_parameter=env.get("MEMNET_EXTRACTOR_TOKEN_PARAMETER", "max_tokens"),
            replay_retry_base_seconds=_int(env, "MEMNET_REPLAY_RETRY_BASE_SECONDS", 60),
            replay_retry_limit=_int(env, "MEMNET_REPLAY_RETRY_LIMIT", 5),
            retention_file=_path(env.get("MEMNET_RETENTION_FILE"), root),
            audit_floor_days=_int(env, "MEMNET_AUDIT_FLOOR_DAYS", 365),
            job_max_seconds=_int(env, "MEMNET_JOB_MAX_SECONDS", 240),
            sweep_page_size=_int(env, "MEMNET_SWEEP_PAGE_SIZE", 1000),
            forget_grace_seconds=_int(env, "MEMNET_FORGET_GRACE_SECONDS", 60),
            forget_quiet_seconds=_int(env, "MEMNET_FORGET_QUIET_SECONDS", 3600),
            blob_soft_delete_days=_int(env, "MEMNET_BLOB_SOFT_DELETE_DAYS", 0),
            auth_modes=_list(env, "MEMNET_AUTH", ("apikeys",)),
            api_key_pepper=env.get("MEMNET_API_KEY_PEPPER") or None,
            entra_tenant_id=env.get("MEMNET_ENTRA_TENANT_ID") or None,
            entra_audiences=_list(env, "MEMNET_ENTRA_AUDIENCES", ()),
            entra_metadata_url=env.get("MEMNET_ENTRA_METADATA_URL") or None,
            entra_leeway_seconds=_int(env, "MEMNET_ENTRA_LEEWAY_SECONDS", 60),
            keyvault_url=env.get("MEMNET_KEYVAULT_URL") or None,
            quota_user_requests=_int(env, "MEMNET_QUOTA_USER_REQUESTS", 0),
            quota_user_writes=_int(env, "MEMNET_QUOTA_USER_WRITES", 0),
            quota_service_requests=_int(env, "MEMNET_QUOTA_SERVICE_REQUESTS", 0),
            quota_service_writes=_int(env, "MEMNET_QUOTA_SERVICE_WRITES", 0),
            quota_window_seconds=_int(env, "MEMNET_QUOTA_WINDOW_SECONDS", 60),
            quota_batch_max=_int(env, "MEMNET_QUOTA_BATCH_MAX", 50),
            # Set by App Service when its authentication is on ("True"); never an app setting.
            app_service_auth_on=env.get("WEBSITE_AUTH_ENABLED", "").strip().lower() == "true",
            telemetry=_telemetry(env),
            applicationinsights_connection_string=(
                env.get("APPLICATIONINSIGHTS_CONNECTION_STRING") or None
            ),
        )
        settings.check()
        return settings

    def check(self) -> None:
        if self.storage not in BLOB_QUEUE_KINDS:
            raise ConfigError("settings", "MEMNET_STORAGE", f"must be one of {BLOB_QUEUE_KINDS}")
        if self.storage == "azure" and not (self.blob_connection_string or self.blob_account_url):
            raise ConfigError(
                "settings",
                "MEMNET_BLOB",
                "azure storage needs it (connection string) or MEMNET_BLOB_ACCOUNT_URL",
            )
        if self.storage == "azure" and not (self.queue_connection_string or self.queue_account_url):
            raise ConfigError(
                "settings",
                "MEMNET_QUEUE",
                "azure storage needs it (connection string) or MEMNET_QUEUE__queueServiceUri",
            )
        if not 0 <= self.blob_soft_delete_days <= 365:
            raise ConfigError("settings", "MEMNET_BLOB_SOFT_DELETE_DAYS", "must be from 0 to 365")
        if self.search not in STORAGE_KINDS:
            raise ConfigError("settings", "MEMNET_SEARCH", f"must be one of {STORAGE_KINDS}")
        if self.search == "azure" and not self.search_endpoint:
            raise ConfigError("settings", "MEMNET_SEARCH_ENDPOINT", "azure search needs it")
        self._check_embedder()
        self._check_replay()
        self._check_auth()
        self._check_quotas()
        self._check_telemetry()
        if self.callers_file is None:
            raise ConfigError(
                "settings",
                "MEMNET_CALLERS_FILE",
                "must name the callers registry (see local.settings.json.example)",
            )

    def _check_embedder(self) -> None:
        if self.embedder not in EMBEDDERS:
            raise ConfigError("settings", "MEMNET_EMBEDDER", f"must be one of {EMBEDDERS}")
        if self.search_max_vectors < 1:
            raise ConfigError("settings", "MEMNET_SEARCH_MAX_VECTORS", "must be at least 1")
        if self.embedder == "none":
            return
        needs = {
            "openai": ("MEMNET_EMBEDDER_BASE_URL", self.embedder_base_url),
            "azure-openai": ("MEMNET_EMBEDDER_ENDPOINT", self.embedder_endpoint),
        }
        if not needs[self.embedder][1]:
            raise ConfigError("settings", needs[self.embedder][0], f"{self.embedder} needs it")
        if not self.embedder_model:
            raise ConfigError(
                "settings", "MEMNET_EMBEDDER_MODEL", "name the model (the deployment on Azure)"
            )
        if self.search == "azure" and not self.embedder_dimensions:
            raise ConfigError(
                "settings",
                "MEMNET_EMBEDDER_DIMENSIONS",
                "Azure AI Search needs the vector size for its vector field",
            )

    def _check_replay(self) -> None:
        if self.keys not in STORAGE_KINDS:
            raise ConfigError("settings", "MEMNET_KEYS", f"must be one of {STORAGE_KINDS}")
        if self.keys == "azure" and not self.keyvault_key_id:
            raise ConfigError("settings", "MEMNET_KEYVAULT_KEY_ID", "azure keys need the key's URL")
        if self.extractor not in EXTRACTORS:
            raise ConfigError("settings", "MEMNET_EXTRACTOR", f"must be one of {EXTRACTORS}")
        needs = {
            "openai": ("MEMNET_OPENAI_BASE_URL", self.extractor_base_url),
            "azure-openai": ("MEMNET_AZURE_OPENAI_ENDPOINT", self.azure_openai_endpoint),
        }
        if self.extractor in needs and not needs[self.extractor][1]:
            raise ConfigError("settings", needs[self.extractor][0], f"{self.extractor} needs it")
        model = self.extractor_model or self.azure_openai_deployment
        if self.extractor != "rules" and not model:
            raise ConfigError(
                "settings",
                "MEMNET_OPENAI_MODEL",
                "name the model (or MEMNET_AZURE_OPENAI_DEPLOYMENT for azure-openai)",
            )
        if self.extractor_token_parameter not in ("max_tokens", "max_completion_tokens"):
            raise ConfigError(
                "settings",
                "MEMNET_EXTRACTOR_TOKEN_PARAMETER",
                "must be max_tokens or max_completion_tokens",
            )
        if self.replay_retry_base_seconds < 1:
            raise ConfigError("settings", "MEMNET_REPLAY_RETRY_BASE_SECONDS", "must be at least 1")
        if self.replay_retry_limit < 1:
            raise ConfigError("settings", "MEMNET_REPLAY_RETRY_LIMIT", "must be at least 1")
        if self.job_max_seconds < 1:
            raise ConfigError("settings", "MEMNET_JOB_MAX_SECONDS", "must be at least 1")
        if not 1 <= self.sweep_page_size <= 5000:
            raise ConfigError("settings", "MEMNET_SWEEP_PAGE_SIZE", "must be from 1 to 5000")

    def _check_auth(self) -> None:
        unknown = sorted(set(self.auth_modes) - set(AUTH_MODES))
        if unknown or not self.auth_modes:
            raise ConfigError("settings", "MEMNET_AUTH", f"must name some of {AUTH_MODES}")
        if "entra" in self.auth_modes and not (self.entra_tenant_id or self.entra_metadata_url):
            raise ConfigError("settings", "MEMNET_ENTRA_TENANT_ID", "entra auth needs it")
        if "appservice" in self.auth_modes and not self.entra_tenant_id:
            raise ConfigError(
                "settings",
                "MEMNET_ENTRA_TENANT_ID",
                "appservice auth needs it (principals are pinned to it)",
            )
        if "entra" in self.auth_modes and not self.entra_audiences:
            raise ConfigError(
                "settings", "MEMNET_ENTRA_AUDIENCES", "entra auth needs the API's audience(s)"
            )
        if "appservice" in self.auth_modes and not self.app_service_auth_on:
            raise ConfigError(
                "settings",
                "MEMNET_AUTH",
                "appservice needs App Service Authentication on for this app (the platform "
                "sets WEBSITE_AUTH_ENABLED=True); without it a client could forge the "
                "X-MS-CLIENT-PRINCIPAL header",
            )

    def _check_quotas(self) -> None:
        if not 1 <= self.quota_window_seconds <= 3600:
            raise ConfigError("settings", "MEMNET_QUOTA_WINDOW_SECONDS", "must be from 1 to 3600")
        if self.quota_batch_max < 1:
            raise ConfigError("settings", "MEMNET_QUOTA_BATCH_MAX", "must be at least 1")

    def _check_telemetry(self) -> None:
        if self.telemetry not in TELEMETRY_MODES:
            raise ConfigError("settings", "MEMNET_TELEMETRY", f"must be one of {TELEMETRY_MODES}")
        if self.telemetry == "azure" and not self.applicationinsights_connection_string:
            raise ConfigError(
                "settings", "APPLICATIONINSIGHTS_CONNECTION_STRING", "azure telemetry needs it"
            )

    @property
    def entra_metadata(self) -> str:
        """The OpenID configuration tokens are checked against."""
        if self.entra_metadata_url:
            return self.entra_metadata_url
        tenant = self.entra_tenant_id
        return f"{ENTRA_AUTHORITY}/{tenant}/v2.0/.well-known/openid-configuration"

    @property
    def snapshot_key_file(self) -> Path:
        return self.key_file or self.data_dir / "keys" / "snapshot-kek.json"


def _telemetry(env: Mapping[str, str]) -> str:
    """``MEMNET_TELEMETRY``; unset, ``azure`` if a connection string is set, else ``none``."""
    mode = env.get("MEMNET_TELEMETRY", "").strip().lower()
    return mode or ("azure" if env.get("APPLICATIONINSIGHTS_CONNECTION_STRING") else "none")


def _path(value: str | None, root: Path) -> Path | None:
    """``value`` as a path from ``root`` (an absolute one stays as it is)."""
    return root / value if value else None


def _list(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list, or ``default`` when unset."""
    text = env.get(name, "")
    return tuple(p.strip() for p in text.split(",") if p.strip()) if text.strip() else default


def _flag(env: Mapping[str, str], name: str, default: bool) -> bool:
    """``true`` or ``false`` (any case), or ``default`` when unset."""
    text = env.get(name, "").strip().lower()
    if text in ("", "true", "false"):
        return default if text == "" else text == "true"
    raise ConfigError("settings", name, f"must be true or false, got {env[name]!r}")


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    return int(_number(env, name, default, int, "an integer", 2**31))


def _fraction(env: Mapping[str, str], name: str, default: float) -> float:
    return _number(env, name, default, float, "a number from 0 to 1", 1)


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    return _number(env, name, default, float, "a number of seconds", 3600)


def _number(
    env: Mapping[str, str],
    name: str,
    default: float,
    parse: Callable[[str], float],
    kind: str,
    most: float,
) -> float:
    """The setting ``name`` as a number in [0, most], or ``default`` when unset."""
    text = env.get(name)
    if text is None or text == "":
        return default
    try:
        value = parse(text)
    except ValueError as exc:
        raise ConfigError("settings", name, f"must be {kind}, got {text!r}") from exc
    if not 0 <= value <= most:
        raise ConfigError("settings", name, f"must be from 0 to {most:g}")
    return value
