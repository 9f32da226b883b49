"""The MessageQueue contract (memnet.ports.MessageQueue; docs/decisions.md "Foundations"): one
suite that the SQLite queue, the in-memory queue and the Azure queue (on Azurite) pass, then
what the SQLite and memory queues promise on an injected clock, then what only the SQLite
queue does (WAL, processes), then what only the Azure adapter does (base64 bodies, error
mapping)."""

from __future__ import annotations

import base64
import multiprocessing
import sqlite3
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    ResourceExistsError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)

from memnet.adapters.azure.queue import AzureStorageQueue, map_queue_errors
from memnet.adapters.local.queue import SqliteQueue
from memnet.adapters.memory.queue import MemoryQueue
from memnet.ports import (
    MAX_BODY_BYTES,
    TTL_SECONDS,
    MessageQueue,
    PreconditionFailed,
    QueueMessage,
    StorageError,
    StorageUnavailable,
)
from tests.azurite import Azurite  # ``azurite_queue`` is registered by tests/conftest.py
from tests.contract.sdk_errors import http_error, with_code

T = TypeVar("T")


@pytest.fixture(params=["sqlite", "memory", pytest.param("azure", marks=pytest.mark.azurite)])
def message_queue(request: pytest.FixtureRequest, tmp_path: Path) -> MessageQueue:
    """Each adapter: a fresh SQLite file or memory, or the session's Azurite queue service."""
    if request.param == "sqlite":
        return SqliteQueue(tmp_path / "queues.db")
    if request.param == "memory":
        return MemoryQueue()
    server: Azurite = request.getfixturevalue("azurite_queue")
    return AzureStorageQueue.from_connection_string(server.queue_connection_string)


@pytest.fixture
def name() -> str:
    """A fresh queue name per test (Azurite's queues outlive a test)."""
    return f"contract-{uuid.uuid4().hex}"


