"""``memnet migrate``: migrate every document stored at an older schema version than
its binding's (docs/operations.md, "Schema migrations";
:mod:`memnet.services.documents.migration_job`), each as its own audited change
(reason ``admin_migration``), with progress on stderr and a JSON summary on stdout.
``--dry-run`` writes nothing and lists what would be migrated and what would fail.
Exit code 1 when a document could not be migrated (it is listed, and left as it was)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from memnet.cli.governance import DEFAULT_ACTOR, Progress, _identifiers, _run
from memnet.cli.loading import add_settings_options
from memnet.services.documents.migration_job import MigrationJob

if TYPE_CHECKING:
    from memnet.bootstrap import Services

LISTED = ("migrated", "would_migrate", "failed", "skipped")  # the summary lists these


def add_commands(commands: Any) -> None:
    migrate = commands.add_parser(
        "migrate", help="migrate documents at an older schema version (resumable)"
    )
    migrate.add_argument("--tenant", help="only this tenant's documents")
    migrate.add_argument("--profile", help="only documents this profile governs")
    migrate.add_argument("--dry-run", action="store_true", help="list what would change")
    add_settings_options(migrate)
    migrate.add_argument("--actor", default=DEFAULT_ACTOR, help="who asks (audit records)")
    migrate.set_defaults(run=lambda args: _run(_migrate, args))


def _migrate(services: Services, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    if args.tenant is not None and not _identifiers(args.tenant):
        print("--tenant takes a tenant id (an identifier)", file=sys.stderr)
        return {"error": "bad tenant"}, 2
    if args.profile is not None and services.registry.get(args.profile) is None:
        print(
            f"no profile {args.profile!r}; known: {services.registry.profile_ids()}",
            file=sys.stderr,
        )
        return {"error": "unknown profile"}, 2
    job = MigrationJob(
        documents=services.documents,
        registry=services.registry,
        audit=services.audit,
        blobs=services.blobs,
    )
    counts = dict.fromkeys(("looked_at", "current", *LISTED), 0)
    listed: dict[str, list[dict[str, Any]]] = {status: [] for status in LISTED}
    with Progress("migrate", "documents looked at") as progress:
        for ref in job.documents(args.tenant):
            outcome = job.migrate(ref, args.actor, args.profile, args.dry_run)
            if outcome is None:
                continue
            counts["looked_at"] += 1
            counts[outcome.status] += 1
            if outcome.status in listed:
                listed[outcome.status].append(outcome.as_json())
            doing = f"{counts['migrated'] + counts['would_migrate']} to migrate, "
            progress.show(counts["looked_at"], doing + f"{counts['failed']} failed")
    summary = {"dry_run": args.dry_run, "counts": counts, **listed}
    return summary, 1 if counts["failed"] else 0
