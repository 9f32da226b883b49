"""Listing a namespace's documents (issue 15, capability 2; docs/api.md): one page at a
time, in path order, each document with its ETag, updated time and binding.

A page costs one storage listing call and at most ``limit`` document reads: the listing
gives names only (the ETag and ``updated_at`` are the document's, read from it, so they
equal what ``GET`` answers on either backend). The prefix is the user's namespace folder,
ending in ``/``: nothing of another user, tenant or namespace, and none of the user's
audit, idempotency or snapshot blobs, which live beside ``documents/``, not under it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from memnet.domain import pointers
from memnet.domain.bindings import Binding
from memnet.domain.callers import Caller
from memnet.domain.errors import BadRequest, NotFound
from memnet.domain.expiry import expired
from memnet.domain.identifiers import check_document_path
from memnet.domain.layout import SHARED_OWNER, DocumentRef, user_prefix
from memnet.domain.profiles import Profile
from memnet.ports import (
    BlobNotFound,
    BlobPage,
    BlobStore,
    Clock,
    StorageError,
    StorageUnavailable,
)
from memnet.services.profiles.registry import ProfileRegistry

TOKEN = re.compile(r"[A-Za-z0-9_-]{1,2048}")  # base64url, no padding


@dataclass(frozen=True)
class ListedDocument:
    """One listed document; ``binding_id`` None when no binding of the profile covers it."""

    path: str
    etag: str
    updated_at: str
    binding_id: str | None


@dataclass(frozen=True)
class DocumentPage:
    documents: tuple[ListedDocument, ...]
    continuation: str | None


@dataclass(frozen=True)
class NamespaceRef:
    """Where a listing looks: one user's namespace."""

    tenant_id: str
    user_id: str
    namespace: str

    @property
    def prefix(self) -> str:
        return f"{user_prefix(self.tenant_id, self.user_id)}documents/{self.namespace}/"

    def ref(self, path: str) -> DocumentRef:
        return DocumentRef(self.tenant_id, self.user_id, self.namespace, path)


@dataclass(frozen=True)
class Lookup:
    """``?lookup=<name>&value=<text>``: only documents whose binding declares the lookup
    field ``name`` and whose content holds ``value`` there (equal to it, or an array
    with it as an item)."""

    name: str
    value: str


class DocumentListing:
    def __init__(self, blobs: BlobStore, registry: ProfileRegistry, clock: Clock) -> None:
        self._blobs, self._registry, self._clock = blobs, registry, clock

    def list_documents(
        self,
        caller: Caller,
        where: NamespaceRef,
        profile_id: str | None,
        limit: int,
        continuation: str | None = None,
        lookup: Lookup | None = None,
    ) -> DocumentPage:
        """Authorised as reading a document: the ``read`` role in the tenant and a profile
        with a binding in the namespace (else 404 ``BINDING_NOT_FOUND``). A page reads
        ``limit`` names; with a ``lookup`` it answers those that match, so a page may
        hold fewer documents (even none) and still have a continuation."""
        caller.require(where.tenant_id, "read")
        profile = self._registry.for_caller(caller, profile_id)
        if _require_namespace(profile, where.namespace).shared:
            where = replace(where, user_id=SHARED_OWNER)  # the tenant's shared documents
        if lookup is not None:
            _require_lookup(profile, where.namespace, lookup.name)
        marker = decode_token(continuation, where.namespace)
        page = page_at(self._blobs, where.prefix, marker, limit)
        now = self._clock.now()
        listed = (self._item(profile, where, info.name, now, lookup) for info in page.items)
        documents = tuple(item for item in listed if item is not None)
        return DocumentPage(documents, encode_token(where.namespace, page.continuation))

    def _item(
        self,
        profile: Profile,
        where: NamespaceRef,
        name: str,
        now: datetime,
        lookup: Lookup | None,
    ) -> ListedDocument | None:
        """The document ``name`` names, read once; None if it is gone (deleted since the
        listing) or expired, its name is not a document path (nothing else is written
        there), or it does not match ``lookup``."""
        path = name[len(where.prefix) :]
        try:
            check_document_path(path)
            blob = self._blobs.read(name)
        except (BadRequest, BlobNotFound):
            return None
        document = json.loads(blob.data)
        found = profile.resolve(where.namespace, path)
        if expired(document, now):
            return None
        if lookup is not None and (found is None or not _matches(found[0], document, lookup)):
            return None
        updated_at = document.get("updated_at", "")
        return ListedDocument(path, blob.etag, updated_at, found[0].binding_id if found else None)


