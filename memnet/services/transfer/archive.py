"""Reading an export archive (``memnet-export/1``, docs/decisions.md "The export archive")
and refusing one that does not verify, before anything is written.

:func:`open_archive` checks the manifest and then reads every part once: its bytes, its
SHA-256, its line count, and each record (:mod:`.archive_records`), so a tampered, cut or
smuggled record stops the import while the target is untouched. :meth:`Archive.records`
reads a part again for the import and checks its hash again as it goes (a part changed
between the two reads stops the import there; the import resumes once the archive is
whole). Memory is one line at a time, never a whole part.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memnet.domain.envelope import Json
from memnet.domain.errors import BadRequest
from memnet.domain.export_archive import FORMAT, KINDS, MANIFEST, PART_NAME, PART_RECORDS, Part
from memnet.domain.identifiers import check_identifier

MAX_MANIFEST_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024  # one record; a longer line is refused, never read whole
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ArchiveRefused(BadRequest):
    """The archive cannot be imported as it is; nothing was written."""


@dataclass(frozen=True)
class Archive:
    """A verified archive: where it is, whose it is, its parts, and what the records
    told while they were checked (:class:`Findings`)."""

    directory: Path
    export_id: str
    tenant_id: str
    user_id: str
    manifest_sha256: str
    parts: tuple[Part, ...]
    findings: Findings
    checks: dict[str, Check]

    def of_kind(self, kind: str) -> list[Part]:
        return [p for p in self.parts if p.kind == kind]

    def records(self, part: Part) -> Iterator[Json]:
        """The part's records in order, each checked again (the file may have changed
        since it was verified); :class:`ArchiveRefused` at a record that no longer
        passes, or when the bytes no longer hash to the manifest's (known when the last
        record has been handed out)."""
        digest = hashlib.sha256()
        for number, line in enumerate(_lines(self.directory / part.name, part), 1):
            digest.update(line)
            yield _checked(line, self, part, number)
        if digest.hexdigest() != part.sha256:
            raise _refused("ARCHIVE_TAMPERED", f"{part.name} changed while it was imported")


@dataclass
class Findings:
    """What reading every record found that the import needs before it writes: the
    change ids the audit parts hold, and the change ids their records follow that they
    do not hold (the source's retention removed them: the target's audit horizon must
    cover them)."""

    change_ids: set[str] = field(default_factory=set)
    missing_prev: set[str] = field(default_factory=set)


Check = Callable[[Json, Archive], None]  # refuses a record with BadRequest


def open_archive(directory: Path, checks: dict[str, Check]) -> Archive:
    """The verified archive at ``directory``; :class:`ArchiveRefused` naming what does not
    verify. ``checks`` holds the record check of each kind (:mod:`.archive_records`)."""
    if not (directory / MANIFEST).is_file():
        raise _refused("ARCHIVE_INVALID", f"{directory} holds no {MANIFEST}")
    with (directory / MANIFEST).open("rb") as file:
        raw = file.read(MAX_MANIFEST_BYTES + 1)  # a larger one is refused, never read whole
    if len(raw) > MAX_MANIFEST_BYTES:
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST} is larger than {MAX_MANIFEST_BYTES} bytes")
    manifest = _manifest(raw)
    findings = Findings()
    archive = Archive(
        directory,
        manifest["export_id"],
        manifest["tenant_id"],
        manifest["user_id"],
        hashlib.sha256(raw).hexdigest(),
        tuple(_part(p) for p in manifest["parts"]),
        findings,
        checks,
    )
    _unique(archive.parts)
    for part in archive.parts:
        _verify(archive, part)
    findings.missing_prev -= findings.change_ids
    return archive


def _manifest(raw: bytes) -> Json:
    manifest = _object(raw, MANIFEST)
    if manifest.get("format") != FORMAT:
        shown = str(manifest.get("format"))[:64]
        raise _refused("ARCHIVE_FORMAT_UNKNOWN", f"format {shown!r} is not {FORMAT!r}")
    if manifest.get("complete") is not True:
        raise _refused(
            "ARCHIVE_INCOMPLETE",
            "the archive is not complete (something was left out for the caller who "
            "exported it: " + json.dumps(manifest.get("omitted"))[:500] + ")",
        )
    for name in ("export_id", "tenant_id", "user_id"):
        _identifier(name, manifest.get(name))
    if not isinstance(manifest.get("parts"), list):
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: parts must be a list")
    return manifest


def _part(entry: Any) -> Part:
    if not isinstance(entry, dict):
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: a part is not an object")
    name: Any = entry.get("name")
    count: Any = entry.get("count")
    size: Any = entry.get("bytes")
    sha: Any = entry.get("sha256")
    found = PART_NAME.fullmatch(name) if isinstance(name, str) else None
    if found is None or found["kind"] not in KINDS or entry.get("kind") != found["kind"]:
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: part {str(name)[:80]!r} is not a part")
    if not _count(count, PART_RECORDS) or not _count(size, None):
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: {name}: count or bytes out of range")
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: {name}: sha256 is not 64 hex digits")
    return Part(name, found["kind"], count, size, sha)


def _count(value: Any, top: int | None) -> bool:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return ok and (top is None or value <= top)


def _unique(parts: tuple[Part, ...]) -> None:
    names = [p.name for p in parts]
    if len(set(names)) != len(names):
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: a part is listed twice")


def _verify(archive: Archive, part: Part) -> None:
    """Bytes, hash, count, and every record of one part."""
    path = archive.directory / part.name
    if not path.is_file() or path.stat().st_size != part.bytes:
        raise _refused("ARCHIVE_TAMPERED", f"{part.name} is missing or not {part.bytes} bytes")
    digest, count = hashlib.sha256(), 0
    for line in _lines(path, part):
        digest.update(line)
        count += 1
        _checked(line, archive, part, count)
    if digest.hexdigest() != part.sha256:
        raise _refused("ARCHIVE_TAMPERED", f"{part.name} does not hash to its manifest entry")
    if count != part.count:
        raise _refused("ARCHIVE_TAMPERED", f"{part.name} holds {count} records, not {part.count}")


def _checked(line: bytes, archive: Archive, part: Part, number: int) -> Json:
    """One line's record, checked as its kind's records must be."""
    record = _object(line, f"{part.name} line {number}")
    try:
        archive.checks[part.kind](record, archive)
    except BadRequest as bad:
        raise _refused("ARCHIVE_INVALID", f"{part.name} line {number}: {bad.message}") from bad
    return record


def _lines(path: Path, part: Part) -> Iterator[bytes]:
    with path.open("rb") as file:
        while line := file.readline(MAX_LINE_BYTES + 1):
            if not line.endswith(b"\n"):
                raise _refused("ARCHIVE_INVALID", f"{part.name}: a line is cut or too long")
            yield line


def _object(data: bytes, where: str) -> Json:
    """The JSON object ``data`` holds (the manifest, or one line of a part)."""
    try:
        found = json.loads(data)
    except ValueError as exc:  # also bytes that are not UTF-8
        raise _refused("ARCHIVE_INVALID", f"{where} is not JSON") from exc
    if not isinstance(found, dict):
        raise _refused("ARCHIVE_INVALID", f"{where} is not a JSON object")
    return found


def _identifier(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: {name} must be a string")
    try:
        return check_identifier(name, value)
    except BadRequest as bad:
        raise _refused("ARCHIVE_INVALID", f"{MANIFEST}: {bad.message}") from bad


def _refused(code: str, message: str) -> ArchiveRefused:
    return ArchiveRefused(message, code=code)
