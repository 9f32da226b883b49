"""Benchmark: one full retention sweep over N embedded blobs (issue 11 item 8).

    python -m bench.sweep --blobs 1000000          # default: 1,000,000
    python -m bench.sweep --blobs 200000 --keep /tmp/sweep-data

Generates a container of user data straight onto disk in the file store's layout (the
store reads hand-placed files; fsync off, as for any benchmark data): many tenants and
users, each with a document, events, snapshots, audit records and idempotency records,
90% of them last modified 400 days ago (past every shipped rule) and 10% today. Then a
fresh process runs the real sweep (``RetentionService`` over ``FileBlobStore`` and the
SQLite search index, pages of ``MEMNET_SWEEP_PAGE_SIZE``) until the pass is complete,
and reports wall time, blobs listed per second, blobs deleted, and the peak RSS of the
sweeping process (``ru_maxrss``), which must not grow with N. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CONTAINER = "memnet"
PER_USER = 100  # blobs per user: 1 document, 40 events, 15 snapshots, 30 audit, 14 keys
FRESH_EVERY = 10  # one blob in ten is fresh (kept)


def generate(root: Path, blobs: int, tenants: int) -> dict[str, int]:
    """Write ``blobs`` blobs under ``root`` (approximately: whole users); return counts."""
    users = max(1, blobs // PER_USER)
    old = time.time() - 400 * 86400
    counts = {"blobs": 0, "expired": 0}
    for u in range(users):
        prefix = root / CONTAINER / "tenants" / f"t{u % tenants}" / "users" / f"u{u:07d}"
        for i, (name, data) in enumerate(_user_blobs()):
            path = prefix / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            if i % FRESH_EVERY and not name.startswith("documents/"):
                os.utime(path, (old, old))
                counts["expired"] += 1
            counts["blobs"] += 1
    return counts


def _user_blobs() -> list[tuple[str, bytes]]:
    past = datetime.now(UTC) - timedelta(days=400)
    millis = int(past.timestamp() * 1000)
    expires = (past + timedelta(days=1)).isoformat().replace("+00:00", "Z")
    found: list[tuple[str, bytes]] = [("documents/user/user_dynamic.json", b'{"content":{}}')]
    found += [(f"events/evt_{secrets.token_hex(8)}.json", b'{"digest":"x"}') for _ in range(40)]
    found += [(f"snapshots/c{i % 5}/s{i}.json", b'{"sealed":"x"}') for i in range(15)]
    found += [
        (f"audit/chg_{millis + i:012x}{secrets.token_hex(8)}.json", b'{"ops":[]}')
        for i in range(30)
    ]
    record = json.dumps({"state": "complete", "expires_at": expires}).encode()
    found += [(f"idempotency/{secrets.token_hex(32)}.json", record) for _ in range(14)]
    return found


def sweep(data_dir: Path, page_size: int) -> dict[str, Any]:
    """Run the sweep to the end of its pass in this process; the measurements."""
    from dataclasses import replace

    from memnet import bootstrap
    from tests.conftest import make_settings

    settings = replace(
        make_settings(data_dir),
        local_fsync=False,
        sweep_page_size=page_size,
        job_max_seconds=10**6,
    )
    services = bootstrap.build(settings)
    started = time.perf_counter()
    runs, visited, deleted = 0, 0, 0
    while True:
        report = services.retention.sweep().as_json()
        runs += 1
        visited += report["visited"]
        deleted += sum(c.get("deleted", 0) for c in report["counts"].values())
        if report["pass_complete"]:
            break
    seconds = time.perf_counter() - started
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {
        "seconds": round(seconds, 1),
        "visited": visited,
        "deleted": deleted,
        "blobs_per_second": round(visited / seconds),
        "peak_rss_mib": round(rss_kib / 1024, 1),
        "runs": runs,
        "page_size": page_size,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sweep", description=__doc__)
    parser.add_argument("--blobs", type=int, default=1_000_000)
    parser.add_argument("--tenants", type=int, default=10)
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="generate here and keep it")
    parser.add_argument("--sweep-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.sweep_only:
        print(json.dumps(sweep(args.sweep_only, args.page_size)))
        return 0
    root = args.keep or Path(tempfile.mkdtemp(prefix="memnet-sweep-"))
    try:
        started = time.perf_counter()
        counts = generate(root, args.blobs, args.tenants)
        generated = round(time.perf_counter() - started, 1)
        child = [sys.executable, "-m", "bench.sweep", "--sweep-only", str(root)]
        child += ["--page-size", str(args.page_size)]
        out = subprocess.run(child, cwd=REPO, check=True, capture_output=True, text=True)
        result = {**counts, "generate_seconds": generated, **json.loads(out.stdout)}
        result["machine"] = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
        print(json.dumps(result))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
