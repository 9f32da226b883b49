"""What forget jobs show: the 202 answer, the status view, and the deletion receipt
(spec 17: kinds, counts, times, who asked, what was kept and why, the verification, and
hashes of the deleted names - never content), and who may see them."""

from __future__ import annotations

from typing import Any

from memnet.domain.callers import Caller
from memnet.domain.errors import Forbidden
from memnet.domain.layout import receipt_name
from memnet.services.forget.tombstones import DONE


def require_any(caller: Caller, tenant_id: str, roles: tuple[str, ...]) -> None:
    """403 unless the caller holds one of ``roles`` in the tenant."""
    for role in roles[:-1]:
        try:
            caller.require(tenant_id, role)
            return
        except Forbidden:
            continue
    caller.require(tenant_id, roles[-1])


def accepted(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "forget_id": state["forget_id"],
        "status": state["status"],
        "status_url": f"/v1/tenants/{state['tenant_id']}/users/{state['user_id']}/forget",
    }


def public_view(state: dict[str, Any]) -> dict[str, Any]:
    """The job's status as callers see it (no pending names, no run token)."""
    view = {
        k: state.get(k)
        for k in (
            "forget_id",
            "tenant_id",
            "user_id",
            "status",
            "phase",
            "requested_by",
            "started_at",
            "completed_at",
            "late",
            "kept",
            "verification",
        )
    }
    view["deleted"] = {k: v["count"] for k, v in state["deleted"].items()}
    if state["status"] == DONE:
        view["receipt_id"] = state["receipt_id"]
        view["receipt_url"] = f"/v1/tenants/{state['tenant_id']}/receipts/{state['receipt_id']}"
    return view


def build_receipt(state: dict[str, Any]) -> dict[str, Any]:
    """The deletion receipt: kinds, counts, times, who asked, what was kept and why, the
    verification, and hashes of the deleted names (never content)."""
    deleted = {
        kind: {"count": v["count"], "names_chain_sha256": v["chain"]}
        for kind, v in sorted(state["deleted"].items())
    }
    return {
        "receipt_id": state["receipt_id"],
        "type": state["kind"],
        "forget_id": state["forget_id"],
        "tenant_id": state["tenant_id"],
        "user_id": state["user_id"],
        "requested_by": state["requested_by"],
        "started_at": state["started_at"],
        "completed_at": state["completed_at"],
        "deleted": deleted,
        "total_deleted": sum(v["count"] for v in deleted.values()),
        "late_deleted": state.get("late", 0),
        "kept": state["kept"],
        "verification": state["verification"],
        "manifests": {
            "count": state["seq"],
            "prefix": f"{receipt_name(state['tenant_id'], state['receipt_id'])[:-5]}/manifest/",
        },
        "hashing": (
            "each name: sha256 of its UTF-8 bytes (blob names container-relative; an index "
            "entry: its event id); per kind, chain = 32 zero bytes, then "
            "sha256(chain || sha256(name)) for each name in deletion order"
        ),
    }
