"""What forget jobs show: the 202 answer, the status view, and the deletion receipt
(spec 17: kinds, counts, times, who asked, what was kept and why, the verification, and
hashes of the deleted names - never content), and who may see them."""

from __future__ import annotations

from memnet.domain.callers import Caller
from memnet.domain.envelope import Json
from memnet.domain.errors import Forbidden
from memnet.domain.layout import receipt_name
from memnet.services.forget.job import ForgetJob

_VIEW = (
    *("forget_id", "tenant_id", "user_id", "status", "phase", "requested_by", "started_at"),
    *("completed_at", "late", "kept", "verification"),
)
_HASHING = (
    "each name: sha256 of its UTF-8 bytes (blob names container-relative; an index "
    "entry: its event id); per kind, chain = 32 zero bytes, then "
    "sha256(chain || sha256(name)) for each name in deletion order"
)


def require_any(caller: Caller, tenant_id: str, roles: tuple[str, ...]) -> None:
    """403 unless the caller holds one of ``roles`` in the tenant."""
    for role in roles[:-1]:
        try:
            caller.require(tenant_id, role)
            return
        except Forbidden:
            continue
    caller.require(tenant_id, roles[-1])


def accepted(job: ForgetJob) -> Json:
    url = f"/v1/tenants/{job.tenant_id}/users/{job.user_id}/forget"
    if job.of_conversation:
        url += f"/conversations/{job.conversation_id}"
    return {"forget_id": job.forget_id, "status": job.status, "status_url": url}


def public_view(job: ForgetJob) -> Json:
    """The job's status as callers see it (no pending names, no run token); a
    conversation's job adds what it retracted."""
    stored = job.as_json()
    view = {k: stored[k] for k in _VIEW}
    view["deleted"] = {k: t.count for k, t in job.deleted.items()}
    if job.status == "done":
        view["receipt_id"] = job.receipt_id
        view["receipt_url"] = f"/v1/tenants/{job.tenant_id}/receipts/{job.receipt_id}"
    if job.of_conversation:
        view.update(conversation_id=job.conversation_id, retracted=list(job.retracted))
    return view


def build_receipt(job: ForgetJob) -> Json:
    """The deletion receipt: kinds, counts, times, who asked, what was kept and why, the
    verification (a user's), what was retracted (a conversation's), and hashes of the
    deleted names (never content)."""
    deleted = {
        kind: {"count": t.count, "names_chain_sha256": t.chain}
        for kind, t in sorted(job.deleted.items())
    }
    receipt: Json = {
        "receipt_id": job.receipt_id,
        "type": job.kind,
        "forget_id": job.forget_id,
        "tenant_id": job.tenant_id,
        "user_id": job.user_id,
        "requested_by": job.requested_by,
        "started_at": job.started_at,
        "completed_at": job.completed_at,
        "deleted": deleted,
        "total_deleted": sum(t.count for t in job.deleted.values()),
        "late_deleted": job.late,
        "kept": dict(job.kept),
        "verification": job.verification,
        "manifests": {
            "count": job.seq,
            "prefix": f"{receipt_name(job.tenant_id, job.receipt_id)[:-5]}/manifest/",
        },
        "hashing": _HASHING,
    }
    if job.of_conversation:
        del receipt["verification"]
        receipt.update(
            conversation_id=job.conversation_id,
            retracted=list(job.retracted),
            not_retracted=list(job.not_retracted),
        )
    return receipt
