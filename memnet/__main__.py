"""``python -m memnet replay|sweep|compact|forget|hold ...``: the core's operator commands,
over the configured backends. The governance commands (``sweep``, ``compact``,
``forget``, ``hold``) are in :mod:`memnet.commands`.

``python -m memnet replay SNAPSHOT [--dry-run] [--extractor rules|openai|azure-openai]``
is one snapshot's replay.

SNAPSHOT is ``tenant/user/conversation/snapshot`` or the snapshot's
``blob://tenants/.../snapshots/<conversation>/<snapshot>.json`` URI. ``--dry-run``
prints, as JSON, what replaying it now would write (each patch's outcome: applied,
rebased, redirected, unchanged, conflict or rejected) and the difference from what its
replay wrote before, writing nothing; ``--extractor`` picks another extractor for it
(configured by the same settings as the worker's). Without ``--dry-run`` it runs the
replay here, as the queue worker would (a finished replay is left as it is).

The host's commands (``serve``, ``reindex``, ...) are ``python -m funchost``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Sequence

from memnet.commands import add_commands
from memnet.domain.errors import ConfigError
from memnet.domain.layout import SnapshotRef
from memnet.local_settings import load_local_settings
from memnet.settings import LOCAL_SETTINGS


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m memnet", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay one snapshot, or show a dry run")
    replay.add_argument("snapshot", help="tenant/user/conversation/snapshot or its blob:// URI")
    replay.add_argument("--dry-run", action="store_true", help="show, write nothing")
    replay.add_argument("--extractor", choices=("rules", "openai", "azure-openai"))
    replay.add_argument("--settings", default=str(LOCAL_SETTINGS), help="values file")
    add_commands(commands)
    args = parser.parse_args(argv)
    if args.command != "replay":
        return _governance(args)
    ref = parse_snapshot(args.snapshot)
    if ref is None:
        print(f"not a snapshot: {args.snapshot!r}", file=sys.stderr)
        return 2
    try:
        return _replay(ref, args)
    except ConfigError as error:
        print(f"mem.net cannot start: {error}", file=sys.stderr)
        return 2


def parse_snapshot(text: str) -> SnapshotRef | None:
    from memnet.services.snapshots import snapshot_ref_of

    if text.startswith("blob://"):
        return snapshot_ref_of(text.removeprefix("blob://"))
    parts = text.strip("/").split("/")
    if len(parts) != 4:
        return None
    tenant, user, conversation, snapshot = parts
    name = SnapshotRef(tenant, user, conversation, snapshot).blob_name
    return snapshot_ref_of(name)


def _replay(ref: SnapshotRef, args: argparse.Namespace) -> int:
    from memnet import bootstrap, callers, wiring
    from memnet.services.replay_preview import preview
    from memnet.settings import Settings

    load_local_settings(args.settings)
    settings = callers.with_vault_secrets(Settings.from_env())
    services = bootstrap.build(settings)
    if not args.dry_run:
        record = services.replay.run(ref)
        print(json.dumps(record.as_json(), indent=2, ensure_ascii=False))
        return 0 if record.status != "failed" else 1
    extractor = services.replay.extractor
    if args.extractor is not None:
        chosen = dataclasses.replace(settings, extractor=args.extractor)
        chosen.check()
        extractor = wiring.make_extractor(chosen)
    print(json.dumps(preview(services.replay, ref, extractor), indent=2, ensure_ascii=False))
    return 0


def _governance(args: argparse.Namespace) -> int:
    from memnet import bootstrap, callers, commands
    from memnet.settings import Settings

    load_local_settings(args.settings)
    try:
        services = bootstrap.build(callers.with_vault_secrets(Settings.from_env()))
    except ConfigError as error:
        print(f"mem.net cannot start: {error}", file=sys.stderr)
        return 2
    return commands.run(services, args)


if __name__ == "__main__":
    sys.exit(main())
