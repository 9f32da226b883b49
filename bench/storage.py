"""Storage side of the benchmark: the backends (embedded files, Azurite), raw BlobStore
call latency in-process, and the storage calls one request makes (counted, not guessed)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import REPO, Client, create, doc_url, patch, percentile, time_calls
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
            "MEMNET_BLOB": conn,
            # Azure storage needs a queue too; the benchmarks' requests never use it.
            "MEMNET_QUEUE": connection_string(QueueEndpoint=queues.endpoint),
        }
        yield Backend(name, env, stores["benchraw"])
    finally:
        queues.stop()
        service.stop()


# -- storage: raw adapter calls and calls per request ---------------------------------------


RAW_BLOB = json.dumps({"padding": "x" * 1000}).encode()


def raw_latency(store: BlobStore, count: int) -> dict[str, dict[str, Any]]:
    """``read``, ``write`` If-Match and create-only ``write`` of a ~1 KB blob."""
    data = RAW_BLOB
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


def durable_latency(directory: Path, count: int) -> dict[str, dict[str, Any]]:
    """The raw system calls of the local store's durable write, without the store, on a
    ~1 KB blob: ``write_create`` (temp file written, fsynced, renamed to a new name,
    directory fsynced), ``write_if_match`` (the same, renamed over an existing file) and
    ``read`` (open, read, close). Each write also reports the p50 of its four steps (the
    store also sets the ETag attribute on the temp file: a few microseconds, left out)."""
    directory.mkdir(parents=True, exist_ok=True)
    _durable_write(str(directory), "blob.json")

    def read(_: int) -> None:
        with open(directory / "blob.json", "rb") as file:
            file.read()

    return {
        "read": time_calls(read, count),
        "write_create": _timed_writes(directory, lambda i: f"new-{i}.json", count),
        "write_if_match": _timed_writes(directory, lambda _: "blob.json", count),
    }


def _timed_writes(directory: Path, name: Callable[[int], str], count: int) -> dict[str, Any]:
    laps: list[dict[str, float]] = []
    stats = time_calls(lambda i: laps.append(_durable_write(str(directory), name(i))), count)
    steps = {step: round(percentile([lap[step] for lap in laps], 50), 3) for step in laps[0]}
    return {**stats, "steps_p50_ms": steps}


def _durable_write(directory: str, leaf: str) -> dict[str, float]:
    """One durable write, as the store makes it; the milliseconds of each step."""
    laps, begun = {}, time.perf_counter()

    def lap(step: str) -> None:
        nonlocal begun
        now = time.perf_counter()
        laps[step], begun = (now - begun) * 1000, now

    temp = os.path.join(directory, f".memnet-tmp-{uuid.uuid4().hex[:16]}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, RAW_BLOB)
    lap("write")
    os.fsync(fd)
    os.close(fd)
    lap("fsync")
    os.replace(temp, os.path.join(directory, leaf))
    lap("rename")
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(fd)
    os.close(fd)
    lap("fsync_directory")
    return laps


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

    def read(self, name: str, *, max_bytes: int | None = None) -> Any:
        self.calls.append("read")
        return self.inner.read(name, max_bytes=max_bytes)

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

    def list_folder(self, prefix: str) -> Iterator[str]:
        self.calls.append("list")
        return self.inner.list_folder(prefix)

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
        ops = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "x" * 100}}]
        etag = create(client, url, ops)
        counting.calls.clear()
        client.request("GET", url)
        got, counting.calls = counting.calls, []
        patch(client, url, ops, etag)
        return {"get": got, "patch": counting.calls}
    finally:
        running.stop()
        bootstrap.install(None)


def storage_ratio(result: dict[str, Any], raw: str = "raw") -> dict[str, Any]:
    """PATCH p50 (1 client) over the sum of the raw p50s of the calls one PATCH makes,
    timed through the adapter (``raw``) or as bare system calls (``raw_durable``)."""
    calls = result["storage_calls"]["patch"]
    total = sum(result[raw][_RAW_KIND.get(kind, kind)]["p50_ms"] for kind in calls)
    patch_p50 = result["patch"][0]["p50_ms"]
    return {
        "calls": len(calls),
        "sum_p50_ms": round(total, 3),
        "patch_p50_ms": patch_p50,
        "ratio": round(patch_p50 / total, 2),
    }


_RAW_KIND = {"read_if_changed": "read", "write_plain": "write_if_match"}  # same calls


def durable_target(result: dict[str, Any], limit: float = 2.0) -> dict[str, Any]:
    """Issue 9: local PATCH p50 at 1 client within 2x the sum of its raw durable calls."""
    ratio = result["durable_ratio"]["ratio"]
    return {
        "target": f"local PATCH p50 <= {limit:g}x sum of its raw durable storage calls, 1 client",
        "value": f"{ratio:.2f}x",
        "limit": f"{limit}x",
        "met": ratio <= limit,
    }
