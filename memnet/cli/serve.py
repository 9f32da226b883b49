"""``serve`` runs this project's Functions app on the local host (:mod:`funchost`): the
HTTP functions, the queue-triggered workers, the timers, and the snapshot blob trigger
by polling the store. ``hash-key`` prints the digest of an API key for the callers file
that ``serve`` reads."""

from __future__ import annotations

import argparse
import os
from typing import Any

from memnet.cli.loading import add_settings_options, load
from memnet.settings import APP_ROOT


def add_commands(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve the Functions app on the embedded default")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=7071)
    add_settings_options(serve)
    serve.set_defaults(run=_serve)
    hashing = commands.add_parser(
        "hash-key", help="print the digest for a callers file (MEMNET_API_KEY_PEPPER keys it)"
    )
    hashing.add_argument("key")
    hashing.set_defaults(run=_hash_key)


def _serve(args: argparse.Namespace) -> int:
    """Build the services first, so bad settings, profiles or callers stop the process
    before it serves, then install them for ``function_app`` and serve it. The host, and
    the app it serves, are imported only here: the other commands do without them."""
    import funchost
    from funchost.route_templates import read_route_prefix
    from memnet import bootstrap

    services = load(args)
    bootstrap.install(services)
    import function_app

    # Trigger paths name the container as %MEMNET_BLOB_CONTAINER% (an app setting on
    # Azure); here its default comes from the settings when the environment lacks it.
    os.environ.setdefault("MEMNET_BLOB_CONTAINER", services.settings.blob_container)
    os.environ.setdefault("MEMNET_SWEEP_SCHEDULE", "0 17 * * * *")  # hourly at :17
    os.environ.setdefault("MEMNET_COMPACTION_SCHEDULE", "0 5 3 * * *")  # daily at 03:05
    funchost.serve_forever(
        function_app.app,
        args.host,
        args.port,
        route_prefix=read_route_prefix(APP_ROOT / "host.json"),
        queues=services.queue,
        max_body_bytes=services.settings.max_body_bytes,  # the host refuses larger, unread
        blobs=services.blobs,
        blob_container=services.settings.blob_container,
    )
    return 0


def _hash_key(args: argparse.Namespace) -> int:
    """The digest for a callers file, keyed by ``MEMNET_API_KEY_PEPPER`` when the
    environment sets it."""
    from memnet.adapters.local.apikeys import hash_key

    print(hash_key(args.key, os.environ.get("MEMNET_API_KEY_PEPPER") or None))
    return 0
