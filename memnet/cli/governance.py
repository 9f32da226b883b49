"""The governance commands (issue 11): the same jobs the timer and queue functions run,
over the configured backends, each with ``--dry-run`` (which writes nothing), progress
on stderr while they run (what is done, and what a command waits for: :class:`Progress`)
and a JSON summary on stdout at the end.

``sweep``    retention sweep: runs bounded invocations until one pass over the store is
             done (``--once``: one invocation, as the timer does);
``compact``  compaction and freshness of one document (``TENANT/USER/NAMESPACE/PATH``) or
             of every document (``--all``);
``forget``   forget a user (``TENANT/USER``) or one conversation (``--conversation``),
             running the job here until it is done, then printing its receipt;
``hold``     set, clear or list legal holds (``hold set TENANT[/USER] --reason ...``);
             ``--dry-run`` shows the hold it would set or clear next to the current one.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tqdm import tqdm

from memnet.cli.loading import add_settings_options, load
from memnet.domain.callers import ANY, Caller
from memnet.domain.errors import BadRequest, MemnetError
from memnet.domain.identifiers import check_identifier
from memnet.domain.layout import forget_conversation_job_name, forget_job_name, user_prefix
from memnet.domain.timestamps import parse_timestamp
from memnet.services.governance.holds import HOLD_KINDS

if TYPE_CHECKING:
    from memnet.bootstrap import Services

DEFAULT_ACTOR = "memnet-operator"  # who asks, in audit records and receipts, by default
QUIET_SECONDS = 10.0  # off a terminal, a progress line at least this often while nothing changes


class Progress:
    """What a long command has done and what it is doing now, on stderr, so stdout stays
    the JSON summary: a bar on a terminal; elsewhere (a log, CI) a line whenever what it
    does changes, and every :data:`QUIET_SECONDS` while it does not."""

    def __init__(self, name: str, unit: str) -> None:
        self._name, self._unit = name, unit
        self._bar = tqdm(unit=f" {unit}", desc=name, file=sys.stderr, disable=None)
        self._said, self._said_at = "", 0.0

    def show(self, done: int, doing: str, step: str | None = None) -> None:
        """``doing`` now, ``done`` so far; off a terminal a line is printed when ``step``
        (default: ``doing``) changes, so a countdown in ``doing`` is not a line a second."""
        if not self._bar.disable:
            self._bar.n = done
            self._bar.set_postfix_str(doing, refresh=True)
            return
        now, step = time.monotonic(), step or doing
        if step != self._said or now - self._said_at >= QUIET_SECONDS:
            print(f"{self._name}: {done} {self._unit}; {doing}", file=sys.stderr, flush=True)
            self._said, self._said_at = step, now

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._bar.close()


def add_commands(commands: Any) -> None:
    sweep = commands.add_parser("sweep", help="retention sweep (resumable, bounded runs)")
    sweep.add_argument("--dry-run", action="store_true", help="list what it would delete")
    sweep.add_argument("--limit", type=int, default=None, help="dry run: blobs to look at")
    sweep.add_argument("--once", action="store_true", help="one bounded run, as the timer")
    compact = commands.add_parser("compact", help="compact documents and apply freshness")
    compact.add_argument("document", nargs="?", help="TENANT/USER/NAMESPACE/PATH")
    compact.add_argument("--all", action="store_true", help="every document (resumable scan)")
    compact.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    forget = commands.add_parser("forget", help="forget a user or one conversation")
    forget.add_argument("user", help="TENANT/USER")
    forget.add_argument("--conversation", help="forget only this conversation")
    forget.add_argument("--dry-run", action="store_true", help="count what would go")
    hold = commands.add_parser("hold", help="legal holds: set, clear, list")
    hold.add_argument("action", choices=("set", "clear", "list"))
    hold.add_argument("scope", help="TENANT or TENANT/USER")
    hold.add_argument("--reason", help="why (set)")
    hold.add_argument("--kinds", help=f"comma list of {','.join(HOLD_KINDS)} (set; default all)")
    hold.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    for parser, job in ((sweep, _sweep), (compact, _compact), (forget, _forget), (hold, _hold)):
        add_settings_options(parser)
        parser.add_argument("--actor", default=DEFAULT_ACTOR, help="who asks (audit, receipts)")
        parser.set_defaults(run=functools.partial(_run, job))


Job = Callable[["Services", argparse.Namespace], tuple[dict[str, Any], int]]


def _run(job: Job, args: argparse.Namespace) -> int:
    """Run ``job`` over the configured services and print its JSON summary."""
    summary, code = job(load(args), args)
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return code


def _sweep(services: Services, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    retention = services.retention
    if args.dry_run:
        return retention.sweep(dry_run=True, limit=args.limit).as_json(), 0
    totals: dict[str, dict[str, int]] = {}
    runs, visited = 0, 0
    with Progress("sweep", "blobs looked at") as progress:
        while True:
            doing = f"run {runs + 1}: listing and deleting what expired"
            progress.show(visited, doing, step="sweeping")
            report = retention.sweep()
            runs += 1
            visited += report.walk.visited
            for kind, outcomes in report.counts.items():
                for outcome, n in outcomes.items():
                    totals.setdefault(kind, {}).setdefault(outcome, 0)
                    totals[kind][outcome] += n
            if report.walk.yielded:
                return {"runs": runs, "yielded": True, "counts": totals}, 1
            if args.once or report.walk.pass_complete:
                break
    body = {"runs": runs, "pass_complete": report.walk.pass_complete, "counts": totals}
    return body, 0


def _compact(services: Services, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    compaction = services.compaction
    if args.all and args.dry_run:
        # The resumable scan saves its place as it goes: a dry run of it would write.
        print(
            "--dry-run takes one document (TENANT/USER/NAMESPACE/PATH), not --all", file=sys.stderr
        )
        return {"error": "dry run of --all"}, 2
    if args.all:
        changed: list[str] = []
        visited = 0
        with Progress("compact", "blobs looked at") as progress:
            while True:
                doing = f"compacting; {len(changed)} documents changed so far"
                progress.show(visited, doing, step="compacting")
                report = compaction.run_timer()
                visited += report.walk.visited
                changed += report.changed
                if report.walk.yielded:
                    return {"changed": changed, "yielded": True}, 1
                if report.walk.pass_complete:
                    return {"changed": changed, "pass_complete": True}, 0
    parts = (args.document or "").strip("/").split("/", 3)
    if len(parts) != 4:
        print("name a document as TENANT/USER/NAMESPACE/PATH, or use --all", file=sys.stderr)
        return {"error": "no document"}, 2
    return compaction.compact(*parts, dry_run=args.dry_run).as_json(), 0


def _forget(services: Services, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    tenant_id, _, user_id = args.user.strip("/").partition("/")
    if not _identifiers(tenant_id, user_id, *([args.conversation] if args.conversation else [])):
        print("name the user as TENANT/USER (identifiers)", file=sys.stderr)
        return {"error": "no user"}, 2
    if args.dry_run:
        return _forget_preview(services, tenant_id, user_id, args.conversation), 0
    caller = _operator(args.actor, tenant_id, "forget")
    keys = ["kind", "tenant_id", "user_id", "forget_id", "run"]
    if args.conversation:
        job: Any = services.forget_conversation
        job.request(caller, tenant_id, user_id, args.conversation)
        name = forget_conversation_job_name(tenant_id, user_id, args.conversation)
        keys.append("conversation_id")
    else:
        job = services.forget
        job.request(caller, tenant_id, user_id)
        name = forget_job_name(tenant_id, user_id)
    state = _drive(services, lambda: services.forget.jobs.load(name), job.run, keys)
    if state.get("status") == "done":
        return services.forget.receipt(caller, tenant_id, state["receipt_id"]), 0
    return {k: state.get(k) for k in ("forget_id", "status", "phase", "error")}, 1


def _drive(services: Services, load: Any, run: Any, keys: list[str]) -> dict[str, Any]:
    """Run a forget job's invocations here until it is no longer running, showing what
    it has deleted and what it waits for. The grace period before verification is
    waited out here rather than by invoking the job (which would queue a message per
    call). A job the queue worker of a running host advances at the same time is fine:
    each invocation names the job's current run token, and a stale one does nothing."""
    grace = services.settings.forget_grace_seconds
    with Progress("forget", "deleted") as progress:
        while True:
            job = load()
            if job is None:
                return {"status": "missing"}
            state: dict[str, Any] = job.state.as_json()
            deleted = sum(v["count"] for v in state.get("deleted", {}).values())
            if state["status"] != "running":
                progress.show(deleted, state["status"])
                return state
            started = parse_timestamp(state["started_at"], "started_at")
            wait = (started + timedelta(seconds=grace) - datetime.now(UTC)).total_seconds()
            if state.get("phase") == "verifying" and wait > 0:
                progress.show(deleted, _grace_message(wait, grace), step="grace")
                time.sleep(min(wait, 1.0))
                continue
            progress.show(deleted, f"phase {state.get('phase')}")
            if run({k: state[k] for k in keys}) is None:
                progress.show(deleted, "another worker holds the job; looking again in 1 s")
                time.sleep(1.0)


