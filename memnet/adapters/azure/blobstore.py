"""The Azure :class:`~memnet.ports.BlobStore`, over ``azure-storage-blob`` (sync client).

Conditions map onto Azure's own preconditions, so a conditional write is atomic on the
service side (docs/architecture.md, "Blob semantics everywhere"):

- ``Condition.match(etag)``: ``If-Match: etag``
- ``Condition.create_only()``: ``If-None-Match: *`` (``overwrite=False``)
- unconditional: a plain overwrite

Every SDK exception is translated in one place, :func:`map_azure_errors`. Constructors do
no I/O; the client is built on first use, once per store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, TypedDict

from azure.core import MatchConditions
from azure.core.exceptions import (
    AzureError,
    HttpResponseError,
    ResourceExistsError,
    ResourceModifiedError,
    ResourceNotFoundError,
    ResourceNotModifiedError,
)
from azure.storage.blob import ContainerClient, StorageStreamDownloader

from memnet.adapters.azure.errors import error_code, is_unavailable
from memnet.ports import (
    Blob,
    BlobInfo,
    BlobNotFound,
    BlobPage,
    BlobTooLarge,
    Condition,
    PreconditionFailed,
    Residue,
    StorageError,
    StorageUnavailable,
    check_bound,
    check_folder,
)

if TYPE_CHECKING:
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential, TokenCredential

    Credential = str | AzureNamedKeyCredential | AzureSasCredential | TokenCredential

ContainerFactory = Callable[[], ContainerClient]


class NotModified(Exception):
    """Internal: a conditional read found the blob unchanged."""


@contextmanager
def _not_modified() -> Iterator[None]:
    """On a GET with If-None-Match, the SDK reports an unchanged blob as 304
    (ResourceNotModifiedError) or, as Azurite answers, as ConditionNotMet."""
    try:
        yield
    except (ResourceNotModifiedError, ResourceModifiedError) as e:
        raise NotModified() from e


# Errors that say the container, not the blob, is unusable: a deployment problem (503).
_CONTAINER_CODES = frozenset({"ContainerNotFound", "ContainerBeingDeleted", "ContainerDisabled"})
_UNCONDITIONAL = Condition()
_RANGE_NOT_SATISFIABLE = 416


class AzureBlobStore:
    """Blob semantics on one Azure Storage container."""

    def __init__(self, container_factory: ContainerFactory) -> None:
        self._factory = container_factory
        self._client: ContainerClient | None = None
        self._client_lock = threading.Lock()

    @classmethod
    def from_connection_string(cls, conn_str: str, container: str) -> AzureBlobStore:
        """A store for ``container`` of the account in ``conn_str`` (Azurite, keys, SAS)."""
        return cls(lambda: ContainerClient.from_connection_string(conn_str, container))

    @classmethod
    def from_account_url(
        cls, account_url: str, container: str, credential: Credential | None = None
    ) -> AzureBlobStore:
        """An identity-based store; ``DefaultAzureCredential`` unless a credential is given."""

        def factory() -> ContainerClient:
            return ContainerClient(account_url, container, credential=credential or _default())

        return cls(factory)

    def describe(self) -> str:
        client = self._container
        return f"azure blob container {client.container_name} at {client.primary_hostname}"

    def ensure_container(self) -> None:
        """Create the container if it does not exist yet (idempotent)."""
        with map_azure_errors(self._container.container_name), suppress(ResourceExistsError):
            self._container.create_container()

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        """Return the blob or raise :class:`BlobNotFound`; with ``max_bytes``, one ranged
        download of at most ``max_bytes + 1`` bytes (:meth:`_read_bounded`)."""
        check_bound(max_bytes)
        with map_azure_errors(name):
            if max_bytes is None:
                return _blob(name, self._container.download_blob(name))
            return self._read_bounded(name, max_bytes)

    def _read_bounded(self, name: str, max_bytes: int) -> Blob:
        """The blob if it holds at most ``max_bytes``, else :class:`BlobTooLarge` with
        its whole size (the range's Content-Range), having downloaded ``max_bytes + 1``
        bytes at most. The service refuses any range of an empty blob (416
        InvalidRange): its properties then give its ETag."""
        try:
            downloader = self._container.download_blob(name, offset=0, length=max_bytes + 1)
        except HttpResponseError as error:
            if error.status_code != _RANGE_NOT_SATISFIABLE:
                raise
            return self._empty(name)
        if downloader.size > max_bytes:
            raise BlobTooLarge(name, _whole_size(downloader), max_bytes)
        return _blob(name, downloader)

    def _empty(self, name: str) -> Blob:
        """The empty blob ``name`` with its ETag; :class:`StorageUnavailable` (read again)
        when it was written since the ranged download found it empty."""
        properties = self._container.get_blob_client(name).get_blob_properties()
        if properties.size:
            raise StorageUnavailable(f"blob {name} changed while it was read; read again")
        return Blob(name=name, data=b"", etag=str(properties.etag))

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        """None if the blob still has ``etag`` (the service answers 304); else as read."""
        try:
            with map_azure_errors(name), _not_modified():
                downloader = self._container.download_blob(
                    name, etag=etag, match_condition=MatchConditions.IfModified
                )
                return _blob(name, downloader)
        except NotModified:
            return None

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        """Write if ``condition`` holds (else :class:`PreconditionFailed`); the new ETag."""
        _reject_contradiction(condition)
        with map_azure_errors(name):
            blob = self._container.get_blob_client(name)
            if condition.etag is None:  # overwrite=False sends If-None-Match: *
                result = blob.upload_blob(data, overwrite=not condition.absent)
            else:
                result = blob.upload_blob(data, overwrite=True, **_if_match(condition.etag))
        return str(result["etag"])

    def delete(self, name: str, condition: Condition = _UNCONDITIONAL) -> None:
        """Delete the blob; :class:`BlobNotFound` if absent, :class:`PreconditionFailed`
        if the ETag condition does not hold (on a missing blob too)."""
        if condition.absent:
            raise ValueError("a create-only condition has no meaning for delete")
        with map_azure_errors(name):
            if condition.etag is None:
                self._container.delete_blob(name)
            else:
                self._container.delete_blob(name, **_if_match(condition.etag))

    def list_names(self, prefix: str) -> Iterator[str]:
        """Yield the names starting with ``prefix``; Azure lists in lexical order."""
        with map_azure_errors(prefix):
            yield from self._container.list_blob_names(name_starts_with=prefix or None)

    def list_folder(self, prefix: str) -> Iterator[str]:
        """One level under ``prefix`` (the service's ``delimiter=/`` listing): blob names
        and ``BlobPrefix`` names, which end in ``/``. Sorted here: the SDK puts each
        page's prefixes before its blobs."""
        check_folder(prefix)
        with map_azure_errors(prefix):
            listed = self._container.walk_blobs(name_starts_with=prefix or None)
            yield from sorted(item.name for item in listed)

    def list_page(self, prefix: str, continuation: str | None, limit: int) -> BlobPage:
        """One service page (``maxresults`` = ``limit``), resuming at the service's
        marker; ``last_modified`` is the blob's Last-Modified property."""
        if limit < 1:
            raise ValueError("limit must be at least 1")
        with map_azure_errors(prefix):
            pages = self._container.list_blobs(
                name_starts_with=prefix or None, results_per_page=limit
            ).by_page(continuation_token=continuation)
            page = next(pages, None)
            items = tuple(BlobInfo(b.name, b.last_modified, b.size) for b in page or ())
        # by_page() is typed as a plain iterator; it is a PageIterator carrying the marker.
        token = getattr(pages, "continuation_token", None) if page is not None else None
        return BlobPage(items, str(token) if token else None)

    def remove_residue(self, prefix: str) -> Residue:
        """Nothing to remove: a write is one Put Blob (our blobs are far below the SDK's
        64 MiB single-put limit, so no uncommitted blocks are ever staged). Deleted
        blobs the account's soft delete keeps are the deployment's matter
        (docs/forgetting.md, "Known limits")."""
        return Residue()

    @property
    def _container(self) -> ContainerClient:
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = self._factory()
        return self._client


def _blob(name: str, downloader: StorageStreamDownloader[bytes]) -> Blob:
    """The downloaded blob, its content read in full (inside :func:`map_azure_errors`)."""
    return Blob(name=name, data=downloader.readall(), etag=str(downloader.properties.etag))


def _whole_size(downloader: StorageStreamDownloader[bytes]) -> int:
    """The blob's size, not the range's (the downloader's ``size``): the total the SDK
    keeps in ``bytes <first>-<last>/<total>``."""
    total = (downloader.properties.content_range or "").rpartition("/")[2]
    return int(total) if total.isdigit() else downloader.size


def _default() -> TokenCredential:
    from azure.identity import DefaultAzureCredential  # slow import: only when used

    return DefaultAzureCredential()


class _IfMatch(TypedDict):
    etag: str
    match_condition: MatchConditions


def _if_match(etag: str) -> _IfMatch:
    return {"etag": etag, "match_condition": MatchConditions.IfNotModified}


def _reject_contradiction(condition: Condition) -> None:
    if condition.absent and condition.etag is not None:
        raise ValueError("a condition is either If-Match or create-only, not both")


@contextmanager
def map_azure_errors(name: str) -> Iterator[None]:
    """Translate any Azure SDK exception raised inside into a :mod:`memnet.ports` error,
    chained to the original (the one adapter boundary; cf. httpx's mapping)."""
    try:
        yield
    except AzureError as e:
        raise translate(name, e) from e


def translate(name: str, error: AzureError) -> StorageError:
    """The port error for one SDK error (see :func:`map_azure_errors`)."""
    code = error_code(error)
    status = getattr(error, "status_code", None)
    if code in _CONTAINER_CODES:
        return StorageUnavailable(f"blob container unusable: {code}")
    if isinstance(error, ResourceNotFoundError) or status == 404:
        return BlobNotFound(name)
    if _is_precondition_failure(error, status, code):
        return PreconditionFailed(name)
    if is_unavailable(error, status):
        return StorageUnavailable(f"blob storage unavailable: {type(error).__name__}")
    return StorageError(f"unexpected blob storage error: {type(error).__name__} ({status})")


def _is_precondition_failure(error: AzureError, status: int | None, code: str | None) -> bool:
    if isinstance(error, ResourceModifiedError | ResourceExistsError):
        return True
    return status == 412 or (status == 409 and code == "BlobAlreadyExists")
