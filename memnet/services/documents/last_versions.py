"""The last version of each document an instance saw (issue 29; docs/decisions.md "The
last version an instance saw"): what lets a PATCH that continues from this instance's
last answer skip reading the document."""

from __future__ import annotations

import threading
from collections import OrderedDict


class LastVersions:
    """The last version of each document this instance read or wrote: its ETag and
    bytes, at most ``max_documents`` of them and ``max_bytes`` in all (least recently
    used out first). A write whose ``If-Match`` names exactly that version decides on it
    without reading the document; the conditional write then checks it against storage,
    so an entry another instance made stale costs a 412, which a read would have given
    too (docs/architecture.md, "The write path at the storage floor", step 5)."""

    def __init__(self, max_documents: int = 1024, max_bytes: int = 32 * 1024 * 1024) -> None:
        self._max_documents, self._max_bytes = max_documents, max_bytes
        self._entries: OrderedDict[str, tuple[str, bytes]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, name: str, etag: str) -> bytes | None:
        with self._lock:
            found = self._entries.get(name)
            if found is None or found[0] != etag:
                return None
            self._entries.move_to_end(name)
            return found[1]

    def put(self, name: str, etag: str, data: bytes) -> None:
        with self._lock:
            self._drop(name)
            if len(data) > self._max_bytes // 4:
                return  # one large document would push out many small ones
            self._entries[name] = (etag, data)
            self._bytes += len(data)
            while len(self._entries) > self._max_documents or self._bytes > self._max_bytes:
                self._drop(next(iter(self._entries)))

    def drop(self, name: str) -> None:
        with self._lock:
            self._drop(name)

    def _drop(self, name: str) -> None:
        found = self._entries.pop(name, None)
        if found is not None:
            self._bytes -= len(found[1])