def _grace_message(wait: float, grace: int) -> str:
    return (
        f"verifying in {wait:.0f} s: the {grace} s grace period "
        "(MEMNET_FORGET_GRACE_SECONDS) lets writes already past the check land first"
    )


def _forget_preview(
    services: Services, tenant_id: str, user_id: str, conversation: str | None
) -> dict[str, Any]:
    """What forgetting would delete, counted by kind, and what holds would keep."""
    from memnet.services.forget.user import kind_of

    prefix = user_prefix(tenant_id, user_id)
    counts: dict[str, int] = {}
    for name in services.blobs.list_names(prefix):
        relative = name[len(prefix) :]
        if conversation and not relative.startswith(
            (f"snapshots/{conversation}/", f"replays/{conversation}/")
        ):
            continue
        kind = kind_of(relative)
        counts[kind] = counts.get(kind, 0) + 1
    index = sum(1 for _ in services.index.list_event_ids(tenant_id, user_id))
    held = services.holds.held(tenant_id, user_id)
    return {
        "dry_run": True,
        "tenant_id": tenant_id,
        "user_id": user_id,
        "conversation_id": conversation,
        "blobs": counts,
        "index_entries": None if conversation else index,
        "events": "the events naming the conversation are found when the job runs"
        if conversation
        else None,
        "kept_by_hold": {kind: h.as_json() for kind, h in held.items()},
    }


