"""``memnet import DIR``: import an export archive into the configured deployment
(issue 27; docs/moving.md), with progress on stderr and a JSON summary on stdout.

Exit codes: ``0`` imported (or already imported: a rerun writes nothing and says
``already_imported``); ``1`` imported, but live writes had taken some records first
(listed under ``conflicts``; those records were not written); ``2`` a usage error;
``3`` refused, nothing written (the archive does not verify, is incomplete or of an
unknown format, is not mapped to the target, the user already holds memory, or another
import into the user is unfinished); the summary is then ``{"error": {code, message}}``;
``4`` storage could not be reached or failed partway (``STORAGE_ERROR``): what was
written stays, and a rerun resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from memnet.cli.governance import DEFAULT_ACTOR, Progress
from memnet.cli.loading import add_settings_options, load
from memnet.domain.errors import MemnetError
from memnet.ports import StorageError

REFUSED, STOPPED = 3, 4


def add_commands(commands: Any) -> None:
    found = commands.add_parser("import", help="import an export archive (docs/moving.md)")
    found.add_argument("archive", help="the archive's directory (holding manifest.json)")
    found.add_argument("--to", help="TENANT/USER to import into, whoever the archive names")
    found.add_argument("--map-tenant", help="FROM=TO: the archive's tenant FROM becomes TO")
    found.add_argument("--map-user", help="FROM=TO: the archive's user FROM becomes TO")
    found.add_argument("--actor", default=DEFAULT_ACTOR, help="who imports (governance log)")
    add_settings_options(found)
    found.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from memnet import bootstrap
    from memnet.services.transfer.importer import Mapping

    try:
        mapping = Mapping(
            _pair(args.map_tenant, "="), _pair(args.map_user, "="), _pair(args.to, "/")
        )
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    try:
        importer = bootstrap.importer(load(args))
        with Progress("import", "records") as progress:

            def show(done: int, part: str, written: int) -> None:
                progress.show(done, f"{part}: {written} written", step=part)

            report = importer.run(Path(args.archive), mapping, args.actor, show)
    except MemnetError as error:
        _print({"error": {"code": error.code, "message": error.message, **error.details}})
        return REFUSED
    except StorageError as error:
        _print({"error": {"code": "STORAGE_ERROR", "message": str(error)}})
        return STOPPED
    _print(report.as_json())
    return 1 if report.state.conflicts else 0


def _pair(value: str | None, separator: str) -> tuple[str, str] | None:
    if value is None:
        return None
    first, found, second = value.partition(separator)
    if not found or not first or not second or separator in second:
        raise ValueError(f"{value!r}: expected two identifiers joined by {separator!r}")
    return first, second


def _print(summary: dict[str, Any]) -> None:
    print(json.dumps(summary, indent=2, ensure_ascii=False))
