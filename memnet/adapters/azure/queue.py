"""The Azure :class:`~memnet.ports.MessageQueue`, over ``azure-storage-queue`` (sync client).

Bodies are sent with ``TextBase64EncodePolicy`` and read with ``TextBase64DecodePolicy``:
the Functions queue trigger expects base64 (docs/decisions.md, "Foundations"). Names, body size
and argument ranges are checked before any request with the same rules as the embedded
queue, so both adapters reject the same input with :class:`ValueError`.

Constructors do no I/O. Each queue name gets one ``QueueClient``, built on first use,
which also creates the queue (idempotently). Every SDK exception is translated in one
place, :func:`map_queue_errors`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, TypedDict

from azure.core.exceptions import (
    AzureError,
    ResourceExistsError,
    ResourceNotFoundError,
)
from azure.storage.queue import QueueClient, TextBase64DecodePolicy, TextBase64EncodePolicy

from memnet.adapters.azure.errors import error_code, is_unavailable
from memnet.ports import (
    MAX_DELAY_SECONDS,
    MAX_MESSAGES,
    PreconditionFailed,
    QueueMessage,
    StorageError,
    StorageUnavailable,
    check_body,
    check_queue_name,
    check_range,
)

if TYPE_CHECKING:
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential, TokenCredential

    Credential = str | AzureNamedKeyCredential | AzureSasCredential | TokenCredential

QueueFactory = Callable[[str], QueueClient]

# A stale pop receipt: Azure answers 400 PopReceiptMismatch or, once the message is gone
# or was received again, 404 MessageNotFound.
_RECEIPT_CODES = frozenset({"PopReceiptMismatch", "MessageNotFound"})
_QUEUE_CODES = frozenset({"QueueNotFound", "QueueBeingDeleted", "QueueDisabled"})


class AzureStorageQueue:
    """Azure Storage Queues of one account."""

    def __init__(self, queue_factory: QueueFactory, location: str = "azure storage") -> None:
        self._factory = queue_factory
        self._location = location
        self._clients: dict[str, QueueClient] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_connection_string(cls, conn_str: str) -> AzureStorageQueue:
        """Queues of the account in ``conn_str`` (Azurite, account keys, SAS)."""

        def factory(queue: str) -> QueueClient:
            return QueueClient.from_connection_string(conn_str, queue, **_policies())

        return cls(factory)

    @classmethod
    def from_account_url(
        cls, account_url: str, credential: Credential | None = None
    ) -> AzureStorageQueue:
        """Identity-based queues; ``DefaultAzureCredential`` (built once, on first use)
        unless a credential is given."""
        credentials: list[Credential] = [] if credential is None else [credential]
        lock = threading.Lock()

        def factory(queue: str) -> QueueClient:
            with lock:
                if not credentials:
                    credentials.append(_default())
            return QueueClient(account_url, queue, credential=credentials[0], **_policies())

        return cls(factory, location=account_url)

    def describe(self) -> str:
        return f"azure storage queues at {self._location}"

    def erase_deleted(self) -> None:
        """Nothing to do: a deleted message is gone for every client, and the service's
        storage is not the app's to rewrite (the port's contract)."""

    def send(self, queue: str, body: str, *, delay_seconds: int = 0) -> str:
        """Enqueue ``body`` (visible after ``delay_seconds``); return the message id."""
        check_body(body)
        check_range("delay_seconds", delay_seconds, 0, MAX_DELAY_SECONDS)
        client = self._client(queue)
        with map_queue_errors(queue):
            sent = client.send_message(body, visibility_timeout=delay_seconds or None)
        return str(sent.id)

    def receive(
        self, queue: str, *, max_messages: int = 16, visibility_timeout: int = 30
    ) -> list[QueueMessage]:
        """One request for up to ``max_messages`` visible messages."""
        check_range("max_messages", max_messages, 1, MAX_MESSAGES)
        check_range("visibility_timeout", visibility_timeout, 1, MAX_DELAY_SECONDS)
        client = self._client(queue)
        with map_queue_errors(queue):
            pages = client.receive_messages(
                messages_per_page=max_messages, visibility_timeout=visibility_timeout
            ).by_page()
            page = list(next(pages, []))
        return [
            QueueMessage(str(m.id), str(m.pop_receipt), str(m.content), int(m.dequeue_count or 0))
            for m in page
        ]

    def delete(self, queue: str, message: QueueMessage) -> None:
        """Remove a received message; :class:`PreconditionFailed` if its receipt is stale."""
        client = self._client(queue)
        with map_queue_errors(queue):
            client.delete_message(message.id, message.pop_receipt)

    def release(self, queue: str, message: QueueMessage, *, delay_seconds: int = 0) -> None:
        """Make a received message visible again after ``delay_seconds``, content kept."""
        check_range("delay_seconds", delay_seconds, 0, MAX_DELAY_SECONDS)
        client = self._client(queue)
        with map_queue_errors(queue):
            client.update_message(message.id, message.pop_receipt, visibility_timeout=delay_seconds)

    def count(self, queue: str) -> int:
        """Azure's approximate message count (visible or not)."""
        client = self._client(queue)
        with map_queue_errors(queue):
            return int(client.get_queue_properties().approximate_message_count or 0)

    def _client(self, queue: str) -> QueueClient:
        """The queue's client; on first use it is built and the queue created."""
        check_queue_name(queue)
        client = self._clients.get(queue)
        if client is not None:
            return client
        client = self._factory(queue)
        with map_queue_errors(queue), suppress(ResourceExistsError):
            client.create_queue()
        with self._lock:
            return self._clients.setdefault(queue, client)


class _Policies(TypedDict):
    message_encode_policy: TextBase64EncodePolicy
    message_decode_policy: TextBase64DecodePolicy


def _policies() -> _Policies:
    return {
        "message_encode_policy": TextBase64EncodePolicy(),
        "message_decode_policy": TextBase64DecodePolicy(),
    }


def _default() -> TokenCredential:
    from azure.identity import DefaultAzureCredential  # slow import: only when used

    return DefaultAzureCredential()


@contextmanager
def map_queue_errors(queue: str) -> Iterator[None]:
    """Translate any Azure SDK exception raised inside into a :mod:`memnet.ports` error,
    chained to the original (the one adapter boundary)."""
    try:
        yield
    except AzureError as e:
        raise translate(queue, e) from e


def translate(queue: str, error: AzureError) -> StorageError:
    """The port error for one SDK error (see :func:`map_queue_errors`)."""
    code = error_code(error)
    status = getattr(error, "status_code", None)
    if code in _QUEUE_CODES:
        return StorageUnavailable(f"queue {queue} unusable: {code}")
    if code in _RECEIPT_CODES or isinstance(error, ResourceNotFoundError) or status == 404:
        return PreconditionFailed(queue)
    if is_unavailable(error, status):
        return StorageUnavailable(f"queue storage unavailable: {type(error).__name__}")
    return StorageError(f"unexpected queue storage error: {type(error).__name__} ({status})")
