"""Documents: read, history, patch (JSON Patch with a precondition), replace, and
``update``, the read-change-write loop an agent should use for live updates."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

from memnet_client.base import ClientBase, json_of, replayed
from memnet_client.calls import Call, document_path, drop_none, segment, user_path
from memnet_client.errors import NotFound, PreconditionFailed, UpdateConflict
from memnet_client.models import (
    Diff,
    Document,
    DocumentList,
    History,
    JsonObject,
    ListedDocument,
    Version,
    Why,
    WriteResult,
)

# What update() calls with the current content (None: no document yet); returns the ops.
OpsFunction = Callable[[Any], Sequence[JsonObject]]


@dataclass(frozen=True)
class _PatchOptions:
    """What ``update`` passes through to every PATCH it sends."""

    rebase: bool
    reason: str | None
    confidence: float | None
    evidence: JsonObject | None


def _write_result(response: httpx.Response) -> WriteResult:
    return WriteResult.from_json(
        json_of(response), status=response.status_code, replayed=replayed(response)
    )


def _precondition(etag: str | None) -> dict[str, str]:
    """``If-Match`` for an update; none given means create (``If-None-Match: *``)."""
    return {"If-Match": etag} if etag is not None else {"If-None-Match": "*"}


class DocumentsApi(ClientBase):
    def _document(self, namespace: str, path: str) -> str:
        return document_path(*self._scope(), namespace, path)

    def get_document(self, namespace: str, path: str) -> Document:
        """The document and its ETag; :class:`NotFound` (``DOCUMENT_NOT_FOUND``) when
        it does not exist yet."""
        url = self._document(namespace, path)
        parse = _document
        return self._send(Call("GET", url, parse, params=self._profile_params()))

    def get_history(
        self, namespace: str, path: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """One page of changes, newest first; ``before=page.next_before`` for the next."""
        params = {**self._profile_params(), **drop_none(limit=limit, before=before)}
        url = self._document(namespace, path) + ":history"
        return self._send(Call("GET", url, _history, params={k: str(v) for k, v in params.items()}))

    def why(self, namespace: str, path: str, pointer: str, *, as_of: str | None = None) -> Why:
        """Which changes produced the value at ``pointer`` (a JSON Pointer into the
        content, ``/durable_facts/3``): who, when, why, on what evidence, newest first;
        in the version ``as_of`` (a change id or an RFC 3339 instant) if given. When the
        walk stopped at its bound, ``why(..., result.more_path, as_of=result.more_as_of)``
        goes on. :class:`NotFound` (``PATH_NOT_FOUND``) when nothing is there."""
        params = {**self._profile_params(), "path": pointer, **drop_none(as_of=as_of)}
        url = self._document(namespace, path) + ":why"
        return self._send(Call("GET", url, _why, params=params))

    def get_version(self, namespace: str, path: str, as_of: str | datetime) -> Version:
        """The document as it was after the change ``as_of`` names (a change id), or at
        the instant it names (an RFC 3339 string or an aware datetime: the newest
        version committed by then). :class:`NotFound` before the document existed or
        for another document's change id; :class:`Gone` for a version retention or a
        conversation forget removed (docs/api.md "Versions and diffs")."""
        at = _instant(as_of) if isinstance(as_of, datetime) else as_of
        params = {**self._profile_params(), "as_of": at}
        url = self._document(namespace, path)
        return self._send(Call("GET", url, _version, params=params))

    def diff(self, namespace: str, path: str, from_id: str, to_id: str = "latest") -> Diff:
        """The RFC 6902 ops (paths under ``/content``) that turn the version after
        change ``from_id`` into the one after ``to_id`` (``"latest"``: the current
        one); the same errors as :meth:`get_version`."""
        params = {**self._profile_params(), "from": from_id, "to": to_id}
        url = self._document(namespace, path) + ":diff"
        return self._send(Call("GET", url, _diff, params=params))

    def list_documents(
        self,
        namespace: str,
        *,
        limit: int | None = None,
        continuation: str | None = None,
        lookup: tuple[str, str] | None = None,
    ) -> DocumentList:
        """One page of the namespace's documents, in path order (``limit`` 1-100, the
        server's default 50); ``continuation=page.continuation`` for the next page.
        ``lookup=(name, value)``: only documents holding ``value`` at the lookup field
        ``name`` their binding declares (a page may then be short, even empty, and still
        continue)."""
        found = {} if lookup is None else {"lookup": lookup[0], "value": lookup[1]}
        params = {
            **self._profile_params(),
            **drop_none(limit=limit, continuation=continuation),
            **found,
        }
        url = f"{user_path(*self._scope())}/documents/{segment(namespace)}/"
        query = {k: str(v) for k, v in params.items()}
        return self._send(Call("GET", url, _document_list, params=query))

    def iter_documents(
        self, namespace: str, *, limit: int | None = None, lookup: tuple[str, str] | None = None
    ) -> Iterator[ListedDocument]:
        """Every document of the namespace (matching ``lookup``, if given), following
        continuations page by page."""
        continuation: str | None = None
        while True:
            page = self.list_documents(
                namespace, limit=limit, continuation=continuation, lookup=lookup
            )
            yield from page.documents
            if page.continuation is None:
                return
            continuation = page.continuation

    def patch_document(
        self,
        namespace: str,
        path: str,
        ops: Sequence[JsonObject],
        *,
        etag: str | None,
        reason: str | None = None,
        confidence: float | None = None,
        evidence: JsonObject | None = None,
        binding_id: str | None = None,
        rebase: bool = False,
    ) -> WriteResult:
        """Apply RFC 6902 ``ops`` (paths under ``/content``) to the version ``etag``
        names, or create the document from its binding's initial content when ``etag``
        is ``None``. A stale ``etag`` is :class:`PreconditionFailed` unless ``rebase``
        lets the server apply commuting ops to the latest version (docs/api.md#rebase)."""
        body = drop_none(
            profile_id=self.profile,
            binding_id=binding_id,
            ops=list(ops),
            reason=reason,
            confidence=confidence,
            evidence=evidence,
            rebase=rebase or None,
        )
        url = self._document(namespace, path)
        call = Call("PATCH", url, _write_result, body, headers=_precondition(etag), write=True)
        return self._send(call)

    def put_document(
        self,
        namespace: str,
        path: str,
        content: Any,
        *,
        etag: str | None,
        reason: str | None = None,
        evidence: JsonObject | None = None,
        binding_id: str | None = None,
    ) -> WriteResult:
        """Replace the whole content (role ``admin``: migrations). ``etag=None`` creates."""
        body = drop_none(
            content=content,
            profile_id=self.profile,
            binding_id=binding_id,
            reason=reason,
            evidence=evidence,
        )
        url = self._document(namespace, path)
        call = Call("PUT", url, _write_result, body, headers=_precondition(etag), write=True)
        return self._send(call)

    def revert(
        self,
        namespace: str,
        path: str,
        *,
        etag: str,
        to_change_id: str | None = None,
        undo_change_id: str | None = None,
        reason: str | None = None,
    ) -> WriteResult:
        """Write the version after ``to_change_id`` back, or undo the one change
        ``undo_change_id`` (its inverse, rebased onto the latest version; a later change
        that touched the same paths is :class:`Conflict` ``UNDO_CONFLICT``), as a new
        change audited with reason ``revert`` (docs/api.md#revert). Exactly one of the
        two; the binding's ``revert_roles`` decide who may (default ``admin``)."""
        body = drop_none(
            profile_id=self.profile,
            to_change_id=to_change_id,
            undo_change_id=undo_change_id,
            reason=reason,
        )
        url = self._document(namespace, path) + ":revert"
        call = Call("POST", url, _write_result, body, headers={"If-Match": etag}, write=True)
        return self._send(call)

    def update(
        self,
        namespace: str,
        path: str,
        change: OpsFunction,
        *,
        max_attempts: int = 5,
        rebase: bool = False,
        reason: str | None = None,
        confidence: float | None = None,
        evidence: JsonObject | None = None,
    ) -> WriteResult:
        """Read the document, ask ``change(content)`` for JSON Patch ops, and PATCH
        them with ``If-Match``: optimistic concurrency, so the ops that land were always
        decided on the content they apply to, and no update is lost to a concurrent
        writer.

        ``content`` is ``None`` when the document does not exist yet: the ops then
        create it from the binding's initial content. When someone wrote meanwhile the
        server answers 412; ``update`` re-reads and calls ``change`` again on the new
        content, at most ``max_attempts`` times in all, then :class:`UpdateConflict`.
        ``change`` may therefore run more than once and must not have side effects. No
        ops: no write, and the current document comes back with ``unchanged=True``.

        ``rebase=True`` lets the server apply ops that commute with the concurrent
        change (an append to a list, a field nobody else touched) to the latest version
        instead of answering 412, saving a round trip — but ``change`` then never sees
        that latest version. Use it only for changes that do not depend on the content,
        e.g. pure appends; a check-then-append (``return [] if "tea" in prefs else
        [append "tea"]``) would store duplicates under concurrency.
        """
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        options = _PatchOptions(rebase, reason, confidence, evidence)
        attempt = 1
        while True:
            try:
                return self._update_once(namespace, path, change, options)
            except PreconditionFailed as conflict:
                if attempt >= max_attempts:
                    raise UpdateConflict(attempt, conflict) from conflict
            attempt += 1

    def _update_once(
        self, namespace: str, path: str, change: OpsFunction, options: _PatchOptions
    ) -> WriteResult:
        current = self._read_or_none(namespace, path)
        ops = change(None if current is None else current.content)
        if not ops:
            return _unchanged(current, namespace, path)
        return self.patch_document(
            namespace,
            path,
            ops,
            etag=None if current is None else current.etag,
            rebase=options.rebase,
            reason=options.reason,
            confidence=options.confidence,
            evidence=options.evidence,
        )

    def _read_or_none(self, namespace: str, path: str) -> Document | None:
        try:
            return self.get_document(namespace, path)
        except NotFound as missing:
            if missing.code == "DOCUMENT_NOT_FOUND":
                return None
            raise


def _unchanged(current: Document | None, namespace: str, path: str) -> WriteResult:
    if current is None:
        raise ValueError(f"change() gave no ops and {namespace}/{path} does not exist")
    return WriteResult(current.etag, current, False, True, (), None, False, current.raw)


def _document(response: httpx.Response) -> Document:
    return Document.from_json(json_of(response))


def _history(response: httpx.Response) -> History:
    return History.from_json(json_of(response))


def _why(response: httpx.Response) -> Why:
    return Why.from_json(json_of(response))


def _version(response: httpx.Response) -> Version:
    return Version.from_json(json_of(response))


def _diff(response: httpx.Response) -> Diff:
    return Diff.from_json(json_of(response))


def _instant(moment: datetime) -> str:
    """An aware datetime as RFC 3339 in UTC (a naive one is refused: it names no
    instant)."""
    if moment.utcoffset() is None:
        raise ValueError("as_of needs a timezone-aware datetime")
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _document_list(response: httpx.Response) -> DocumentList:
    return DocumentList.from_json(json_of(response))
