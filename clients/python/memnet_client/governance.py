"""Forgetting and legal holds (docs/forgetting.md). The ``forget`` role erases; the
``admin`` role holds; neither reads memory, so these are usually a separate client
with a privacy officer's or an operator's credential."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from memnet_client.base import ClientBase, json_of
from memnet_client.calls import Call, drop_none, segment
from memnet_client.models import Job, JsonObject


def _job(response: httpx.Response) -> Job:
    return Job.from_json(json_of(response))


class GovernanceApi(ClientBase):
    def forget_user(self) -> Job:
        """Start forgetting this user (role ``forget``): every write for them is refused
        from now on; poll :meth:`get_forget_status` until ``done``."""
        return self._send(Call("DELETE", self._user_path(), _job, write=True))

    def get_forget_status(self) -> Job:
        return self._send(Call("GET", self._user_path() + "/forget", _job))

    def forget_conversation(self, conversation_id: str) -> Job:
        """Forget one conversation and retract what was learned from it."""
        url = f"{self._user_path()}/conversations/{segment(conversation_id)}"
        return self._send(Call("DELETE", url, _job, write=True))

    def get_forget_conversation_status(self, conversation_id: str) -> Job:
        url = f"{self._user_path()}/forget/conversations/{segment(conversation_id)}"
        return self._send(Call("GET", url, _job))

    def get_receipt(self, receipt_id: str) -> JsonObject:
        """A deletion receipt: kinds, counts, times, hashes of names; never content."""
        url = f"{self._tenant_path()}/receipts/{segment(receipt_id)}"
        return self._send(Call("GET", url, json_of))

    def set_legal_hold(
        self, reason: str, *, kinds: Sequence[str] | None = None, user_id: str | None = None
    ) -> JsonObject:
        """Admin: hold the tenant's data (or one user's, with ``user_id``) against
        sweeps and forgetting. ``user_id`` is explicit, never the client's user: a
        tenant-wide hold and a user's are different acts."""
        body = drop_none(reason=reason, kinds=None if kinds is None else list(kinds))
        return self._send(Call("PUT", self._hold(user_id), json_of, body, write=True))

    def clear_legal_hold(self, *, user_id: str | None = None) -> JsonObject:
        url = self._hold(user_id)
        return self._send(Call("DELETE", url, json_of, write=True, resend_safe=False))

    def list_legal_holds(self) -> JsonObject:
        """``{"tenant": hold or None, "users": {user_id: hold}}``."""
        url = f"/v1/admin/tenants/{segment(self._tenant())}/holds"
        return self._send(Call("GET", url, json_of))

    def _hold(self, user_id: str | None) -> str:
        base = f"/v1/admin/tenants/{segment(self._tenant())}"
        return f"{base}/hold" if user_id is None else f"{base}/users/{segment(user_id)}/hold"