def _matches(binding: Binding, document: dict[str, Any], lookup: Lookup) -> bool:
    pointer = binding.lookup_fields.get(lookup.name)
    if pointer is None:
        return False
    for held in _values_at(document.get("content"), pointer):
        if held == lookup.value or (isinstance(held, list) and lookup.value in held):
            return True
    return False


def _values_at(node: Any, segments: tuple[str, ...]) -> Iterator[Any]:
    """What a lookup pointer names in ``node``; a ``*`` segment stands for every item of
    an array (``/sub_tasks/*/task_id``)."""
    if not segments:
        yield node
        return
    head, rest = segments[0], segments[1:]
    if head == "*" and isinstance(node, list):
        for item in node:
            yield from _values_at(item, rest)
        return
    try:
        yield from _values_at(pointers.resolve(node, (head,)), rest)
    except KeyError:
        return


def _require_lookup(profile: Profile, namespace: str, name: str) -> None:
    bindings = (b for b in profile.bindings if b.namespace == namespace)
    if not any(name in b.lookup_fields for b in bindings):
        raise BadRequest(
            "lookup names no lookup field of this namespace's bindings.",
            code="INVALID_QUERY",
            field="lookup",
            location=["query", "lookup"],
        )


def _require_namespace(profile: Profile, namespace: str) -> Binding:
    """A binding of the profile in ``namespace`` (all of them share a scope, checked at
    load), else 404."""
    found = next((b for b in profile.bindings if b.namespace == namespace), None)
    if found is not None:
        return found
    raise NotFound(
        "No binding of this profile is in this namespace.",
        code="BINDING_NOT_FOUND",
        profile_id=profile.profile_id,
        namespace=namespace,
    )


def page_at(
    blobs: BlobStore, prefix: str, marker: str | None, limit: int, field: str = "continuation"
) -> BlobPage:
    """One page of ``prefix`` from a client's ``marker``: a marker the store refuses
    (a made-up Azure marker) is the client's bad cursor, 400 naming ``field``."""
    try:
        return blobs.list_page(prefix, marker, limit)
    except (StorageUnavailable, BlobNotFound):
        raise
    except StorageError as error:
        if marker is None:
            raise
        raise _bad_token(field) from error


def encode_token(namespace: str, marker: str | None) -> str | None:
    """The client's continuation: the storage marker with the namespace it belongs to,
    so a token cannot be replayed against another namespace's listing."""
    if marker is None:
        return None
    raw = json.dumps({"ns": namespace, "marker": marker}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(token: str | None, namespace: str, field: str = "continuation") -> str | None:
    """The storage marker of a token :func:`encode_token` made for ``namespace``; 400
    ``INVALID_QUERY`` naming the query parameter ``field`` for anything else."""
    if token is None:
        return None
    if not TOKEN.fullmatch(token):
        raise _bad_token(field)
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        raise _bad_token(field) from None
    if not isinstance(raw, dict) or set(raw) != {"ns", "marker"} or raw["ns"] != namespace:
        raise _bad_token(field)
    marker = raw["marker"]
    if not isinstance(marker, str) or not marker:
        raise _bad_token(field)
    return marker


def _bad_token(field: str = "continuation") -> BadRequest:
    return BadRequest(
        f"{field} must be the cursor of a previous page of this listing.",
        code="INVALID_QUERY",
        field=field,
        location=["query", field],
    )
