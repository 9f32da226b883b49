"""Command line, next to the host it starts: ``python -m funchost serve`` runs this
project's Functions app locally (HTTP functions, the queue-triggered index and replay
workers, and the snapshot blob trigger by polling the store);
``reindex``, ``create-search-index`` and ``hash-key`` are operator commands over the
configured backends.

An entry point like ``function_app.py``: it wires the app, the host and the core, and
nothing imports it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memnet.domain.callers import ANY, Caller
from memnet.domain.errors import ConfigError
from memnet.local_settings import load_local_settings
from memnet.services.event_index import INDEX_QUEUE
from memnet.settings import APP_ROOT, LOCAL_SETTINGS

if TYPE_CHECKING:
    from memnet.bootstrap import Services


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    # The Azure SDK logs every HTTP call's headers at INFO: noise, and slow on a hot path.
    logging.getLogger("azure").setLevel(logging.WARNING)
    try:
        return COMMANDS[args.command](args)
    except ConfigError as error:
        print(f"mem.net cannot start: {error}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m funchost", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve the Functions app on the embedded default")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=7071)
    serve.add_argument("--data-dir", help=_DATA_DIR_HELP)
    serve.add_argument(
        "--settings",
        default=str(LOCAL_SETTINGS),
        help="values file read like `func start` does (environment wins; default: the "
        "app's local.settings.json)",
    )
    hashing = commands.add_parser(
        "hash-key", help="print the digest for a callers file (MEMNET_API_KEY_PEPPER keys it)"
    )
    hashing.add_argument("key")
    reindex = commands.add_parser(
        "reindex", help="queue a rebuild of the event search index from the event blobs"
    )
    reindex.add_argument("--tenant", help="only this tenant (default: every tenant)")
    reindex.add_argument("--user", help="only this user of --tenant")
    reindex.add_argument(
        "--drain",
        action="store_true",
        help="also run the index worker here until the queue is empty (no server running)",
    )
    _settings_option(reindex)
    create = commands.add_parser(
        "create-search-index", help="create or update the Azure AI Search index (idempotent)"
    )
    _settings_option(create)
    return parser


_DATA_DIR_HELP = "overrides MEMNET_DATA_DIR (a relative path is from the working directory)"


def _settings_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--data-dir", help=_DATA_DIR_HELP)
    command.add_argument("--settings", default=str(LOCAL_SETTINGS), help="values file")


def _load(args: argparse.Namespace) -> Services:
    """The services from the settings file and the environment. Paths in settings are
    from the app's root (memnet.settings); a path typed on the command line is from the
    working directory, as a shell user means it."""
    load_local_settings(args.settings)
    if args.data_dir:
        os.environ["MEMNET_DATA_DIR"] = str(Path(args.data_dir).resolve())
    from memnet import bootstrap

    return bootstrap.start()


def _serve(args: argparse.Namespace) -> int:
    from funchost import serve_forever
    from funchost.routing import read_route_prefix

    services = _load(args)  # fail fast on bad settings, profiles or callers, before serving
    import function_app

    # The host refuses, unread, any body larger than the app would accept.
    limit = services.settings.max_body_bytes
    # Trigger paths name the container as %MEMNET_BLOB_CONTAINER% (an app setting on
    # Azure); here its default comes from the settings when the environment lacks it.
    os.environ.setdefault("MEMNET_BLOB_CONTAINER", services.settings.blob_container)
    os.environ.setdefault("MEMNET_SWEEP_SCHEDULE", "0 17 * * * *")  # hourly at :17
    os.environ.setdefault("MEMNET_COMPACTION_SCHEDULE", "0 5 3 * * *")  # daily at 03:05
    serve_forever(
        function_app.app,
        args.host,
        args.port,
        route_prefix=read_route_prefix(APP_ROOT / "host.json"),
        queues=services.queue,
        max_body_bytes=limit,
        blobs=services.blobs,
        blob_container=services.settings.blob_container,
    )
    return 0


def _hash_key(args: argparse.Namespace) -> int:
    """The digest for a callers file, keyed by ``MEMNET_API_KEY_PEPPER`` when it is set
    (the environment, or the settings file ``serve`` reads)."""
    import os

    from memnet.adapters.local.apikeys import hash_key

    print(hash_key(args.key, os.environ.get("MEMNET_API_KEY_PEPPER") or None))
    return 0


def _reindex(args: argparse.Namespace) -> int:
    """Queue the rebuild as the admin route does, acting as the operator (the audit actor
    ``operator:cli``); with ``--drain``, also work the queue off here."""
    if args.user and not args.tenant:
        print("--user needs --tenant", file=sys.stderr)
        return 2
    services = _load(args)
    receipt = services.events.reindex(OPERATOR, args.tenant, args.user)
    print(json.dumps(receipt, indent=2))
    if args.drain:
        report = services.events.drain()
        print(json.dumps(report.as_dict(), indent=2))
        print(f"index worker: {report.jobs} jobs done, {services.queue.count(INDEX_QUEUE)} left")
    return 0


def _create_search_index(args: argparse.Namespace) -> int:
    """Apply ``search_index.json`` to the configured Azure AI Search index (a PUT, so
    running it again is harmless). The embedded index creates its tables on first use."""
    services = _load(args)
    if services.settings.search != "azure":
        print(f"nothing to create: {services.index.describe()} creates its tables on first use")
        return 0
    from memnet.adapters.azure.search import AzureSearchIndex

    assert isinstance(services.index, AzureSearchIndex)  # search == "azure" builds one
    services.index.ensure_index()
    print(f"ready: {services.index.describe()}")
    return 0


OPERATOR = Caller("operator:cli", frozenset({ANY}), frozenset({ANY}), frozenset({"admin"}))
COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "serve": _serve,
    "hash-key": _hash_key,
    "reindex": _reindex,
    "create-search-index": _create_search_index,
}


if __name__ == "__main__":
    sys.exit(main())
