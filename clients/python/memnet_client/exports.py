"""Exporting a user's memory (an archive in ``memnet-export/1``: JSON Lines parts, a
manifest with each part's SHA-256, and ``memory.md`` for a person to read)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import httpx

from memnet_client.base import ClientBase, json_of
from memnet_client.calls import Call, segment
from memnet_client.models import JsonObject


def _content(response: httpx.Response) -> bytes:
    return response.content


class ExportsApi(ClientBase):
    def request_export(self) -> JsonObject:
        """Queue an export of the user (role ``read``; what the archive holds follows
        the caller's roles and clearance). The job: ``export_id``, ``status``,
        ``status_url``."""
        params = self._profile_params()
        url = self._user_path() + ":export"
        return self._send(Call("POST", url, json_of, params=params, resend_safe=False))

    def get_export(self, export_id: str) -> JsonObject:
        """The job's status (``queued``, ``running``, ``done``, ``failed``) and progress;
        when done, ``files`` and whether the archive is ``complete``."""
        return self._send(Call("GET", self._export(export_id), json_of))

    def get_export_file(self, export_id: str, name: str) -> bytes:
        """One file of a finished export, as its bytes."""
        url = f"{self._export(export_id)}/files/{segment(name)}"
        return self._send(Call("GET", url, _content))

    def delete_export(self, export_id: str) -> JsonObject:
        return self._send(Call("DELETE", self._export(export_id), json_of))

    def download_export(
        self, export_id: str, directory: str | Path, *, wait_seconds: float = 600.0
    ) -> JsonObject:
        """Wait for the export to finish, write its files into ``directory`` and check
        each part against the manifest (``ValueError`` naming a part that does not
        match); the manifest."""
        job = self._finished(export_id, wait_seconds)
        root = Path(directory)
        root.mkdir(parents=True, exist_ok=True)
        for name in job["files"]:
            (root / name).write_bytes(self.get_export_file(export_id, name))
        manifest: JsonObject = json.loads((root / "manifest.json").read_bytes())
        for part in manifest["parts"]:
            data = (root / part["name"]).read_bytes()
            if hashlib.sha256(data).hexdigest() != part["sha256"]:
                raise ValueError(f"{part['name']}: sha256 does not match the manifest")
        return manifest

    def _finished(self, export_id: str, wait_seconds: float) -> JsonObject:
        deadline = time.monotonic() + wait_seconds
        while True:
            job = self.get_export(export_id)
            if job["status"] == "done":
                return job
            if job["status"] == "failed" or time.monotonic() > deadline:
                raise RuntimeError(f"export {export_id}: {job['status']} {job.get('error') or ''}")
            time.sleep(0.5)

    def _export(self, export_id: str) -> str:
        return f"{self._user_path()}/exports/{segment(export_id)}"