def _hold(services: Services, args: argparse.Namespace) -> tuple[dict[str, Any], int]:
    tenant_id, _, user_id = args.scope.strip("/").partition("/")
    if not _identifiers(tenant_id, *([user_id] if user_id else [])):
        print("name the scope as TENANT or TENANT/USER (identifiers)", file=sys.stderr)
        return {"error": "bad scope"}, 2
    holds = services.holds
    if args.action == "list":
        return holds.policy(tenant_id).as_json(), 0
    if args.action == "clear":
        if args.dry_run:
            return _hold_preview(services, tenant_id, user_id, "clear", None)
        try:
            return holds.clear(tenant_id, user_id or None, args.actor).as_json(), 0
        except MemnetError as error:
            return {"error": {"code": error.code, "message": error.message}}, 1
    if not args.reason:
        print("hold set needs --reason", file=sys.stderr)
        return {"error": "no reason"}, 2
    kinds = [k.strip() for k in args.kinds.split(",")] if args.kinds else None
    unknown = sorted(set(kinds or ()) - set(HOLD_KINDS))
    if unknown:
        print(f"unknown kinds {unknown}; choose from {list(HOLD_KINDS)}", file=sys.stderr)
        return {"error": "unknown kinds"}, 2
    hold = {"reason": args.reason, "kinds": kinds}
    if args.dry_run:
        return _hold_preview(services, tenant_id, user_id, "set", hold)
    return holds.set(tenant_id, user_id or None, hold, args.actor).as_json(), 0


def _hold_preview(
    services: Services, tenant_id: str, user_id: str, action: str, hold: dict[str, Any] | None
) -> tuple[dict[str, Any], int]:
    """What ``hold set`` or ``hold clear`` would change, read from the current policy;
    clearing where no hold is set fails as the real command does."""
    found = services.holds.policy(tenant_id).of(user_id or None)
    current = None if found is None else found.as_json()
    if action == "clear" and current is None:
        return {"error": {"code": "HOLD_NOT_FOUND", "message": "No legal hold is set here."}}, 1
    change: dict[str, Any] = {"dry_run": True, "action": action, "tenant_id": tenant_id}
    change |= {"user_id": user_id or None, "current": current}
    if hold is not None:
        change["would_set"] = {"reason": hold["reason"], "kinds": hold["kinds"] or list(HOLD_KINDS)}
    return change, 0


def _identifiers(*values: str) -> bool:
    try:
        for value in values:
            check_identifier("id", value)
    except BadRequest:
        return False
    return bool(values)


def _operator(actor: str, tenant_id: str, role: str) -> Caller:
    return Caller(
        actor, frozenset({tenant_id}), frozenset({ANY}), frozenset({role, "admin", "read"})
    )
