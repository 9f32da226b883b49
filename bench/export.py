"""Export benchmark (issue 27, item 5; docs/performance.md "Export and import (issue
27)"): a user with N events (100k by default) and M committed changes (10k by default,
over 10 documents) on the embedded backend, then the export job, invoked as the queue
trigger would be, and ``verify`` of the archive it wrote.

Events are written straight through the adapters (blob + index entry, fsync off), as
the forget benchmark does; changes go through the document service (the governed write
path: each one an audited PATCH). Reported: the export's wall and CPU time, records and
archive bytes per second, its parts, and memory: the process's peak RSS
(``getrusage`` maxrss) before and after, the highest anonymous RSS sampled during the
export (``bench.forget.RssSampler``), and with ``--tracemalloc`` the peak of Python's
own allocations during it (slower). The archive is streamed a part at a time, so the
peaks follow the part size, not the user's size.

    python -m bench.export [--events 100000] [--changes 10000] [--tracemalloc] [--out DIR]
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.forget import RssSampler, peak_rss_mib, write_events
from bench.harness import machine, scale_main
from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.callers import Caller
from memnet.domain.document_model import Precondition, WriteCommand
from memnet.domain.export_archive import verify
from memnet.domain.layout import DocumentRef, export_file_name
from memnet.domain.patching import parse_ops
from memnet.ports import BlobNotFound
from memnet.services.exports.service import EXPORT_QUEUE
from memnet.settings import Settings

REPO = Path(__file__).resolve().parent.parent
PROFILE = "project-copilot-v1"
WRITER = Caller("bench-writer", frozenset({"*"}), frozenset({"*"}), frozenset({"read", "write"}))
ADMIN = Caller(
    "bench-admin", frozenset({"*"}), frozenset({"*"}), frozenset({"read", "admin", "snapshots"})
)
DOCUMENTS = 10


def write_changes(services: Services, tenant: str, user: str, changes: int) -> None:
    """``changes`` audited PATCHes spread over :data:`DOCUMENTS` project documents."""
    etags: dict[str, str | None] = {}
    for n in range(changes):
        path = f"p{n % DOCUMENTS}.json"
        ref = DocumentRef(tenant, user, "projects", path)
        etag = etags.get(path)
        ops = [{"op": "replace", "path": "/content/summary", "value": f"Summary {n} of {path}"}]
        command = WriteCommand(
            ref=ref,
            profile_id=PROFILE,
            binding_id=None,
            precondition=Precondition(if_match=etag, create=etag is None),
            idempotency_key=f"bench-{n}",
            fingerprint=f"bench-{n}",
            reason="live_update",
            request_id=f"bench-{n}",
            ops=parse_ops(ops),
        )
        etags[path] = services.documents.patch(WRITER, command).body["etag"]


def export(services: Services, tenant: str, user: str) -> dict[str, Any]:
    job = services.exports.request(ADMIN, tenant, user, PROFILE)
    started, cpu = time.perf_counter(), time.process_time()
    while messages := services.queue.receive(EXPORT_QUEUE, max_messages=1):
        for message in messages:
            services.exports.handle_message(message.body)
            services.queue.delete(EXPORT_QUEUE, message)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    done = services.exports.status(ADMIN, tenant, user, job["export_id"])
    assert done["status"] == "done", done
    return {"seconds": elapsed, "cpu_seconds": cpu, "job": done}


def archive_of(services: Services, job: dict[str, Any]) -> tuple[list[str], int]:
    """Problems ``verify`` finds in the stored archive, and its bytes."""
    where = (job["tenant_id"], job["user_id"], job["export_id"])
    size = 0

    def read(name: str) -> bytes | None:
        nonlocal size
        try:
            data = services.blobs.read(export_file_name(*where, name)).data
        except BlobNotFound:
            return None
        size += len(data)
        return data

    manifest = read("manifest.json")
    assert manifest is not None
    return verify(manifest, read), size


def run(events: int, changes: int, trace: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memnet-bench-export-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            profiles_dir=REPO / "profiles",
            callers_file=REPO / "callers.dev.json",
            local_fsync=False,
        )
        services = bootstrap.build(settings)
        seeded = time.perf_counter()
        write_events(services, "t1", "u1", events)
        write_changes(services, "t1", "u1", changes)
        seed_seconds = time.perf_counter() - seeded
        rss_before = peak_rss_mib()
        if trace:
            tracemalloc.start()
        with RssSampler() as sampler:
            outcome = export(services, "t1", "u1")
        heap_peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
        tracemalloc.stop()
        problems, size = archive_of(services, outcome["job"])
    records = outcome["job"]["progress"]["records"]
    return {
        "benchmark": "export",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "events": events,
        "changes": changes,
        "seed_seconds": round(seed_seconds, 1),
        "export_seconds": round(outcome["seconds"], 1),
        "export_cpu_seconds": round(outcome["cpu_seconds"], 1),
        "records": records,
        "records_per_second": round(records / outcome["seconds"]),
        "archive_mib": round(size / 2**20, 1),
        "archive_mib_per_second": round(size / 2**20 / outcome["seconds"], 2),
        "parts": len(outcome["job"]["files"]) - 2,
        "complete": outcome["job"]["complete"],
        "verify_problems": problems,
        "peak_rss_mib_before_export": round(rss_before, 1),
        "peak_rss_mib_after_export": round(peak_rss_mib(), 1),
        "during_export": sampler.report(),
        "python_heap_peak_mib": None if heap_peak is None else round(heap_peak, 1),
    }


if __name__ == "__main__":
    scale_main("export", __doc__ or "", run)
