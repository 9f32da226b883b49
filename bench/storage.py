"""Storage side of the benchmark: the backends (embedded files, Azurite), raw BlobStore
call latency in-process, and the storage calls one request makes (counted, not guessed)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import REPO, Client, create, doc_url, patch, time_calls
from memnet.ports import BlobStore, Condition


@dataclass
class Backend:
    name: str
    server_env: dict[str, str]
    raw_store: BlobStore  # the same adapter, used in-process on a container of its own


@contextlib.contextmanager
def open_backend(name: str) -> Iterator[Backend]:
    if name == "local":
        from memnet.adapters.local.blobstore import FileBlobStore

        with tempfile.TemporaryDirectory(prefix="memnet-bench-raw-") as tmp:
            yield Backend(name, {"MEMNET_STORAGE": "local"}, FileBlobStore(Path(tmp), "benchraw"))
        return
    from memnet.adapters.azure.blobstore import AzureBlobStore
    from tests.azurite import connection_string, start_service

    service, queues = start_service("blob"), start_service("queue")
    try:
        conn = connection_string(BlobEndpoint=service.endpoint)
        stores = {c: AzureBlobStore.from_connection_string(conn, c) for c in ("memnet", "benchraw")}
        for store in stores.values():
            store.ensure_container()
        env = {
            "MEMNET_STORAGE": "azure",
            "MEMNET_BLOB_CONNECTION_STRING": conn,
            # Azure storage needs a queue too; the benchmarks' requests never use it.
            "MEMNET_QUEUE": connection_string(QueueEndpoint=queues.endpoint),
        }
        yield Backend(name, env, stores["benchraw"])
    finally:
        queues.stop()
        service.stop()


# -- storage: raw adapter calls and calls per request ---------------------------------------


def raw_latency(store: BlobStore, count: int) -> dict[str, dict[str, Any]]:
    """``read``, ``write`` If-Match and create-only ``write`` of a ~1 KB blob."""
    data = json.dumps({"padding": "x" * 1000}).encode()
    name, run = "raw/blob.json", uuid.uuid4().hex
    etag = [store.write(name, data, Condition.unconditional())]

    def write_match(_: int) -> None:
        etag[0] = store.write(name, data, Condition.match(etag[0]))

    def write_create(i: int) -> None:
        store.write(f"raw/{run}/{i}.json", data, Condition.create_only())

    return {
        "read": time_calls(lambda _: store.read(name), count),
        "write_if_match": time_calls(write_match, count),
        "write_create": time_calls(write_create, count),
    }


def creation_cost(directory: Path, count: int = 200) -> dict[str, Any]:
    """``open(O_CREAT)`` of new empty files in ``directory``, which are left in place
    (deleting them would itself slow the creations that follow: on ext4 without a journal,
    inode allocation skips every inode of its block group freed in the last minutes)."""
    directory.mkdir(parents=True, exist_ok=True)

    def create_one(i: int) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        os.close(os.open(directory / f"probe{i}", flags, 0o644))

    return time_calls(create_one, count)


class CountingStore:
    """A BlobStore that records the kind of every call it passes on."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner, self.calls = inner, list[str]()

    def read(self, name: str) -> Any:
        self.calls.append("read")
        return self.inner.read(name)

    def read_if_changed(self, name: str, etag: str) -> Any:
        self.calls.append("read_if_changed")
        return self.inner.read_if_changed(name, etag)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        kind = "create" if condition.absent else "if_match" if condition.etag else "plain"
        self.calls.append(f"write_{kind}")
        return self.inner.write(name, data, condition)

    def delete(self, name: str, condition: Condition = Condition()) -> None:
        self.calls.append("delete")
        self.inner.delete(name, condition)

    def list_names(self, prefix: str) -> Iterator[str]:
        self.calls.append("list")
        return self.inner.list_names(prefix)

    def describe(self) -> str:
        return self.inner.describe()


def storage_calls(store: BlobStore) -> dict[str, list[str]]:
    """The storage calls of one GET and one fresh-key PATCH, counted in-process."""
    import function_app
    from funchost import start_in_thread
    from memnet import bootstrap
    from memnet.settings import Settings

    counting = CountingStore(store)
    settings = Settings(profiles_dir=REPO / "profiles", callers_file=REPO / "callers.dev.json")
    bootstrap.install(bootstrap.build(settings, blobs=counting))
    running = start_in_thread(function_app.app, run_timers=False)
    try:
        client, url = Client(running.port), doc_url(f"count-{uuid.uuid4().hex[:8]}")
        ops = [{"op": "add", "path": "/content/preferences/-", "value": "x" * 100}]
        etag = create(client, url, ops)
        counting.calls.clear()
        client.request("GET", url)
        got, counting.calls = counting.calls, []
        patch(client, url, ops, etag)
        return {"get": got, "patch": counting.calls}
    finally:
        running.stop()
        bootstrap.install(None)


def storage_ratio(result: dict[str, Any]) -> dict[str, Any]:
    """PATCH p50 (1 client) over the sum of the raw p50s of the calls one PATCH makes."""
    calls = result["storage_calls"]["patch"]
    total = sum(result["raw"][kind]["p50_ms"] for kind in calls)
    patch_p50 = result["patch"][0]["p50_ms"]
    return {
        "calls": len(calls),
        "sum_p50_ms": round(total, 3),
        "patch_p50_ms": patch_p50,
        "ratio": round(patch_p50 / total, 2),
    }
