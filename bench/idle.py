"""Benchmark: what the local host costs while nobody calls it, over a large store
(issue 29 item 5).

    python -m bench.idle                          # 200,000 blobs, 120 s measured
    python -m bench.idle --blobs 50000 --seconds 30

Generates an embedded store straight onto disk (``bench.sweep.generate``: many users,
each with documents, events, snapshots, audit and idempotency records), with a finished
replay record for every snapshot, as a store that has been in use holds. Then
``memnet serve`` starts on it with its defaults (blob trigger, queue workers, timers);
after its first scan has fired the snapshot trigger for every stored snapshot (each
finds its replay finished: nothing is queued), the server process's CPU time (user +
system, ``/proc/<pid>/stat``) is read over ``--seconds`` of idleness. Prints one JSON
line: the percentage of one core, the blob count, the poll interval, the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from bench.harness import machine, start_server
from bench.sweep import CONTAINER, generate
from memnet.adapters.clock import SystemClock
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.domain.layout import SnapshotRef
from memnet.services.replay.records import ReplayRecords

TICKS = os.sysconf("SC_CLK_TCK")
WARM_TIMEOUT_S = 600.0


def finish_replays(root: Path) -> int:
    """Give every generated snapshot a finished replay record (through the records'
    own code, fsync off as for any benchmark data); how many."""
    records = ReplayRecords(FileBlobStore(root, CONTAINER, fsync=False), SystemClock())
    store = root / CONTAINER
    count = 0
    for snapshot in store.glob("tenants/*/users/*/snapshots/*/*.json"):
        parts = snapshot.relative_to(store).parts
        ref = SnapshotRef(parts[1], parts[3], parts[5], snapshot.stem)
        records.create(ref, source="upload")
        records.update(ref, lambda r: replace(r, status="done", enqueued=True, finished=True))
        count += 1
    return count


def cpu_seconds(pid: int) -> float:
    """User + system CPU of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14, 15)


def settled(pid: int, log: Path, snapshots: int) -> float:
    """Wait until the first scan fired the trigger for every snapshot; the seconds it took."""
    started = time.monotonic()
    while time.monotonic() - started < WARM_TIMEOUT_S:
        fired = log.read_text(errors="replace").count("blob function snapshot_written ran")
        if fired >= snapshots:
            return time.monotonic() - started
        time.sleep(1.0)
    raise RuntimeError(f"the first scan did not fire for {snapshots} snapshots in time")


def run(blobs: int, seconds: float) -> dict[str, object]:
    root = Path(tempfile.mkdtemp(prefix="memnet-idle-"))
    try:
        counts = generate(root, blobs, tenants=20)
        snapshots = finish_replays(root)
        server = start_server({"MEMNET_DATA_DIR": str(root)})
        try:
            log = server.workdir / "server.log"
            polling = os.environ.get("FUNCHOST_BLOB_POLL_SECONDS", "").strip() not in ("0", "0.0")
            warm = settled(server.process.pid, log, snapshots) if polling else 0.0
            before = cpu_seconds(server.process.pid)
            time.sleep(seconds)
            spent = cpu_seconds(server.process.pid) - before
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {
        "bench": "idle",
        "blobs": counts["blobs"] + snapshots,
        "snapshots": snapshots,
        "poll_seconds": os.environ.get("FUNCHOST_BLOB_POLL_SECONDS", "default"),
        "first_scan_seconds": round(warm, 1),
        "measured_seconds": seconds,
        "cpu_percent_of_one_core": round(100 * spent / seconds, 2),
        "machine": machine(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blobs", type=int, default=200_000, help="user blobs to generate")
    parser.add_argument("--seconds", type=float, default=120.0, help="idle time measured")
    args = parser.parse_args(argv)
    print(json.dumps(run(args.blobs, args.seconds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
