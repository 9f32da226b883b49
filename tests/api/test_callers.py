"""Caller binding to tenants, profiles and roles (403), settings failures, and logging."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key
from memnet.domain.errors import ConfigError
from memnet.settings import Settings
from tests.api.test_documents import create
from tests.clients import DirectClient
from tests.conftest import REPO, doc_url, make_settings

READER = {
    "caller_id": "reader",
    "key_sha256": hash_key("reader-key"),
    "tenants": ["t1"],
    "profiles": ["project-copilot-v1"],
    "roles": ["read"],
}
WRITER = {
    **READER,
    "caller_id": "writer",
    "key_sha256": hash_key("writer-key"),
    "roles": ["read", "write"],
}


@pytest.fixture
def restricted(tmp_path: Path) -> Iterator[None]:
    callers = tmp_path / "callers.json"
    callers.write_text(json.dumps({"callers": [READER, WRITER]}))
    settings = make_settings(tmp_path / "data", callers_file=callers)
    bootstrap.install(bootstrap.build(settings))
    yield
    bootstrap.install(None)


def test_caller_outside_its_tenant_is_403(restricted: None):
    reply = DirectClient("writer-key").request("GET", doc_url(tenant="t2"))
    assert reply.status == 403 and reply.error_code == "TENANT_FORBIDDEN"


def test_caller_without_write_role_is_403_and_writes_nothing(restricted: None):
    reply = create(DirectClient("reader-key"))
    assert reply.status == 403 and reply.error_code == "ROLE_FORBIDDEN"
    assert DirectClient("writer-key").request("GET", doc_url()).status == 404


def test_writer_is_recorded_as_updated_by(restricted: None):
    reply = create(DirectClient("writer-key"))
    assert reply.data["document"]["updated_by"] == "writer"


def test_request_id_appears_in_the_log_line(restricted: None, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.INFO, logger="memnet.api"):
        reply = DirectClient("writer-key").request("GET", doc_url())
    request_id = reply.data["error"]["request_id"]
    assert any(request_id in r.getMessage() and "404" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("callers", "field"),
    [
        ({"callers": {}}, "/callers"),
        ({"callers": [{**READER, "key_sha256": "short"}]}, "/callers/0/key_sha256"),
        ({"callers": [{**READER, "roles": ["root"]}]}, "/callers/0/roles"),
        # Every name an entry uses must exist: a profile, a tenant id, at least one of each.
        ({"callers": [{**READER, "profiles": ["no-such-profile"]}]}, "/callers/0/profiles/0"),
        ({"callers": [WRITER, {**READER, "profiles": ["*", "gone"]}]}, "/callers/1/profiles/1"),
        ({"callers": [{**READER, "tenants": ["t1", "acme "]}]}, "/callers/0/tenants/1"),
        ({"callers": [{**READER, "tenants": []}]}, "/callers/0/tenants"),
        ({"callers": [{**READER, "profiles": []}]}, "/callers/0/profiles"),
        ({"callers": [{**READER, "roles": []}]}, "/callers/0/roles"),
        ({"callers": [{**READER, "clearance": "secret"}]}, "/callers/0/clearance"),
    ],
)
def test_broken_callers_file_names_the_field(tmp_path: Path, callers: object, field: str):
    path = tmp_path / "callers.json"
    path.write_text(json.dumps(callers))
    with pytest.raises(ConfigError) as caught:
        bootstrap.build(make_settings(tmp_path, callers_file=path))
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"MEMNET_STORAGE": "s3"}, "MEMNET_STORAGE"),
        ({"MEMNET_STORAGE": "azure"}, "MEMNET_BLOB"),
        ({"MEMNET_IDEMPOTENCY_TTL_SECONDS": "soon"}, "MEMNET_IDEMPOTENCY_TTL_SECONDS"),
        (
            {
                "MEMNET_STORAGE": "azure",
                "MEMNET_BLOB": "UseDevelopmentStorage=true",
            },
            "MEMNET_QUEUE",
        ),
        ({"MEMNET_SEARCH": "elastic"}, "MEMNET_SEARCH"),
        ({"MEMNET_SEARCH": "azure"}, "MEMNET_SEARCH_ENDPOINT"),
        ({"MEMNET_CONTEXT_INDEX_TTL_SECONDS": "-1"}, "MEMNET_CONTEXT_INDEX_TTL_SECONDS"),
        ({"MEMNET_CONTEXT_SEMANTIC_TTL_SECONDS": "later"}, "MEMNET_CONTEXT_SEMANTIC_TTL_SECONDS"),
        ({"MEMNET_CONTEXT_READ_WORKERS": "-2"}, "MEMNET_CONTEXT_READ_WORKERS"),
        ({"MEMNET_SEARCH_MAX_POSTINGS": "many"}, "MEMNET_SEARCH_MAX_POSTINGS"),
        ({}, "MEMNET_CALLERS_FILE"),
    ],
)
def test_bad_settings_fail_fast(env: dict[str, str], field: str):
    with pytest.raises(ConfigError) as caught:
        Settings.from_env(
            {"MEMNET_CALLERS_FILE": "c.json", **env} if field != "MEMNET_CALLERS_FILE" else env
        )
    assert caught.value.field == field


def test_context_cache_settings_reach_the_service():
    settings = Settings.from_env(
        {
            "MEMNET_CALLERS_FILE": "c.json",
            "MEMNET_CONTEXT_INDEX_TTL_SECONDS": "0",
            "MEMNET_CONTEXT_SEMANTIC_TTL_SECONDS": "2.5",
            "MEMNET_CONTEXT_READ_WORKERS": "0",
        }
    )
    assert (
        settings.context_index_ttl_seconds,
        settings.context_semantic_ttl_seconds,
        settings.context_read_workers,
    ) == (0.0, 2.5, 0)


def serve(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``memnet serve`` (as ``python -m memnet``) with ``env`` (and PATH only) until it exits."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "memnet",
            "serve",
            "--port",
            "0",
            "--settings",
            "none.json",
            "--data-dir",
            str(tmp_path / "data"),
        ],
        cwd=REPO,
        env={**env, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_serve_refuses_to_start_with_a_broken_profile(tmp_path: Path):
    (tmp_path / "bad.json").write_text('{"profile_id": "bad"}')
    env = {"MEMNET_PROFILES_DIR": str(tmp_path), "MEMNET_CALLERS_FILE": "callers.dev.json"}
    result = serve(tmp_path, env)
    assert result.returncode == 2
    assert "mem.net cannot start:" in result.stderr and "Traceback" not in result.stderr
    assert "bad.json" in result.stderr and "document_bindings" in result.stderr


def test_serve_refuses_a_caller_bound_to_a_profile_that_does_not_exist(tmp_path: Path):
    """Once accepted, such a caller got 400 PROFILE_REQUIRED on every request."""
    callers = tmp_path / "callers.json"
    stray = {**WRITER, "caller_id": "stray", "profiles": ["project-copilot-v2"]}
    callers.write_text(json.dumps({"callers": [READER, stray]}))
    result = serve(tmp_path, {"MEMNET_CALLERS_FILE": str(callers)})
    assert result.returncode == 2
    assert "mem.net cannot start:" in result.stderr and "Traceback" not in result.stderr
    for named in (str(callers), "/callers/1/profiles/0", "'stray'", "'project-copilot-v2'"):
        assert named in result.stderr


def test_the_search_budget_setting_reaches_the_index(tmp_path):
    from memnet.wiring import search_index

    env = {"MEMNET_CALLERS_FILE": "c.json", "MEMNET_DATA_DIR": str(tmp_path)}
    default = search_index(Settings.from_env(env))
    unlimited = search_index(Settings.from_env({**env, "MEMNET_SEARCH_MAX_POSTINGS": "0"}))
    assert (default._max_postings, unlimited._max_postings) == (512, sys.maxsize)
