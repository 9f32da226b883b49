"""The in-memory :class:`~memnet.ports.BlobStore`: blobs in a dict, for tests and for a
throwaway server (docs/testing.md, docs/decisions.md "Storage"). Nothing survives the
process, and another process sees another store.

The semantics are the embedded file store's (:mod:`memnet.adapters.local.blobstore`),
checked by the same contract suite (``tests/contract``): Azure-shaped ETags that change
on every write, If-Match / create-only / unconditional conditions, prefix listing in
lexical order with the last name as continuation, bounded reads. It also refuses what the
file store refuses (a name escaping the root, a name below a blob or above one), so a
test on it fails where the default store would. One lock guards every call.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from memnet.ports import (
    Blob,
    BlobInfo,
    BlobNotFound,
    BlobPage,
    BlobTooLarge,
    Condition,
    PreconditionFailed,
    Residue,
    check_bound,
    check_folder,
)

_UNCONDITIONAL = Condition()


@dataclass(frozen=True)
class _Stored:
    data: bytes
    etag: str
    written: datetime


class MemoryBlobStore:
    """Blob semantics in one process's memory. ETags come from a counter, so none is
    ever reused: an ETag read before a delete never matches the blob made after it."""

    def __init__(self) -> None:
        self._blobs: dict[str, _Stored] = {}
        self._names: list[str] = []  # the keys of _blobs, sorted: listings bisect it
        self._versions = itertools.count(1)
        self._lock = threading.Lock()

    def describe(self) -> str:
        return "memory (lost on exit)"

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        """The blob, or :class:`BlobNotFound`; :class:`BlobTooLarge` over ``max_bytes``."""
        check_bound(max_bytes)
        stored = self._get(name)
        if max_bytes is not None and len(stored.data) > max_bytes:
            raise BlobTooLarge(name, len(stored.data), max_bytes)
        return Blob(name=name, data=stored.data, etag=stored.etag)

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        stored = self._get(name)
        return None if stored.etag == etag else Blob(name, stored.data, stored.etag)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        """Write if ``condition`` holds (else :class:`PreconditionFailed`); a fresh ETag."""
        _check_name(name)
        with self._lock:
            current = self._blobs.get(name)
            _check_condition(name, current, condition)
            if current is None:
                self._check_no_clash(name)
                bisect.insort(self._names, name)
            etag = f'"0x{next(self._versions):016X}"'
            self._blobs[name] = _Stored(bytes(data), etag, datetime.now(UTC))
        return etag

    def delete(self, name: str, condition: Condition = _UNCONDITIONAL) -> None:
        """:class:`PreconditionFailed` if an ETag condition does not hold (a missing blob
        included, as in Azure), else :class:`BlobNotFound` if absent."""
        _check_name(name)
        if condition.absent:
            raise ValueError("a create-only condition has no meaning for delete")
        with self._lock:
            current = self._blobs.get(name)
            _check_condition(name, current, condition)
            if current is None:
                raise BlobNotFound(name)
            del self._blobs[name]
            del self._names[bisect.bisect_left(self._names, name)]

    def list_names(self, prefix: str) -> Iterator[str]:
        """The names starting with ``prefix`` as they were at the call, in lexical order."""
        _check_prefix(prefix)
        with self._lock:
            names = self._listed(prefix, None, None)
        yield from names

    def list_folder(self, prefix: str) -> Iterator[str]:
        """One level under ``prefix``: each sub-folder's names are skipped by one bisect."""
        check_folder(prefix)
        _check_prefix(prefix)
        found: list[str] = []
        with self._lock:
            at = bisect.bisect_left(self._names, prefix)
            while at < len(self._names) and self._names[at].startswith(prefix):
                name = self._names[at]
                below, slash, _ = name[len(prefix) :].partition("/")
                if not slash:
                    found.append(name)
                    at += 1
                    continue
                found.append(f"{prefix}{below}/")  # names below sort before prefix+below+"0"
                at = bisect.bisect_left(self._names, f"{prefix}{below}0", at)
        yield from found

    def list_page(self, prefix: str, continuation: str | None, limit: int) -> BlobPage:
        """Up to ``limit`` blobs after the name ``continuation`` (the last name of the
        previous page); a full page always has a continuation, as the file store's."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        _check_prefix(prefix)
        with self._lock:
            names = self._listed(prefix, continuation, limit)
            items = tuple(self._info(name) for name in names)
        return BlobPage(items, names[-1] if len(names) == limit else None)

    def _info(self, name: str) -> BlobInfo:
        stored = self._blobs[name]
        return BlobInfo(name, stored.written, len(stored.data))

    def remove_residue(self, prefix: str) -> Residue:
        """Nothing but blobs is kept here: nothing to remove."""
        _check_prefix(prefix)
        return Residue()

    def _get(self, name: str) -> _Stored:
        _check_name(name)
        with self._lock:
            stored = self._blobs.get(name)
        if stored is None:
            raise BlobNotFound(name)
        return stored

    def _listed(self, prefix: str, after: str | None, limit: int | None) -> list[str]:
        """Sorted names starting with ``prefix`` and after ``after``; at most ``limit``.
        The caller holds the lock."""
        first = bisect.bisect_left(self._names, prefix)
        if after is not None:
            first = max(first, bisect.bisect_right(self._names, after))
        following = (self._names[i] for i in range(first, len(self._names)))
        found = itertools.takewhile(lambda name: name.startswith(prefix), following)
        return list(itertools.islice(found, limit))

    def _check_no_clash(self, name: str) -> None:
        """The file store's limit: no blob is a directory of another (``a`` and ``a/b``)."""
        parts = name.split("/")
        parents = ("/".join(parts[:i]) for i in range(1, len(parts)))
        below = bisect.bisect_left(self._names, name + "/")
        if any(parent in self._blobs for parent in parents) or (
            below < len(self._names) and self._names[below].startswith(name + "/")
        ):
            raise ValueError(f"{name} clashes with existing blob names")


def _check_name(name: str) -> None:
    """The file store's rule (defence in depth: the services validate identifiers)."""
    if not name or name.startswith("/") or "\\" in name or "\0" in name:
        raise ValueError(f"invalid blob name: {name!r}")
    if any(segment in ("", ".", "..") for segment in name.split("/")):
        raise ValueError(f"invalid blob name: {name!r}")


def _check_prefix(prefix: str) -> None:
    """A prefix's directory part is a name (the file store walks only that directory)."""
    if "/" in prefix:
        _check_name(prefix.rpartition("/")[0])


def _check_condition(name: str, current: _Stored | None, condition: Condition) -> None:
    if condition.absent and condition.etag is not None:
        raise ValueError("a condition is either If-Match or create-only, not both")
    etag = None if current is None else current.etag
    if condition.absent and current is not None:
        raise PreconditionFailed(name, etag)
    if condition.etag is not None and condition.etag != etag:
        raise PreconditionFailed(name, etag)
