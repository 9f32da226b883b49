"""The proposal queue (docs/proposals.md): what agents proposed to remember, waiting for
a reviewer (role ``review`` or ``admin``) to approve, edit or reject it."""

from __future__ import annotations

from typing import Any

import httpx

from memnet_client.base import ClientBase, json_of
from memnet_client.calls import Call, segment
from memnet_client.models import JsonObject

_UNSET: Any = object()


def _proposals(response: httpx.Response) -> list[JsonObject]:
    return list(json_of(response).get("proposals") or ())


class ProposalsApi(ClientBase):
    def list_proposals(self) -> list[JsonObject]:
        """Every proposal in the user's pending sections: ``proposal_id``, ``status``
        (``pending`` or ``expired``), ``expires_at``, where it is, and the ``item``."""
        url = f"{self._user_path()}/proposals"
        return self._send(Call("GET", url, _proposals, params=self._profile_params()))

    def review_proposal(
        self, proposal_id: str, decision: str, *, candidate: Any = _UNSET, note: str | None = None
    ) -> JsonObject:
        """``decision``: ``approve``, ``reject``, or ``edit`` with the ``candidate`` to
        write instead. The answer's ``status`` is a2p's (``approved``, ``edited``,
        ``rejected``); the same review again answers again (``replayed``), a different
        one raises ``Conflict`` (``PROPOSAL_ALREADY_REVIEWED``)."""
        body: dict[str, Any] = {} if note is None else {"note": note}
        if candidate is not _UNSET:
            body["candidate"] = candidate
        url = f"{self._user_path()}/proposals/{segment(proposal_id)}/{segment(decision)}"
        params = self._profile_params()
        return self._send(Call("POST", url, json_of, body, params=params, write=True))
