"""The export commands (issue 27; docs/export.md):

``export``         write one user's archive (``memnet-export/1``) into a new directory,
                   with a progress bar, then verify it: ``memnet export --tenant T --user U
                   --out DIR`` (as an operator cleared for everything: the archive is
                   complete; audited in the tenant's governance log as the API's are);
``verify-export``  check an archive directory: every part the manifest lists is there
                   and hashes to its entry (exit 1 naming what is wrong).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memnet.cli.governance import DEFAULT_ACTOR, Progress
from memnet.cli.loading import add_settings_options, load
from memnet.domain.callers import ANY, FULL_CLEARANCE, Caller
from memnet.domain.errors import MemnetError
from memnet.domain.export_archive import MANIFEST, verify

if TYPE_CHECKING:
    from memnet.bootstrap import Services


def add_commands(commands: Any) -> None:
    export = commands.add_parser("export", help="write a user's memory as an archive directory")
    export.add_argument("--tenant", required=True)
    export.add_argument("--user", required=True)
    export.add_argument("--out", required=True, help="a new (or empty) directory")
    export.add_argument("--profile", help="the profile whose documents to render (default: any)")
    export.add_argument("--actor", default=DEFAULT_ACTOR, help="who asks (governance log)")
    add_settings_options(export)
    export.set_defaults(run=functools.partial(_export, load))
    check = commands.add_parser("verify-export", help="check an archive's hashes")
    check.add_argument("archive", help="the archive directory")
    check.set_defaults(run=_verify)


class DirectorySink:
    """An archive's files in a directory."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def put(self, name: str, data: bytes) -> None:
        (self._root / name).write_bytes(data)


def _export(load_services: Any, args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"{out}: not an empty directory; an archive goes into a new one", file=sys.stderr)
        return 2
    services: Services = load_services(args)
    caller = Caller(
        args.actor,
        frozenset({args.tenant}),
        frozenset({ANY}),
        frozenset({"read", "admin", "snapshots"}),
        clearance=FULL_CLEARANCE,
    )
    out.mkdir(parents=True, exist_ok=True)
    with Progress("export", "records") as progress:
        try:
            manifest = services.exports.export_to(
                caller,
                (args.tenant, args.user),
                args.profile,
                DirectorySink(out),
                lambda kind, done: progress.show(done, f"writing {kind}", step=kind),
            )
        except MemnetError as error:
            print(f"export refused: {error.message} ({error.code})", file=sys.stderr)
            return 2
    problems = _problems(out)
    summary = {"archive": str(out), **manifest.as_json(), "verified": not problems}
    summary["problems"] = problems
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 1 if problems else 0


def _verify(args: argparse.Namespace) -> int:
    root = Path(args.archive)
    problems = _problems(root)
    print(json.dumps({"archive": str(root), "verified": not problems, "problems": problems}))
    return 1 if problems else 0


def _problems(root: Path) -> list[str]:
    manifest = root / MANIFEST
    if not manifest.is_file():
        return [f"{manifest}: missing"]

    def read(name: str) -> bytes | None:
        path = root / name
        return path.read_bytes() if path.is_file() else None

    return verify(manifest.read_bytes(), read)
