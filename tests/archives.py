"""Test data: export archives (``memnet-export/1``, docs/decisions.md "The export
archive") written straight from a source deployment's storage, so that the import's
tests and its benchmark do not wait for the exporter. Not an exporter: no caller, no
sensitivity views, no job; it reads every record of one user through the services'
own stores and lays them out as the format says.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memnet.bootstrap import Services
from memnet.domain.layout import DocumentRef, SnapshotRef, governance_prefix, user_prefix
from memnet.services.records import dump

PART_SIZE = 10_000


def write_archive(
    services: Services,
    tenant_id: str,
    user_id: str,
    directory: Path,
    *,
    export_id: str = "exp_test",
    part_size: int = PART_SIZE,
    **manifest: Any,
) -> Path:
    """The user's archive at ``directory``; ``manifest`` overrides members of the
    manifest (``complete=False``, ``format=...``)."""
    directory.mkdir(parents=True, exist_ok=True)
    parts = []
    for kind, records in kinds(services, tenant_id, user_id):
        parts += write_parts(directory, kind, records, part_size)
    body = {
        "format": "memnet-export/1",
        "export_id": export_id,
        "tenant_id": tenant_id,
        "user_id": user_id,
        "created_at": "2026-11-29T10:00:00.000Z",
        "requested_by": "tests",
        "complete": True,
        "omitted": [],
        "parts": parts,
        **manifest,
    }
    (directory / "manifest.json").write_text(json.dumps(body, indent=2), encoding="utf-8")
    return directory


def kinds(services: Services, tenant_id: str, user_id: str) -> Iterator[tuple[str, Iterable[Any]]]:
    yield "documents", documents(services, tenant_id, user_id)
    yield "audit", audit(services, tenant_id, user_id)
    yield "events", stored(services, user_prefix(tenant_id, user_id) + "events/")
    yield "replays", stored(services, user_prefix(tenant_id, user_id) + "replays/")
    yield "receipts", receipts(services, tenant_id, user_id)
    yield "holds", holds(services, tenant_id, user_id)
    yield "snapshots", snapshots(services, tenant_id, user_id)


def document_refs(services: Services, tenant_id: str, user_id: str) -> Iterator[DocumentRef]:
    prefix = user_prefix(tenant_id, user_id) + "documents/"
    for name in services.blobs.list_names(prefix):
        namespace, _, path = name[len(prefix) :].partition("/")
        yield DocumentRef(tenant_id, user_id, namespace, path)


def documents(services: Services, tenant_id: str, user_id: str) -> Iterator[Any]:
    for ref in document_refs(services, tenant_id, user_id):
        document = json.loads(services.blobs.read(ref.blob_name).data)
        yield {"ref": ref.as_json(), "document": document}


def audit(services: Services, tenant_id: str, user_id: str) -> Iterator[Any]:
    """Every committed change of every document, oldest first per document."""
    for ref in document_refs(services, tenant_id, user_id):
        head = json.loads(services.blobs.read(ref.blob_name).data)["change_id"]
        chain = list(services.audit.chain(ref, head))
        yield from (record.as_json() for record in reversed(chain))


def stored(services: Services, prefix: str) -> Iterator[Any]:
    for name in services.blobs.list_names(prefix):
        yield json.loads(services.blobs.read(name).data)


def receipts(services: Services, tenant_id: str, user_id: str) -> Iterator[Any]:
    prefix = governance_prefix(tenant_id) + "receipts/"
    for name in services.blobs.list_names(prefix):
        if "/" not in name[len(prefix) :]:  # a receipt, not one of its manifests
            receipt = json.loads(services.blobs.read(name).data)
            if receipt.get("user_id") == user_id:
                yield receipt


def snapshots(services: Services, tenant_id: str, user_id: str) -> Iterator[Any]:
    for name in services.blobs.list_names(user_prefix(tenant_id, user_id) + "snapshots/"):
        ref = SnapshotRef.of_blob(name)
        if ref is not None:
            ids = {"conversation_id": ref.conversation_id, "snapshot_id": ref.snapshot_id}
            yield {"snapshot": ids, "content": services.snapshots.open(ref).as_json()}


def holds(services: Services, tenant_id: str, user_id: str) -> Iterator[Any]:
    policy = services.holds.policy(tenant_id)
    if policy.tenant is not None:
        yield {"scope": "tenant", "hold": policy.tenant.as_json()}
    held = policy.of(user_id)
    if held is not None:
        yield {"scope": "user", "user_id": user_id, "hold": held.as_json()}


def write_parts(directory: Path, kind: str, records: Iterable[Any], size: int) -> list[Any]:
    """JSON Lines parts of at most ``size`` records; their manifest entries."""
    entries: list[Any] = []
    lines: list[bytes] = []
    for record in records:
        lines.append(dump(record) + b"\n")
        if len(lines) == size:
            entries.append(write_part(directory, kind, len(entries) + 1, lines))
            lines = []
    if lines:
        entries.append(write_part(directory, kind, len(entries) + 1, lines))
    return entries


def write_part(directory: Path, kind: str, seq: int, lines: list[bytes]) -> Any:
    name = f"{kind}-{seq:06d}.jsonl"
    data = b"".join(lines)
    (directory / name).write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    return {"name": name, "kind": kind, "count": len(lines), "bytes": len(data), "sha256": sha}


def reseal(directory: Path, name: str) -> None:
    """Give part ``name`` the manifest entry its bytes now have (a tamperer who also
    rewrites the manifest: the archive verifies, its records must still be checked)."""
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    data = (directory / name).read_bytes()
    for part in manifest["parts"]:
        if part["name"] == name:
            part.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest())
            part["count"] = data.count(b"\n")
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
