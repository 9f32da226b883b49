"""JSON records under an ETag, and the one bounded retry every read-modify-write uses.

Blob storage has no multi-blob transactions (docs/architecture.md, "The layers"): state
that several workers change (a replay record, a forget job, a tenant's holds, the audit
horizon, a quota counter, a document) is read with its ETag, changed, and written back
on the condition that the ETag still holds. A writer that loses the race reads again and
retries; :func:`retrying` bounds how often, in one place, and :class:`JsonRecords` is
that read-modify-write for the records that are plain JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from memnet.domain.envelope import Json
from memnet.ports import BlobNotFound, BlobStore, Condition, PreconditionFailed

S = TypeVar("S")
T = TypeVar("T")

ATTEMPTS = 8  # writers that lose a race this often give up (the caller says how)


def retrying(
    attempt: Callable[[], T],
    *,
    on: type[Exception] | tuple[type[Exception], ...] = PreconditionFailed,
    attempts: int = ATTEMPTS,
) -> T:
    """``attempt()`` until it returns without raising one of ``on`` (a lost race: it
    reads again itself); the error of the last of ``attempts`` calls propagates."""
    return retrying_from(None, lambda _: attempt(), lambda _: None, on=on, attempts=attempts)


def retrying_from(
    value: S,
    attempt: Callable[[S], T],
    read_again: Callable[[S], S],
    *,
    on: type[Exception] | tuple[type[Exception], ...] = PreconditionFailed,
    attempts: int = ATTEMPTS,
) -> T:
    """:func:`retrying` for an attempt that starts from a value already read:
    ``attempt(value)``, and after each race it loses, ``attempt`` of ``read_again``
    of the value it lost with."""
    for _ in range(attempts - 1):
        try:
            return attempt(value)
        except on:
            value = read_again(value)
    return attempt(value)


def dump(value: Any) -> bytes:
    """A record's stored bytes: compact UTF-8 JSON, keys in the record's own order."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Stored:
    """A record as read, with the ETag its next write must match."""

    value: Json
    etag: str


class JsonRecords:
    """One JSON record per blob name: ``read``, ``create``, ``save`` under an ETag, and
    ``update``, the read-modify-write with a bounded retry."""

    def __init__(self, blobs: BlobStore) -> None:
        self._blobs = blobs

    def read(self, name: str) -> Stored | None:
        try:
            blob = self._blobs.read(name)
        except BlobNotFound:
            return None
        return Stored(json.loads(blob.data), blob.etag)

    def create(self, name: str, value: Json) -> str | None:
        """Store a new record; its ETag, or None when one exists under ``name`` already."""
        try:
            return self._blobs.write(name, dump(value), Condition.create_only())
        except PreconditionFailed:
            return None

    def save(self, name: str, value: Json, etag: str | None) -> str:
        """Write ``value`` if the record still has ``etag`` (None: if there is none yet);
        the new ETag, or :class:`PreconditionFailed`."""
        condition = Condition.match(etag) if etag else Condition.create_only()
        return self._blobs.write(name, dump(value), condition)

    def update(
        self, name: str, mutate: Callable[[Json | None], Json | None], attempts: int = ATTEMPTS
    ) -> Json | None:
        """Apply ``mutate`` to the latest record (None: there is none) and save what it
        returns under the ETag it was read at, reading again on a lost race (so
        ``mutate`` may run more than once). ``mutate`` returning None writes nothing.
        The value written (or None); :class:`PreconditionFailed` after ``attempts``."""

        def attempt() -> Json | None:
            found = self.read(name)
            value = mutate(None if found is None else found.value)
            if value is not None:
                self.save(name, value, None if found is None else found.etag)
            return value

        return retrying(attempt, attempts=attempts)

    def list(self, prefix: str) -> Iterator[Json]:
        """The records under ``prefix`` in name order (one removed since it was listed is
        skipped)."""
        for name in self._blobs.list_names(prefix):
            found = self.read(name)
            if found is not None:
                yield found.value
