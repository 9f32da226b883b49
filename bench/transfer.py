"""Import benchmark (issue 27, item 6): a user with N events (100k by default) and M
document changes (10k: 100 documents of 100 changes each) on the embedded backend, its
archive (``memnet-export/1``, written by tests/archives.py from the source's storage),
then ``Importer.run`` of that archive into a second, empty embedded deployment.

The source's events are written straight through the blob store (as the event service
stores them); its changes go through the document service, so the audit records are
real. Reported: the import's wall and CPU time, records per second, the archive's
size, and the process's peak RSS while importing (sampled as bench/forget.py does;
``--tracemalloc`` adds the peak of Python's own allocations): the import holds one line
and one batch of 200 records at a time, and the change ids of the audit parts (for the
audit horizon), never a whole part. fsync is off on both sides (as in the other
benchmarks): with it on, each write's two fsyncs dominate and the number measures the
disk.

    python -m bench.transfer [--events 100000] [--changes 10000] [--tracemalloc] [--out DIR]
"""

from __future__ import annotations

import tempfile
import time
import tracemalloc
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.forget import RssSampler, peak_rss_mib, record
from bench.harness import scale_main
from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import DocumentRef, user_prefix
from memnet.ports import Condition
from memnet.services.events.records import event_name
from memnet.services.records import dump
from memnet.services.transfer.importer import Mapping
from memnet.settings import Settings
from tests import archives
from tests.api.compacting import patch, put

REPO = Path(__file__).resolve().parent.parent
CHANGES_PER_DOCUMENT = 100


def deployment(data: Path) -> Services:
    settings = Settings(
        data_dir=data,
        profiles_dir=REPO / "profiles",
        callers_file=REPO / "callers.dev.json",
        local_fsync=False,
    )
    return bootstrap.build(replace(settings, idempotency_ttl_seconds=0))


def seed(services: Services, events: int, changes: int) -> None:
    for n in range(events):
        item = record("t1", "u1", n)
        services.blobs.write(
            event_name("t1", "u1", item["event_id"]), dump(item), Condition.create_only()
        )
    for d in range(max(1, changes // CHANGES_PER_DOCUMENT)):
        ref = DocumentRef("t1", "u1", "projects", f"project-{d:04d}.json")
        put(services, ref, {"summary": "start", "facets": {}, "recent_notes": []})
        for n in range(1, min(CHANGES_PER_DOCUMENT, changes - d * CHANGES_PER_DOCUMENT)):
            ops = [{"op": "replace", "path": "/content/summary", "value": f"Summary {d}.{n}."}]
            patch(services, ref, ops)


def run(events: int, changes: int, trace: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memnet-bench-transfer-") as tmp:
        source = deployment(Path(tmp) / "source")
        started = time.perf_counter()
        seed(source, events, changes)
        seeded = time.perf_counter()
        archive = archives.write_archive(source, "t1", "u1", Path(tmp) / "archive")
        archived = time.perf_counter()
        size = sum(p.stat().st_size for p in archive.iterdir())
        target = deployment(Path(tmp) / "target")
        importer = bootstrap.importer(target)
        rss_before = peak_rss_mib()
        if trace:
            tracemalloc.start()
        cpu, wall = time.process_time(), time.perf_counter()
        with RssSampler() as sampler:
            report = importer.run(archive, Mapping(), "bench")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        heap_peak = tracemalloc.get_traced_memory()[1] / 2**20 if trace else None
        tracemalloc.stop()
        again = time.perf_counter()
        rerun = importer.run(archive, Mapping(), "bench").status
        rerun_seconds = time.perf_counter() - again
        indexed = sum(1 for _ in target.index.list_event_ids("t1", "u1"))
        blobs = sum(1 for _ in target.blobs.list_names(user_prefix("t1", "u1")))
    written = report.state.written
    total = sum(written.values())
    return {
        "benchmark": "import",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "events": events,
        "changes": changes,
        "seed_seconds": round(seeded - started, 1),
        "archive_seconds": round(archived - seeded, 1),
        "archive_mib": round(size / 2**20, 1),
        "import_seconds": round(wall, 1),
        "import_cpu_seconds": round(cpu, 1),
        "written": written,
        "records_per_second": round(total / wall),
        "events_indexed": indexed,
        "target_blobs_under_user": blobs,
        "conflicts": len(report.state.conflicts),
        "rerun": rerun,
        "rerun_seconds": round(rerun_seconds, 1),
        "peak_rss_mib_before_import": round(rss_before, 1),
        "during_import": sampler.report(),
        "python_heap_peak_mib": None if heap_peak is None else round(heap_peak, 1),
    }


if __name__ == "__main__":
    scale_main("import", __doc__ or "", run)
