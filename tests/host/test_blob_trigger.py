"""Blob triggers on the local host (funchost.blobs): the path template, with its
``%SETTING%`` resolved, is polled over a BlobStore; each new matching blob fires its
function once with what its parameter's type asks for, as the Functions worker binds it
(a real ``func.blob.InputStream`` of the content, or for the ``BlobClient`` SDK type a real
``azure.storage.blob.BlobClient`` naming the blob, which the host never reads); a failing
one is retried, then given up (docs/architecture.md, "One set of function code")."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import azure.functions as func
import azurefunctions.extensions.bindings.blob as blob
import pytest
from azure.storage.blob import BlobClient

import funchost
from funchost import RunningServer, functions_of, start_in_thread
from funchost.blobs import MAX_ATTEMPTS, binds_client, compile_blob_path, resolve_settings
from funchost.settings import blob_poll_seconds
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.adapters.memory.blobstore import MemoryBlobStore
from memnet.ports import Blob, BlobStore, Condition

T = TypeVar("T")
CONTAINER = "blob-tests"
POLL = 0.05

blob_app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
inbox_calls: list[tuple[str | None, bytes]] = []
poison_attempts: list[str | None] = []
elsewhere_calls: list[str | None] = []
client_calls: list[tuple[type, str, str]] = []


@blob_app.blob_trigger(
    arg_name="blob",
    path="%FH_BLOB_CONTAINER%/inbox/{a}/{b}.json",
    connection="AzureWebJobsStorage",
    source=func.BlobSource.EVENT_GRID,
)
def inbox_written(blob: func.InputStream) -> None:
    inbox_calls.append((blob.name, blob.read()))


@blob_app.blob_trigger(
    arg_name="blob", path="%FH_BLOB_CONTAINER%/poison/{name}.json", connection="AzureWebJobsStorage"
)
def always_fails(blob: func.InputStream) -> None:
    poison_attempts.append(blob.name)
    raise RuntimeError("never works")


@blob_app.blob_trigger(
    arg_name="blob", path="another-container/inbox/{a}/{b}.json", connection="AzureWebJobsStorage"
)
def other_container(blob: func.InputStream) -> None:
    elsewhere_calls.append(blob.name)


@blob_app.blob_trigger(
    arg_name="client",
    path="%FH_BLOB_CONTAINER%/clients/{a}/{b}.json",
    connection="AzureWebJobsStorage",
    source=func.BlobSource.EVENT_GRID,
)
def client_named(client: blob.BlobClient) -> None:
    client_calls.append((type(client), client.container_name, client.blob_name))


class Unreadable:
    """A BlobStore whose blobs can be listed but never read: all a host needs to run a
    function bound to a client."""

    def __init__(self, store: BlobStore) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        raise PermissionError(f"blob {name} is not readable here")


def wait_for(probe: Callable[[], T], seconds: float = 5.0) -> T:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(0.02)
    raise AssertionError(f"condition not met after {seconds} s")


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FileBlobStore]:
    monkeypatch.setenv("FH_BLOB_CONTAINER", CONTAINER)
    for calls in (inbox_calls, poison_attempts, elsewhere_calls, client_calls):
        calls.clear()
    yield FileBlobStore(tmp_path, CONTAINER, fsync=False)


def put(store: FileBlobStore, name: str, data: bytes = b"{}") -> None:
    store.write(name, data, Condition.create_only())


def serve(
    store: BlobStore | None, poll: float | None = POLL, app: func.FunctionApp = blob_app
) -> RunningServer:
    """The host over ``store`` (None: no store), polling every ``poll`` s (None: setting)."""
    return start_in_thread(
        app, blobs=store, blob_container=CONTAINER, blob_poll_seconds=poll, run_timers=False
    )


def test_each_matching_blob_fires_once_with_its_name_and_data(store: FileBlobStore) -> None:
    with serve(store):
        put(store, "inbox/t1/s1.json", b'{"n": 1}')
        for name in ("inbox/t1.json", "inbox/t1/s1.txt", "inbox/t1/x/s2.json", "outbox/t/s.json"):
            put(store, name)
        wait_for(lambda: inbox_calls)
        put(store, "inbox/t2/s2.json", '{"n": "☃"}'.encode())
        wait_for(lambda: len(inbox_calls) == 2)
        time.sleep(POLL * 6)
    assert inbox_calls == [
        (f"{CONTAINER}/inbox/t1/s1.json", b'{"n": 1}'),
        (f"{CONTAINER}/inbox/t2/s2.json", '{"n": "☃"}'.encode()),
    ]
    assert elsewhere_calls == []


def test_a_client_typed_function_gets_a_client_naming_the_blob_it_never_reads(
    store: FileBlobStore, caplog: pytest.LogCaptureFixture
) -> None:
    put(store, "clients/t☃/s 1.json", b"x" * 100_000)
    put(store, "inbox/t1/s1.json")
    with caplog.at_level(logging.INFO, logger="funchost"), serve(Unreadable(store)):
        wait_for(lambda: client_calls)
        wait_for(lambda: "reading blob inbox/t1/s1.json for inbox_written failed" in caplog.text)
    assert client_calls == [(BlobClient, CONTAINER, "clients/t☃/s 1.json")]
    assert inbox_calls == []  # a stream-typed function needs the content: not fired


def test_the_parameter_type_decides_what_a_blob_function_gets() -> None:
    functions = {f.name: f for f in functions_of(blob_app).blob_functions}
    assert {name: binds_client(f) for name, f in functions.items()} == {
        "inbox_written": False,
        "always_fails": False,
        "other_container": False,
        "client_named": True,
    }


def test_an_sdk_type_the_host_does_not_emulate_is_not_started(
    store: FileBlobStore, caplog: pytest.LogCaptureFixture
) -> None:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
    calls: list[object] = []

    @app.blob_trigger(arg_name="box", path="%FH_BLOB_CONTAINER%/inbox/{a}/{b}.json", connection="S")
    def whole_container(box: blob.ContainerClient) -> None:
        calls.append(box)

    put(store, "inbox/a/one.json")
    with caplog.at_level(logging.INFO, logger="funchost"), serve(store, app=app):
        time.sleep(POLL * 6)
    assert calls == []
    assert "blob function whole_container not started: SDK type" in caplog.text


def test_existing_blobs_fire_on_startup(store: FileBlobStore) -> None:
    put(store, "inbox/a/one.json", b"1")
    put(store, "inbox/b/two.json", b"2")
    with serve(store):
        wait_for(lambda: len(inbox_calls) == 2)
    assert sorted(data for _, data in inbox_calls) == [b"1", b"2"]


def test_failing_function_is_retried_then_given_up(
    store: FileBlobStore, caplog: pytest.LogCaptureFixture
) -> None:
    put(store, "poison/bad.json")
    with caplog.at_level(logging.INFO, logger="funchost"), serve(store):
        wait_for(lambda: "gave up" in caplog.text)
        time.sleep(POLL * 6)
    assert poison_attempts == [f"{CONTAINER}/poison/bad.json"] * MAX_ATTEMPTS
    assert f"always_fails gave up on poison/bad.json after {MAX_ATTEMPTS} attempts" in caplog.text


def test_poll_interval_zero_disables_blob_triggers(
    store: FileBlobStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("FUNCHOST_BLOB_POLL_SECONDS", "0")
    put(store, "inbox/a/one.json")
    with caplog.at_level(logging.INFO, logger="funchost"), serve(store, poll=None):
        time.sleep(POLL * 6)
    assert inbox_calls == []
    assert "polling" not in caplog.text


def test_poll_interval_setting_is_read_from_the_environment(
    store: FileBlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FUNCHOST_BLOB_POLL_SECONDS", str(POLL))
    put(store, "inbox/a/one.json")
    with serve(store, poll=None):
        wait_for(lambda: inbox_calls)


def test_without_a_store_no_blob_function_runs(store: FileBlobStore) -> None:
    put(store, "inbox/a/one.json")
    with serve(None):
        time.sleep(POLL * 6)
    assert inbox_calls == []


def test_funchost_serve_polls_the_apps_blob_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memnet import bootstrap
    from memnet.cli import main

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("MEMNET_BLOB_CONTAINER", "served-blobs")
    monkeypatch.setenv("MEMNET_CALLERS_FILE", str(repo / "callers.dev.json"))
    monkeypatch.setenv("MEMNET_PROFILES_DIR", str(repo / "profiles"))
    monkeypatch.setenv("MEMNET_DATA_DIR", str(tmp_path))
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(funchost, "serve_forever", lambda *_, **kw: calls.append(kw))
    try:
        assert main(["serve", "--settings", str(tmp_path / "absent.json")]) == 0
        services = bootstrap.services()
    finally:
        bootstrap.install(None)
    assert calls[0]["blobs"] is services.blobs
    assert calls[0]["blob_container"] == "served-blobs"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 60.0), ("0", 0.0), ("0.05", 0.05), (" 10 ", 10.0)],
)
def test_blob_poll_seconds_setting(text: str, expected: float) -> None:
    assert blob_poll_seconds({"FUNCHOST_BLOB_POLL_SECONDS": text}) == expected


@pytest.mark.parametrize("text", ["-1", "soon", "inf", "nan"])
def test_blob_poll_seconds_rejects_bad_values(text: str) -> None:
    with pytest.raises(ValueError, match="FUNCHOST_BLOB_POLL_SECONDS"):
        blob_poll_seconds({"FUNCHOST_BLOB_POLL_SECONDS": text})


def test_the_apps_snapshot_path_compiles() -> None:
    path = compile_blob_path(
        "%MEMNET_BLOB_CONTAINER%/tenants/{tenant_id}/users/{user_id}/snapshots/"
        "{conversation_id}/{snapshot_id}.json",
        {"MEMNET_BLOB_CONTAINER": "memnet"},
    )
    assert path.container == "memnet"
    assert path.matches("tenants/t/users/u/snapshots/c/s1.json")
    assert not path.matches("tenants/t/users/u/snapshots/c/s1.json.tmp")
    assert not path.matches("tenants/t/users/u/snapshots/c/d/s1.json")
    assert not path.matches("tenants/t/users/u/replays/c/s1.json")


class ListedFolders(MemoryBlobStore):
    """A memory store that records the folders listed."""

    def __init__(self) -> None:
        super().__init__()
        self.listed: list[str] = []

    def list_folder(self, prefix: str) -> Iterator[str]:
        self.listed.append(prefix)
        return super().list_folder(prefix)


def test_a_poll_lists_only_the_folders_the_template_reaches() -> None:
    path = compile_blob_path("box/tenants/{t}/users/{u}/snapshots/{c}/{s}.json", {})
    store = ListedFolders()
    for name in (
        "tenants/t/users/u/snapshots/c/s1.json",
        "tenants/t/users/u/snapshots/c/s2.json.tmp",
        "tenants/t/users/u/snapshots/c/d/s3.json",
        "tenants/t/users/u/replays/c/s1.json",
        "tenants/t/users/u/documents/user/user_dynamic.json",
        "tenants/t/users/v/snapshots/c2/x.json",
        "tenants/t2/users/w/events/e.json",
        "tenants/t2/other/w/snapshots/c/y.json",
    ):
        store.write(name, b"{}", Condition.create_only())
    found = path.names(store)
    assert found == [
        "tenants/t/users/u/snapshots/c/s1.json",
        "tenants/t/users/v/snapshots/c2/x.json",
    ]
    assert sorted(store.listed) == [
        "tenants/",
        "tenants/t/users/",
        "tenants/t/users/u/snapshots/",
        "tenants/t/users/u/snapshots/c/",
        "tenants/t/users/v/snapshots/",
        "tenants/t/users/v/snapshots/c2/",
        "tenants/t2/users/",
        "tenants/t2/users/w/snapshots/",
    ]


def test_a_directory_the_store_would_not_name_does_not_stop_the_poll(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path, "box", fsync=False)
    store.write("tenants/t/users/u/snapshots/c/s1.json", b"{}", Condition.create_only())
    (tmp_path / "box" / "tenants" / "a\\b" / "users").mkdir(parents=True)  # by hand
    path = compile_blob_path("box/tenants/{t}/users/{u}/snapshots/{c}/{s}.json", {})
    assert path.names(store) == ["tenants/t/users/u/snapshots/c/s1.json"]


def test_template_literals_are_not_patterns() -> None:
    path = compile_blob_path("box/a.b+c/{x}.json", {})
    assert path.segments[0] == "a.b+c"
    assert path.matches("a.b+c/1.json")
    assert not path.matches("aXb+c/1.json") and not path.matches("a.bbc/1.json")


def test_missing_setting_is_named() -> None:
    with pytest.raises(ValueError, match="'NOT_SET_ANYWHERE'"):
        resolve_settings("%NOT_SET_ANYWHERE%/x/{a}", {})


@pytest.mark.parametrize(
    "path", ["box", "box/", "{c}/x.json", "box/{a", "box/{}.json", "box/a//{x}", "box/../{x}"]
)
def test_bad_paths_are_refused(path: str) -> None:
    with pytest.raises(ValueError, match="blob path"):
        compile_blob_path(path, {})
