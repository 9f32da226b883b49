"""Storage reads of context assembly (spec 11), and what it keeps between assemblies.

- :class:`Reader` reads each document of one assembly at most once; with a thread pool,
  documents that do not depend on each other are read at the same time.
- :class:`IndexCache` keeps the parsed routing index per routing document and ETag. A
  cached index is confirmed with a conditional read, or, within ``ttl`` seconds of the
  last confirmation, used as it is (a setting, off by default: see docs/decisions.md).
- :class:`SemanticTexts` keeps each project document's semantic text (the strings under
  the profile's ``semantic_pointers``) with the ETag it came from, for the semantic
  tie-break. An entry younger than ``ttl`` seconds is used without reading the document;
  an older one is read again. Only routing uses these texts: every document an assembly
  returns is read in that assembly.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from memnet.domain import pointers
from memnet.domain.bindings import Binding
from memnet.domain.document_model import StoredDocument
from memnet.domain.expiry import expired
from memnet.domain.layout import DocumentRef
from memnet.domain.profiles import RoutingRules
from memnet.domain.project_routing import RoutingIndex
from memnet.ports import BlobNotFound, BlobStore

Monotonic = Callable[[], float]  # seconds (cache ages only; wall time is the Clock port)
T = TypeVar("T")


class ReadTimer:
    """The recent mean duration of a read (exponentially weighted): reading concurrently
    pays only when a read waits longer than handing it to a pool thread costs (~0.1-0.3 ms
    measured), as blob reads over a network do and local file reads (~0.05 ms) do not."""

    WEIGHT = 0.1

    def __init__(self, threshold: float) -> None:
        self.threshold, self.mean = threshold, 0.0

    @property
    def slow(self) -> bool:
        return self.mean > self.threshold

    def read(self, blobs: BlobStore, name: str) -> StoredDocument | None:
        started = time.perf_counter()
        try:
            return read_document(blobs, name)
        finally:  # unlocked: a lost update only delays the switch by one read
            self.mean += self.WEIGHT * (time.perf_counter() - started - self.mean)


class Reader:
    """Reads a user's documents at most once per assembly. ``prefetch`` starts reads on
    the pool (when there is one) so that ``load`` later finds them done or under way."""

    def __init__(
        self,
        blobs: BlobStore,
        tenant_id: str,
        user_id: str,
        pool: Executor | None = None,
        timer: ReadTimer | None = None,
        now: datetime | None = None,
        shape: Callable[[DocumentRef, StoredDocument], StoredDocument] | None = None,
    ) -> None:
        self.blobs, self.tenant_id, self.user_id, self._pool = blobs, tenant_id, user_id, pool
        self._now = now  # documents expired at this instant read as absent (None: none)
        self._shape = shape  # what the caller may see of a document (sensitivity)
        self._read = (timer or ReadTimer(0.0)).read
        self._seen: dict[str, StoredDocument | Future[StoredDocument | None] | None] = {}

    def ref(self, binding: Binding, path: str) -> DocumentRef:
        """Where ``binding``'s document at ``path`` lives: the user's, or the tenant's
        shared one (memnet.services.documents.scopes)."""
        ref = DocumentRef(self.tenant_id, self.user_id, binding.namespace, path)
        return ref.shared() if binding.shared else ref

    def prefetch(self, refs: Iterable[DocumentRef], *, alone: bool = False) -> None:
        """Start reading ``refs``. A single read is left to ``load`` unless ``alone`` (the
        caller has other work to do meanwhile): waiting on the pool would only add."""
        todo = list(dict.fromkeys(r.blob_name for r in refs if r.blob_name not in self._seen))
        if self._pool is None or (len(todo) < 2 and not alone):
            return
        for name in todo:
            self._seen[name] = self._pool.submit(self._read, self.blobs, name)

    def load(self, ref: DocumentRef) -> StoredDocument | None:
        name = ref.blob_name
        if name not in self._seen:
            self._seen[name] = self._read(self.blobs, name)
        value = self._seen[name]
        if isinstance(value, Future):
            value = self._seen[name] = value.result()
        if value is not None and self._now is not None and expired(value.document, self._now):
            value = self._seen[name] = None
        if value is not None and self._shape is not None:
            value = self._seen[name] = self._shape(ref, value)
        return value

    def loaded(self, ref: DocumentRef) -> StoredDocument | None:
        """The document if this assembly has read it, else None (never reads)."""
        value = self._seen.get(ref.blob_name)
        return value if isinstance(value, StoredDocument) else None


def read_document(blobs: BlobStore, name: str) -> StoredDocument | None:
    try:
        blob = blobs.read(name)
    except BlobNotFound:
        return None
    return StoredDocument(blob.etag, json.loads(blob.data))


@dataclass
class _Entry(Generic[T]):
    etag: str | None  # None: the document did not exist
    value: T
    checked: float  # when storage last confirmed ``etag`` (monotonic seconds)


class _Lru(Generic[T]):
    """A small thread-safe LRU of :class:`_Entry` by blob name."""

    def __init__(self, size: int) -> None:
        self._entries: OrderedDict[str, _Entry[T]] = OrderedDict()
        self._size, self._lock = size, threading.Lock()

    def get(self, name: str) -> _Entry[T] | None:
        with self._lock:
            entry = self._entries.get(name)
            if entry is not None:
                self._entries.move_to_end(name)
            return entry

    def put(self, name: str, entry: _Entry[T]) -> None:
        with self._lock:
            self._entries[name] = entry
            self._entries.move_to_end(name)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)


class IndexCache:
    """Parsed routing indexes by routing document, each with the ETag it was built from."""

    def __init__(self, size: int, ttl: float, monotonic: Monotonic) -> None:
        self._lru: _Lru[RoutingIndex] = _Lru(size)
        self.ttl, self._monotonic = ttl, monotonic

    def current(
        self, blobs: BlobStore, name: str, *, use_ttl: bool = True
    ) -> tuple[RoutingIndex | None, bool]:
        """The cached index if it is still current, and whether storage was asked: within
        ``ttl`` seconds of the last confirmation (``use_ttl``) it is not; otherwise a
        conditional read confirms it. None: the caller reads the document."""
        entry = self._lru.get(name)
        if entry is None or entry.etag is None:
            return None, True
        now = self._monotonic()
        if use_ttl and now - entry.checked < self.ttl:
            return entry.value, False
        if not _unchanged(blobs, name, entry.etag):
            return None, True
        entry.checked = now
        return entry.value, True

    def for_version(
        self, name: str, stored: StoredDocument, build: Callable[[StoredDocument], RoutingIndex]
    ) -> RoutingIndex:
        """The index of ``stored`` (this exact version), built only if not cached."""
        entry = self._lru.get(name)
        if entry is not None and entry.etag == stored.etag:
            entry.checked = self._monotonic()
            return entry.value
        index = build(stored)
        self._lru.put(name, _Entry(stored.etag, index, self._monotonic()))
        return index


class SemanticTexts:
    """Each project document's semantic text by blob name, with its ETag."""

    def __init__(self, size: int, ttl: float, monotonic: Monotonic) -> None:
        self._lru: _Lru[str] = _Lru(size)
        self.ttl, self._monotonic = ttl, monotonic

    def fresh(self, name: str) -> str | None:
        """The text if storage confirmed it within ``ttl`` seconds, else None."""
        entry = self._lru.get(name)
        if entry is None or self._monotonic() - entry.checked >= self.ttl:
            return None
        return entry.value

    def remember(
        self, name: str, stored: StoredDocument | None, extract: Callable[[dict[str, Any]], str]
    ) -> str:
        """The text of ``stored`` (just read), extracted again only when its ETag changed."""
        etag = stored.etag if stored is not None else None
        entry = self._lru.get(name)
        if entry is not None and entry.etag == etag:
            entry.checked = self._monotonic()
            return entry.value
        text = extract(stored.document) if stored is not None else ""
        self._lru.put(name, _Entry(etag, text, self._monotonic()))
        return text


def build_index(stored: StoredDocument, rules: RoutingRules) -> RoutingIndex:
    """The routing index in ``stored`` at the profile's ``index_pointer``."""
    try:
        entries = pointers.resolve(stored.document, ("content", *rules.index_pointer))
    except KeyError:
        entries = []
    return RoutingIndex.build(entries if isinstance(entries, list) else [])


def semantic_text(rules: RoutingRules, document: dict[str, Any]) -> str:
    """The strings under the profile's ``semantic_pointers`` (keys included)."""
    parts: list[str] = []
    for pointer in rules.semantic_pointers:
        try:
            parts.extend(_strings_in(pointers.resolve(document, ("content", *pointer))))
        except KeyError:
            continue
    return " ".join(parts)


def _strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [str(k), *_strings_in(v)]]
    if isinstance(value, list):
        return [s for item in value for s in _strings_in(item)]
    return []


def _unchanged(blobs: BlobStore, name: str, etag: str) -> bool:
    try:
        return blobs.read_if_changed(name, etag) is None
    except BlobNotFound:
        return False  # gone: the normal read reports it missing
