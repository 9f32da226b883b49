"""NCRONTAB parsing, timer firing and queue delivery."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import azure.functions as func
import pytest

from funchost import functions_of, start_in_thread
from funchost.background import BackgroundRunner
from funchost.schedule import parse_ncrontab, resolve_schedule

from . import sample_app


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_ncrontab_every_five_minutes() -> None:
    schedule = parse_ncrontab("0 */5 * * * *")
    assert schedule.minutes == frozenset(range(0, 60, 5))
    assert schedule.next_after(_at("2024-01-01T10:03:07")) == _at("2024-01-01T10:05:00")
    assert schedule.next_after(_at("2024-01-01T10:05:00")) == _at("2024-01-01T10:10:00")


def test_ncrontab_lists_ranges_and_weekdays() -> None:
    schedule = parse_ncrontab("0 0,30 9 * * 1-5")
    assert schedule.minutes == frozenset({0, 30})
    # 2024-01-06 is a Saturday: next weekday 09:00 is Monday the 8th.
    assert schedule.next_after(_at("2024-01-06T10:00:00")) == _at("2024-01-08T09:00:00")


def test_ncrontab_rare_date() -> None:
    schedule = parse_ncrontab("0 0 0 29 2 *")
    assert schedule.next_after(_at("2024-03-01T00:00:00")) == _at("2028-02-29T00:00:00")


def test_ncrontab_every_second() -> None:
    schedule = parse_ncrontab("* * * * * *")
    assert schedule.next_after(_at("2024-01-01T00:00:00")) == _at("2024-01-01T00:00:01")


@pytest.mark.parametrize(
    "expression", ["* * * * *", "60 * * * * *", "*/0 * * * * *", "a * * * * *", "5-1 * * * * *"]
)
def test_ncrontab_rejects_bad_expressions(expression: str) -> None:
    with pytest.raises(ValueError):
        parse_ncrontab(expression)


def test_schedule_setting_resolved_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FH_SCHEDULE", "0 0 * * * *")
    assert resolve_schedule("%FH_SCHEDULE%") == "0 0 * * * *"
    assert resolve_schedule("0 1 * * * *") == "0 1 * * * *"
    monkeypatch.delenv("FH_SCHEDULE")
    with pytest.raises(ValueError, match="FH_SCHEDULE"):
        resolve_schedule("%FH_SCHEDULE%")


def _wait_for(condition: object, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return True
        time.sleep(0.02)
    return False


def test_timer_fires_with_real_timer_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SAMPLE_SCHEDULE", "* * * * * *")
    sample_app.timer_calls.clear()
    runner = BackgroundRunner(functions_of(sample_app.app))
    runner.start()
    try:
        assert _wait_for(lambda: sample_app.timer_calls)
    finally:
        runner.stop()
    assert isinstance(sample_app.timer_calls[0], func.timer.TimerRequest)


class FakeQueueSource:
    def __init__(self, messages: dict[str, list[tuple[str, str, int]]]) -> None:
        self.messages = messages
        self.completed: list[str] = []
        self.abandoned: list[str] = []

    def receive(self, queue_name: str) -> list[tuple[str, str, int]]:
        batch, self.messages[queue_name] = self.messages.get(queue_name, []), []
        return batch

    def complete(self, queue_name: str, message_id: str) -> None:
        self.completed.append(message_id)

    def abandon(self, queue_name: str, message_id: str) -> None:
        self.abandoned.append(message_id)


def test_queue_functions_run_only_with_a_source() -> None:
    sample_app.queue_calls.clear()
    source = FakeQueueSource({"jobs": [("m1", "hello", 1), ("m2", "fail", 3)]})
    with start_in_thread(sample_app.app, route_prefix="", queue_source=source, run_timers=False):
        assert _wait_for(lambda: source.completed and source.abandoned)
    assert source.completed == ["m1"] and source.abandoned == ["m2"]
    (message,) = sample_app.queue_calls
    assert isinstance(message, func.queue.QueueMessage)
    assert (message.id, message.get_body(), message.dequeue_count) == ("m1", b"hello", 1)