def eventually(probe: Callable[[], T | None], seconds: float = 6.0) -> T:
    """Poll ``probe`` until it returns something truthy (visibility is second-grained)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"nothing after {seconds} s")


def receive_one(queue: MessageQueue, name: str, visibility_timeout: int = 30) -> QueueMessage:
    (message,) = queue.receive(name, max_messages=1, visibility_timeout=visibility_timeout)
    return message


# --- the contract, for every adapter ------------------------------------------------------


def test_empty_queue_receives_nothing(message_queue: MessageQueue, name: str) -> None:
    assert message_queue.receive(name) == []
    assert message_queue.count(name) == 0


def test_send_receive_delete(message_queue: MessageQueue, name: str) -> None:
    message_id = message_queue.send(name, "hello")
    message = receive_one(message_queue, name)
    assert (message.id, message.body, message.dequeue_count) == (message_id, "hello", 1)
    assert message.pop_receipt
    message_queue.delete(name, message)
    assert message_queue.count(name) == 0
    assert message_queue.receive(name) == []


def test_received_message_is_hidden_then_reappears_with_new_receipt(
    message_queue: MessageQueue, name: str
) -> None:
    message_queue.send(name, "job")
    first = receive_one(message_queue, name, visibility_timeout=1)
    assert message_queue.receive(name) == []
    again = eventually(lambda: message_queue.receive(name, visibility_timeout=1))
    (second,) = again
    assert (second.id, second.body, second.dequeue_count) == (first.id, "job", 2)
    assert second.pop_receipt != first.pop_receipt


def test_stale_receipt_raises_precondition_failed(message_queue: MessageQueue, name: str) -> None:
    message_queue.send(name, "job")
    first = receive_one(message_queue, name, visibility_timeout=1)
    (second,) = eventually(lambda: message_queue.receive(name, visibility_timeout=30))
    with pytest.raises(PreconditionFailed):
        message_queue.delete(name, first)
    with pytest.raises(PreconditionFailed):
        message_queue.release(name, first)
    message_queue.delete(name, second)
    assert message_queue.count(name) == 0


def test_deleted_message_cannot_be_deleted_again(message_queue: MessageQueue, name: str) -> None:
    message_queue.send(name, "job")
    message = receive_one(message_queue, name)
    message_queue.delete(name, message)
    with pytest.raises(PreconditionFailed):
        message_queue.delete(name, message)


def test_release_makes_message_visible_again(message_queue: MessageQueue, name: str) -> None:
    message_queue.send(name, "retry me")
    message_queue.release(name, receive_one(message_queue, name))
    again = receive_one(message_queue, name)
    assert (again.body, again.dequeue_count) == ("retry me", 2)


def test_release_with_delay_hides_message_until_due(message_queue: MessageQueue, name: str) -> None:
    message_queue.send(name, "later")
    first = receive_one(message_queue, name)
    message_queue.release(name, first, delay_seconds=1)
    assert message_queue.receive(name) == []
    with pytest.raises(PreconditionFailed):  # release spends the receipt
        message_queue.delete(name, first)
    (again,) = eventually(lambda: message_queue.receive(name))
    assert (again.id, again.body, again.dequeue_count) == (first.id, "later", 2)


def test_delayed_send_is_invisible_until_due(message_queue: MessageQueue, name: str) -> None:
    message_queue.send(name, "soon", delay_seconds=1)
    assert message_queue.receive(name) == []
    assert message_queue.count(name) == 1
    (message,) = eventually(lambda: message_queue.receive(name))
    assert (message.body, message.dequeue_count) == ("soon", 1)


def test_receive_respects_max_messages(message_queue: MessageQueue, name: str) -> None:
    for i in range(5):
        message_queue.send(name, f"m{i}")
    assert len(message_queue.receive(name, max_messages=3)) == 3
    assert len(message_queue.receive(name, max_messages=3)) == 2
    assert message_queue.receive(name, max_messages=3) == []


def test_count_includes_invisible_messages(message_queue: MessageQueue, name: str) -> None:
    for i in range(3):
        message_queue.send(name, f"m{i}")
    message = receive_one(message_queue, name)
    assert message_queue.count(name) == 3
    message_queue.delete(name, message)
    assert message_queue.count(name) == 2


BODIES = [
    "plain",
    "héllo ☃ 𝄞 日本語 🙂",
    '<xml attr="1">&amp; \' " </xml>',
    "+/=\n\t\r\\ %00 \x00 \x01",
    '{"snapshot": "tenants/t1/users/u1/snapshots/s1.json", "n": [1, 2]}',
    "é" * (MAX_BODY_BYTES // 2),  # exactly the limit, in two-byte characters
]


@pytest.mark.parametrize("body", BODIES, ids=range(len(BODIES)))
def test_body_round_trips_verbatim(message_queue: MessageQueue, name: str, body: str) -> None:
    message_queue.send(name, body)
    assert receive_one(message_queue, name).body == body


def test_body_over_the_limit_is_rejected(message_queue: MessageQueue, name: str) -> None:
    with pytest.raises(ValueError, match="limit"):
        message_queue.send(name, "x" * (MAX_BODY_BYTES + 1))
    assert message_queue.count(name) == 0


@pytest.mark.parametrize(
    "bad", ["ab", "Upper", "has_underscore", "-dash", "dash-", "a--b", "x" * 64]
)
def test_invalid_queue_name_is_rejected(message_queue: MessageQueue, bad: str) -> None:
    with pytest.raises(ValueError, match="queue name"):
        message_queue.send(bad, "body")
    with pytest.raises(ValueError, match="queue name"):
        message_queue.receive(bad)


def test_out_of_range_arguments_are_rejected(message_queue: MessageQueue, name: str) -> None:
    with pytest.raises(ValueError):
        message_queue.receive(name, max_messages=33)
    with pytest.raises(ValueError):
        message_queue.receive(name, visibility_timeout=0)
    with pytest.raises(ValueError):
        message_queue.send(name, "body", delay_seconds=-1)


def test_concurrent_receivers_process_every_message_once(
    message_queue: MessageQueue, name: str
) -> None:
    total = 200
    with ThreadPoolExecutor(8) as pool:
        sent = set(pool.map(lambda i: message_queue.send(name, f"m{i}"), range(total)))
    with ThreadPoolExecutor(4) as pool:
        batches = list(pool.map(lambda _: drain(message_queue, name), range(4)))
    processed = [message_id for batch in batches for message_id in batch]
    assert len(processed) == total
    assert set(processed) == sent
    assert message_queue.count(name) == 0


def drain(queue: MessageQueue, name: str) -> list[str]:
    """Receive and delete until the queue is empty; the ids this receiver processed."""
    processed: list[str] = []
    while batch := queue.receive(name, max_messages=8, visibility_timeout=60):
        for message in batch:
            queue.delete(name, message)
            processed.append(message.id)
    return processed


# --- what the SQLite and memory queues promise, on an injected clock ----------------------


@dataclass
class FakeClock:
    now: float = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "memory"])
def clocked(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[FakeClock], MessageQueue]:
    """Makes each embedded queue on a clock the test moves."""
    if request.param == "sqlite":
        return lambda clock: SqliteQueue(tmp_path / "q.db", clock=clock)
    return lambda clock: MemoryQueue(clock=clock)


def test_queue_orders_by_visible_time_then_insertion(
    clocked: Callable[[FakeClock], MessageQueue],
) -> None:
    clock = FakeClock()
    queue = clocked(clock)
    queue.send("jobs", "delayed", delay_seconds=5)
    for body in ("a", "b", "c"):
        queue.send("jobs", body)
    clock.now += 10
    queue.send("jobs", "d")
    assert [m.body for m in queue.receive("jobs")] == ["a", "b", "c", "delayed", "d"]


def test_queue_visibility_follows_the_injected_clock(
    clocked: Callable[[FakeClock], MessageQueue],
) -> None:
    clock = FakeClock()
    queue = clocked(clock)
    queue.send("jobs", "x")
    first = receive_one(queue, "jobs", visibility_timeout=30)
    clock.now += 29.9
    assert queue.receive("jobs") == []
    clock.now += 0.1
    assert receive_one(queue, "jobs").dequeue_count == first.dequeue_count + 1


def test_queue_never_delivers_expired_messages(
    clocked: Callable[[FakeClock], MessageQueue],
) -> None:
    clock = FakeClock()
    queue = clocked(clock)
    queue.send("jobs", "old")
    clock.now += TTL_SECONDS - 1
    queue.send("jobs", "young")
    held = receive_one(queue, "jobs", visibility_timeout=30)
    assert held.body == "old"
    clock.now += 1
    assert queue.count("jobs") == 1
    with pytest.raises(PreconditionFailed):
        queue.delete("jobs", held)
    assert [m.body for m in queue.receive("jobs")] == ["young"]


def test_queues_are_separate(clocked: Callable[[FakeClock], MessageQueue]) -> None:
    queue = clocked(FakeClock())
    queue.send("one", "1")
    assert queue.receive("two") == []
    assert [m.body for m in queue.receive("one")] == ["1"]


# --- what only the SQLite queue does --------------------------------------------------------


def test_sqlite_queue_uses_wal(tmp_path: Path) -> None:
    SqliteQueue(tmp_path / "q.db").send("jobs", "x")
    with sqlite3.connect(tmp_path / "q.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()


def _drain_in_process(path: str, out: str) -> None:
    Path(out).write_text("\n".join(drain(SqliteQueue(Path(path)), "jobs")))


@pytest.mark.slow
def test_sqlite_queue_processes_each_message_once_across_processes(tmp_path: Path) -> None:
    queue, total = SqliteQueue(tmp_path / "q.db"), 300
    sent = {queue.send("jobs", f"m{i}") for i in range(total)}
    context = multiprocessing.get_context("spawn")
    outs = [tmp_path / f"worker-{i}.txt" for i in range(3)]
    workers = [
        context.Process(target=_drain_in_process, args=(str(tmp_path / "q.db"), str(out)))
        for out in outs
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert [worker.exitcode for worker in workers] == [0] * len(workers)
    processed = [line for out in outs for line in out.read_text().split("\n") if line]
    assert sorted(processed) == sorted(sent)
    assert queue.count("jobs") == 0


# --- what only the Azure adapter does ------------------------------------------------------


@pytest.mark.azurite
def test_azure_queue_sends_base64_bodies(azurite_queue: Azurite, name: str) -> None:
    from azure.storage.queue import QueueClient

    text = "héllo ☃ <&> +/="
    AzureStorageQueue.from_connection_string(azurite_queue.queue_connection_string).send(name, text)
    raw = QueueClient.from_connection_string(azurite_queue.queue_connection_string, name)
    (message,) = raw.peek_messages()
    assert message.content == base64.b64encode(text.encode("utf-8")).decode("ascii")


SDK_ERRORS: list[tuple[Callable[[], AzureError], type[StorageError]]] = [
    (lambda: with_code(ResourceNotFoundError("boom"), "MessageNotFound"), PreconditionFailed),
    (lambda: http_error(404, "MessageNotFound"), PreconditionFailed),
    (lambda: ResourceNotFoundError("boom"), PreconditionFailed),
    (lambda: http_error(400, "PopReceiptMismatch"), PreconditionFailed),
    (lambda: with_code(ResourceNotFoundError("boom"), "QueueNotFound"), StorageUnavailable),
    (lambda: http_error(409, "QueueBeingDeleted"), StorageUnavailable),
    (lambda: ServiceRequestError("boom"), StorageUnavailable),
    (lambda: ServiceResponseError("boom"), StorageUnavailable),
    (lambda: ClientAuthenticationError("boom"), StorageUnavailable),
    (lambda: http_error(500), StorageUnavailable),
    (lambda: http_error(503, "ServerBusy"), StorageUnavailable),
    (lambda: http_error(429), StorageUnavailable),
    (lambda: http_error(413, "RequestBodyTooLarge"), StorageError),
    (lambda: http_error(400, "InvalidQueryParameterValue"), StorageError),
    (lambda: ResourceExistsError("boom"), StorageError),
    (lambda: AzureError("boom"), StorageError),
]


@pytest.mark.parametrize(("make_error", "expected"), SDK_ERRORS)
def test_every_azure_queue_error_is_mapped_and_chained(
    make_error: Callable[[], AzureError], expected: type[StorageError]
) -> None:
    error = make_error()
    with pytest.raises(StorageError) as caught, map_queue_errors("jobs"):
        raise error
    assert type(caught.value) is expected
    assert caught.value.__cause__ is error


def test_non_sdk_errors_pass_through_the_queue_mapping_unchanged() -> None:
    with pytest.raises(KeyError), map_queue_errors("jobs"):
        raise KeyError("not ours")


def test_azure_queue_constructors_do_no_io() -> None:
    queue = AzureStorageQueue.from_account_url("https://nowhere.invalid.example")
    assert "nowhere" in queue.describe()
    AzureStorageQueue.from_connection_string("UseDevelopmentStorage=true")
