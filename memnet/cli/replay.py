"""``replay SNAPSHOT [--dry-run] [--extractor rules|openai|azure-openai]``: one
snapshot's replay.

SNAPSHOT is ``tenant/user/conversation/snapshot`` or the snapshot's
``blob://tenants/.../snapshots/<conversation>/<snapshot>.json`` URI. ``--dry-run``
prints, as JSON, what replaying it now would write (each patch's outcome: applied,
rebased, redirected, unchanged, conflict or rejected) and the difference from what its
replay wrote before, writing nothing; ``--extractor`` picks another extractor for it
(configured by the same settings as the worker's). Without ``--dry-run`` it runs the
replay here, as the queue worker would (a finished replay is left as it is).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from memnet.cli.loading import add_settings_options, load
from memnet.domain.layout import SnapshotRef


def add_commands(commands: Any) -> None:
    replay = commands.add_parser("replay", help="replay one snapshot, or show a dry run")
    replay.add_argument("snapshot", help="tenant/user/conversation/snapshot or its blob:// URI")
    replay.add_argument("--dry-run", action="store_true", help="show, write nothing")
    replay.add_argument("--extractor", choices=("rules", "openai", "azure-openai"))
    add_settings_options(replay)
    replay.set_defaults(run=_replay)


def parse_snapshot(text: str) -> SnapshotRef | None:
    from memnet.services.replay.snapshots import snapshot_ref_of

    if text.startswith("blob://"):
        return snapshot_ref_of(text.removeprefix("blob://"))
    parts = text.strip("/").split("/")
    if len(parts) != 4:
        return None
    tenant, user, conversation, snapshot = parts
    name = SnapshotRef(tenant, user, conversation, snapshot).blob_name
    return snapshot_ref_of(name)


def _replay(args: argparse.Namespace) -> int:
    from memnet import wiring
    from memnet.services.replay.preview import preview

    ref = parse_snapshot(args.snapshot)
    if ref is None:
        print(f"not a snapshot: {args.snapshot!r}", file=sys.stderr)
        return 2
    services = load(args)
    if not args.dry_run:
        record = services.replay.run(ref)
        print(json.dumps(record.as_json(), indent=2, ensure_ascii=False))
        return 0 if record.status != "failed" else 1
    extractor = services.replay.extractor
    if args.extractor is not None:
        chosen = dataclasses.replace(services.settings, extractor=args.extractor)
        chosen.check()
        extractor = wiring.make_extractor(chosen)
    print(json.dumps(preview(services.replay, ref, extractor), indent=2, ensure_ascii=False))
    return 0
