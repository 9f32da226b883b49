"""The event search index: ``reindex`` queues its rebuild from the event blobs (and with
``--drain`` works the queue off here); ``create-search-index`` creates or updates the
Azure AI Search index."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memnet.cli.loading import add_settings_options, load
from memnet.domain.callers import ANY, Caller

OPERATOR = Caller("operator:cli", frozenset({ANY}), frozenset({ANY}), frozenset({"admin"}))


def add_commands(commands: Any) -> None:
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
    add_settings_options(reindex)
    reindex.set_defaults(run=_reindex)
    create = commands.add_parser(
        "create-search-index", help="create or update the Azure AI Search index (idempotent)"
    )
    add_settings_options(create)
    create.set_defaults(run=_create_search_index)


def _reindex(args: argparse.Namespace) -> int:
    """Queue the rebuild as the admin route does, acting as the operator (the audit actor
    ``operator:cli``); with ``--drain``, also work the queue off here."""
    if args.user and not args.tenant:
        print("--user needs --tenant", file=sys.stderr)
        return 2
    from memnet.services.search.index import INDEX_QUEUE

    services = load(args)
    receipt = services.events.reindex(OPERATOR, args.tenant, args.user)
    print(json.dumps(receipt.as_json(), indent=2))
    if args.drain:
        report = services.events.drain()
        print(json.dumps(report.as_json(), indent=2))
        print(f"index worker: {report.jobs} jobs done, {services.queue.count(INDEX_QUEUE)} left")
    return 0


def _create_search_index(args: argparse.Namespace) -> int:
    """Apply ``search_index.json`` to the configured Azure AI Search index (a PUT, so
    running it again is harmless). The embedded index creates its tables on first use."""
    services = load(args)
    if services.settings.search != "azure":
        print(f"nothing to create: {services.index.describe()} creates its tables on first use")
        return 0
    from memnet.adapters.azure.search import AzureSearchIndex

    assert isinstance(services.index, AzureSearchIndex)  # search == "azure" builds one
    services.index.ensure_index()
    print(f"ready: {services.index.describe()}")
    return 0
