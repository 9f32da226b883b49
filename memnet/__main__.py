"""Command line: ``python -m memnet serve`` runs this project's Functions app locally.

The host lives in ``funchost`` (outside the core, since only entry points may import
``azure.functions``); this module only parses arguments and hands over.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from memnet.errors import ConfigError


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # The Azure SDK logs every HTTP call's headers at INFO: noise, and slow on a hot path.
    logging.getLogger("azure").setLevel(logging.WARNING)
    if args.command == "hash-key":
        from memnet.adapters.local.apikeys import hash_key

        print(hash_key(args.key))
        return 0
    try:
        return _serve(args)
    except ConfigError as error:
        print(f"mem.net cannot start: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m memnet", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the Functions app on the embedded default")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=7071)
    serve.add_argument("--data-dir", help="overrides MEMNET_DATA_DIR")
    serve.add_argument(
        "--settings",
        default="local.settings.json",
        help="values file read like `func start` does (environment wins)",
    )
    hashing = commands.add_parser("hash-key", help="print the SHA-256 to put in a callers file")
    hashing.add_argument("key")
    return parser


def _serve(args: argparse.Namespace) -> int:
    from funchost import load_local_settings, serve_forever

    load_local_settings(args.settings)
    if args.data_dir:
        os.environ["MEMNET_DATA_DIR"] = args.data_dir
    from memnet import bootstrap

    bootstrap.services()  # fail fast on bad settings, profiles or callers, before serving
    import function_app

    serve_forever(function_app.app, args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
