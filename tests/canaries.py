"""Canaries: unique random words written as a user's data, then looked for in every byte
of every file under a directory, the way an auditor checks that a forget left nothing
readable (docs/forgetting.md, "What is left on disk").

A canary is ``<label>zq<16 hex digits>7``; its needle is the hex core alone, searched in
the lowercased bytes of each file. So it is found whatever became of the rest: raw UTF-8,
JSON-escaped (``\\u00fc`` for a non-ASCII label), folded to lower case or stemmed (the
search index keeps terms), inside a SQLite page, a WAL frame or a temp file. It is not
found in encrypted data (snapshots), which is the point of encrypting them.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable
from pathlib import Path

_CORE = re.compile(r"zq([0-9a-f]{16})7")


def canary(label: str = "") -> str:
    """A new canary: ``label`` (any text, a word's start) then a unique core."""
    return f"{label}zq{secrets.token_hex(8)}7"


def needle(value: str) -> bytes:
    found = _CORE.search(value)
    assert found is not None, f"not a canary: {value!r}"
    return found.group(1).encode("ascii")


def files_under(root: Path) -> list[Path]:
    """Every regular file below ``root``, SQLite's -wal and -shm files and temp files
    included (symlinks are not followed)."""
    return [
        Path(directory, name)
        for directory, _, names in os.walk(root)
        for name in names
        if Path(directory, name).is_file() and not Path(directory, name).is_symlink()
    ]


def where(root: Path, canaries: Iterable[str]) -> dict[str, list[str]]:
    """For each canary found anywhere under ``root``, the files (relative) holding it."""
    return in_files(root, files_under(root), canaries)


def in_files(root: Path, paths: Iterable[Path], canaries: Iterable[str]) -> dict[str, list[str]]:
    """For each canary found in one of ``paths``, those holding it (relative to ``root``);
    a file removed meanwhile is skipped."""
    needles = {value: needle(value) for value in canaries}
    found: dict[str, list[str]] = {}
    for path in paths:
        try:
            data = path.read_bytes().lower()
        except FileNotFoundError:  # removed since the walk (a live server's temp file)
            continue
        for value, core in needles.items():
            if core in data:
                found.setdefault(value, []).append(str(path.relative_to(root)))
    return found
