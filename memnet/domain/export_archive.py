"""The export archive ``memnet-export/1`` (docs/decisions.md, "The export archive";
docs/export.md): its parts, its manifest, and how an archive verifies itself. Pure: the
files are handed in and out as bytes by whoever stores them.

A part is JSON Lines: one record per line, as stored, ``\\n`` after each; it holds at
most :data:`PART_RECORDS` records and closes early at :data:`PART_BYTES` (so that no
single download, and no part held while it is written, is large). Parts of one kind are
numbered from 1 in the order written.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

FORMAT = "memnet-export/1"
MANIFEST = "manifest.json"
MARKDOWN = "memory.md"
PART_RECORDS = 10_000
PART_BYTES = 8 * 1024 * 1024
KINDS = (
    "documents",
    "audit",
    "events",
    "proposals",
    "replays",
    "receipts",
    "holds",
    "snapshots",
)
PART_NAME = re.compile(r"(?P<kind>[a-z]+)-(?P<seq>[0-9]{6})\.jsonl")


def part_name(kind: str, seq: int) -> str:
    return f"{kind}-{seq:06d}.jsonl"


def line(record: Any) -> bytes:
    """One record as a line: compact UTF-8 JSON (as records are stored) and ``\\n``."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


@dataclass(frozen=True)
class Part:
    name: str
    kind: str
    count: int
    bytes: int
    sha256: str

    @classmethod
    def of(cls, name: str, kind: str, count: int, data: builtins.bytes) -> Part:
        return cls(name, kind, count, len(data), hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Omission:
    """Something left out for the caller, and why (the manifest's ``omitted``)."""

    kind: str
    reason: str

    def as_json(self) -> dict[str, str]:
        return {"kind": self.kind, "reason": self.reason}


@dataclass
class Manifest:
    export_id: str
    tenant_id: str
    user_id: str
    created_at: str
    requested_by: str
    parts: list[Part] = field(default_factory=list)
    omitted: list[Omission] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.omitted

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for part in self.parts:
            found[part.kind] = found.get(part.kind, 0) + part.count
        return found

    def as_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "export_id": self.export_id,
            "tenant_id": self.tenant_id,
            "user_id": self.user_id,
            "created_at": self.created_at,
            "requested_by": self.requested_by,
            "complete": self.complete,
            "omitted": [o.as_json() for o in self.omitted],
            "parts": [asdict(p) for p in self.parts],
        }

    def encoded(self) -> bytes:
        return json.dumps(self.as_json(), ensure_ascii=False, indent=1).encode() + b"\n"


class PartWriter:
    """The parts of one kind, a part at a time: records are added as lines and a full
    part is handed to ``emit(name, data)``; memory holds one part at most."""

    def __init__(self, kind: str, emit: Callable[[str, bytes], None]) -> None:
        self.kind, self._emit = kind, emit
        self.parts: list[Part] = []
        self.count = 0
        self._lines: list[bytes] = []
        self._size = 0

    def add(self, record: bytes) -> None:
        """``record``: one record's JSON, as stored (no newline inside: stored JSON is
        compact, and a newline in a string is escaped)."""
        data = record.rstrip(b"\n") + b"\n"
        if self._lines and self._size + len(data) > PART_BYTES:
            self.close()
        self._lines.append(data)
        self._size += len(data)
        self.count += 1
        if len(self._lines) >= PART_RECORDS:
            self.close()

    def close(self) -> None:
        if not self._lines:
            return
        data = b"".join(self._lines)
        name = part_name(self.kind, len(self.parts) + 1)
        self._emit(name, data)
        self.parts.append(Part.of(name, self.kind, len(self._lines), data))
        self._lines, self._size = [], 0


def verify(manifest: bytes, read: Callable[[str], bytes | None]) -> list[str]:
    """What is wrong with an archive whose manifest is ``manifest`` and whose files
    ``read(name)`` gives (None: missing); empty when every part is there, is named as
    a part of its kind, and hashes to its entry with its byte size and line count."""
    try:
        found = json.loads(manifest)
    except ValueError:
        return ["manifest.json is not JSON"]
    if not isinstance(found, dict) or found.get("format") != FORMAT:
        return [f"manifest.json is not a {FORMAT} manifest"]
    parts = found.get("parts")
    if not isinstance(parts, list):
        return ["manifest.json has no parts list"]
    return [problem for entry in parts for problem in _check_part(entry, read)]


def _check_part(entry: Any, read: Callable[[str], bytes | None]) -> Iterator[str]:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        yield "a part entry without a name"
        return
    name = entry["name"]
    named = PART_NAME.fullmatch(name)
    if named is None or named["kind"] != entry.get("kind") or named["kind"] not in KINDS:
        yield f"{name}: not a part name of its kind"
        return
    data = read(name)
    if data is None:
        yield f"{name}: missing"
        return
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        yield f"{name}: sha256 does not match the manifest"
    if len(data) != entry.get("bytes"):
        yield f"{name}: {len(data)} bytes, the manifest says {entry.get('bytes')}"
    if data.count(b"\n") != entry.get("count") or not data.endswith(b"\n"):
        yield f"{name}: line count does not match the manifest"
