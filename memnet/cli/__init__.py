"""The command line: ``memnet COMMAND ...`` (the console script ``pip install -e .``
puts in ``.venv/bin``), or ``python -m memnet COMMAND ...``, the same.

``serve``                   the Functions app on the local host (:mod:`memnet.cli.serve`)
``hash-key``                an API key's digest for a callers file
``reindex``                 rebuild the event search index (:mod:`memnet.cli.search`)
``create-search-index``     create or update the Azure AI Search index
``replay``                  one snapshot's replay, or its dry run (:mod:`memnet.cli.replay`)
``sweep``, ``compact``,     the governance jobs, each with ``--dry-run``
``forget``, ``hold``        (:mod:`memnet.cli.governance`)
``migrate``                 documents at an older schema version (:mod:`memnet.cli.migrate`)
``import``                  import an export archive (:mod:`memnet.cli.importing`)
``export``, ``verify-export`` a user's archive, and checking one (:mod:`memnet.cli.export`)

Every command but ``hash-key`` reads ``--settings`` (``local.settings.json``; the
environment wins) and ``--data-dir``. An entry point like ``function_app.py``: it wires
the app, the host and the core, and nothing imports it (tests/unit/test_layering.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from memnet.cli import export, governance, importing, migrate, replay, search, serve
from memnet.domain.errors import ConfigError

DESCRIPTION = (
    "mem.net's commands: serve the Functions app locally, look after the search index, "
    "replay a snapshot, run the governance jobs (each with --dry-run), and import an "
    "export archive. "
    "`memnet COMMAND --help` describes one."
)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # The Azure SDK logs every HTTP call's headers at INFO: noise, and slow on a hot path.
    logging.getLogger("azure").setLevel(logging.WARNING)
    try:
        code: int = args.run(args)
    except ConfigError as error:
        print(f"mem.net cannot start: {error}", file=sys.stderr)
        return 2
    return code


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memnet", description=DESCRIPTION)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (serve, search, replay, governance, migrate, importing, export):
        module.add_commands(commands)
    return parser
