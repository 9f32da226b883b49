"""Snapshots (a conversation's transcript, stored encrypted) and their replay: the
server extracts what to remember from the transcript on a queue (docs/replay.md)."""

from __future__ import annotations

from collections.abc import Sequence

import httpx

from memnet_client.base import ClientBase, json_of, replayed
from memnet_client.calls import Call, drop_none, segment
from memnet_client.models import JsonObject, Replay


def _replay(response: httpx.Response) -> Replay:
    return Replay.from_json(json_of(response), replayed=replayed(response))


def _replays(response: httpx.Response) -> list[Replay]:
    found = json_of(response).get("replays")
    return [Replay.from_json(item) for item in found or ()]


class ReplaysApi(ClientBase):
    def _snapshot(self, conversation_id: str, snapshot_id: str) -> str:
        ids = f"{segment(conversation_id)}/{segment(snapshot_id)}"
        return f"{self._user_path()}/snapshots/{ids}"

    def put_snapshot(
        self,
        conversation_id: str,
        snapshot_id: str,
        messages: Sequence[JsonObject],
        *,
        service_id: str | None = None,
        project_hint: str | None = None,
        metadata: JsonObject | None = None,
    ) -> Replay:
        """Store a transcript (``messages``: ``{"id", "role", "text", "timestamp"}``)
        and queue its replay. The snapshot id makes the PUT idempotent: the same
        transcript again answers the same replay (``replayed=True``)."""
        body = drop_none(
            messages=list(messages),
            service_id=service_id,
            profile_id=self.profile,
            project_hint=project_hint,
            metadata=metadata,
        )
        url = self._snapshot(conversation_id, snapshot_id)
        return self._send(Call("PUT", url, _replay, body, write=True))

    def get_snapshot(self, conversation_id: str, snapshot_id: str) -> JsonObject:
        """The decrypted transcript (role ``snapshots``)."""
        url = self._snapshot(conversation_id, snapshot_id)
        return self._send(Call("GET", url, json_of))

    def get_replay(self, conversation_id: str, snapshot_id: str) -> Replay:
        url = self._snapshot(conversation_id, snapshot_id) + "/replay"
        return self._send(Call("GET", url, _replay))

    def list_unresolved_replays(self, *, limit: int | None = None) -> list[Replay]:
        """Admin: this user's replays with parked patches waiting for review."""
        params = {} if limit is None else {"limit": str(limit)}
        url = self._user_path() + "/replays/unresolved"
        return self._send(Call("GET", url, _replays, params=params))

    def retry_replay_patch(
        self, conversation_id: str, snapshot_id: str, patch_index: int
    ) -> Replay:
        """Admin: apply a parked patch to the latest version now."""
        return self._resolve(conversation_id, snapshot_id, patch_index, "retry")

    def discard_replay_patch(
        self, conversation_id: str, snapshot_id: str, patch_index: int
    ) -> Replay:
        """Admin: drop a parked patch (``NotFound`` when there is none)."""
        return self._resolve(conversation_id, snapshot_id, patch_index, "discard")

    def redrive_replay(self, conversation_id: str, snapshot_id: str) -> Replay:
        """Admin: queue a ``failed`` replay again (``Conflict`` otherwise)."""
        url = self._snapshot(conversation_id, snapshot_id) + "/replay/redrive"
        return self._send(Call("POST", url, _replay, write=True, resend_safe=False))

    def _resolve(self, conversation_id: str, snapshot_id: str, index: int, action: str) -> Replay:
        base = self._snapshot(conversation_id, snapshot_id)
        url = f"{base}/replay/patches/{index}/{action}"
        return self._send(Call("POST", url, _replay, write=True, resend_safe=False))
