"""Queue triggers over a MessageQueue (funchost.queues): delivery of real
``func.queue.QueueMessage`` objects, deletion on success, retry and poison handling as the
Functions host does it (docs/operations.md, "Local server")."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import azure.functions as func
import pytest

from funchost import start_in_thread
from funchost.queues import PortQueueSource, QueueOptions, parse_timespan, read_queue_options
from memnet.adapters.local.queue import SqliteQueue

from . import sample_app

T = TypeVar("T")
REPO_HOST_JSON = Path(__file__).resolve().parents[2] / "host.json"

doomed_app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
doomed_attempts: list[int] = []


@doomed_app.queue_trigger(arg_name="msg", queue_name="doomed", connection="AzureWebJobsStorage")
def always_fails(msg: func.QueueMessage) -> None:
    doomed_attempts.append(msg.dequeue_count)
    raise RuntimeError("never works")


@dataclass
class FakeClock:
    now: float = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


def wait_for(probe: Callable[[], T], seconds: float = 10.0) -> T:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := probe():
            return found
        time.sleep(0.02)
    raise AssertionError(f"condition not met after {seconds} s")


@pytest.fixture
def queue(tmp_path: Path) -> SqliteQueue:
    return SqliteQueue(tmp_path / "queues.db")


def test_message_processed_ok_is_deleted(queue: SqliteQueue) -> None:
    sample_app.queue_calls.clear()
    queue.send("jobs", "hello")
    with start_in_thread(sample_app.app, route_prefix="", queues=queue, run_timers=False):
        wait_for(lambda: sample_app.queue_calls)
        wait_for(lambda: queue.count("jobs") == 0)
    assert queue.count("jobs-poison") == 0


def test_delivery_passes_a_real_queue_message(queue: SqliteQueue) -> None:
    sample_app.queue_calls.clear()
    message_id = queue.send("jobs", '{"text": "héllo ☃ 🙂"}')
    with start_in_thread(
        sample_app.app, route_prefix="", queue_source=PortQueueSource(queue), run_timers=False
    ):
        (message,) = wait_for(lambda: sample_app.queue_calls)
    assert isinstance(message, func.queue.QueueMessage)
    assert message.id == message_id
    assert message.get_json() == {"text": "héllo ☃ 🙂"}
    assert message.dequeue_count == 1


def test_always_failing_function_moves_message_to_poison(queue: SqliteQueue) -> None:
    doomed_attempts.clear()
    queue.send("doomed", "payload")
    source = PortQueueSource(queue, max_dequeue_count=3)
    with start_in_thread(doomed_app, route_prefix="", queue_source=source, run_timers=False):
        wait_for(lambda: queue.count("doomed-poison") == 1)
    assert doomed_attempts == [1, 2, 3]
    assert queue.count("doomed") == 0
    assert [m.body for m in queue.receive("doomed-poison")] == ["payload"]


def test_failed_message_is_retried_after_the_retry_delay(tmp_path: Path) -> None:
    clock = FakeClock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    source = PortQueueSource(queue, retry_delay=10)
    queue.send("jobs", "x")
    ((message_id, _, count),) = source.receive("jobs")
    source.abandon("jobs", message_id)
    clock.now += 9
    assert source.receive("jobs") == []
    clock.now += 1
    assert source.receive("jobs") == [(message_id, "x", count + 1)]


def test_message_received_past_max_dequeue_count_goes_to_poison_undelivered(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    queue.send("jobs", "crashed the host")
    for _ in range(2):  # received, never settled: the visibility timeout runs out
        queue.receive("jobs", visibility_timeout=1)
        clock.now += 1
    assert PortQueueSource(queue, max_dequeue_count=2).receive("jobs") == []
    assert queue.count("jobs") == 0
    assert [m.body for m in queue.receive("jobs-poison")] == ["crashed the host"]


def test_settling_after_the_lease_ran_out_does_not_raise(tmp_path: Path) -> None:
    clock = FakeClock()
    queue = SqliteQueue(tmp_path / "q.db", clock=clock)
    source = PortQueueSource(queue, visibility_timeout=5)
    queue.send("jobs", "slow")
    ((message_id, _, _),) = source.receive("jobs")
    clock.now += 5
    (other,) = queue.receive("jobs")  # another receiver took it over
    source.complete("jobs", message_id)
    source.complete("jobs", "unknown-id")
    queue.delete("jobs", other)


def test_queue_options_come_from_host_json(tmp_path: Path) -> None:
    assert read_queue_options(tmp_path / "missing.json") == QueueOptions(5, 0, 16)
    assert read_queue_options(REPO_HOST_JSON) == QueueOptions(5, 30, 16)
    host_json = tmp_path / "host.json"
    host_json.write_text(json.dumps({"extensions": {"queues": {"maxDequeueCount": 2}}}))
    assert read_queue_options(host_json) == QueueOptions(2, 0, 16)
    host_json.write_text("{not json")
    with pytest.raises(ValueError, match="malformed"):
        read_queue_options(host_json)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("00:00:00", 0), ("00:00:30", 30), ("01:02:03", 3723), ("1.00:00:01", 86401), ("0:0:0.5", 1)],
)
def test_parse_timespan(text: str, seconds: int) -> None:
    assert parse_timespan(text) == seconds


def test_parse_timespan_rejects_other_text() -> None:
    with pytest.raises(ValueError, match="TimeSpan"):
        parse_timespan("30s")
