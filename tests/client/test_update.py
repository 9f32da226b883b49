"""``update()``: read, change, PATCH with If-Match; the server's rebase for ops that
commute, a re-read for ops that do not, and a bound on how often it tries."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from memnet_client import MemnetClient, NotFound, UpdateConflict

from tests.client.conftest import append_preference

DYNAMIC = ("user", "user_dynamic.json")
PROJECT = ("projects", "alpha.json")


def increment(content: Any) -> list[dict[str, Any]]:
    """Not commuting with itself (both replace one field): only a re-read keeps counts."""
    count = int(content["summary"] or 0) if content else 0
    return [{"op": "replace", "path": "/content/summary", "value": str(count + 1)}]


def in_threads(count: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            work(n)
        except BaseException as error:  # reported by the main thread
            errors.append(error)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors, errors


def test_update_creates_a_missing_document(memnet: MemnetClient):
    result = memnet.update(*DYNAMIC, append_preference("Be brief."))
    assert result.created
    assert memnet.get_document(*DYNAMIC).content["preferences"] == [{"text": "Be brief."}]


def test_update_with_no_ops_writes_nothing(memnet: MemnetClient):
    memnet.update(*DYNAMIC, append_preference("Be brief."))
    result = memnet.update(*DYNAMIC, lambda content: [])
    assert result.unchanged and len(memnet.get_history(*DYNAMIC).changes) == 1
    with pytest.raises(ValueError, match="does not exist"):
        memnet.update(*PROJECT, lambda content: [])


def test_concurrent_appends_all_land(memnet: MemnetClient):
    memnet.update(*DYNAMIC, append_preference("start"))

    def writer(n: int) -> None:
        for i in range(6):
            memnet.update(*DYNAMIC, append_preference(f"w{n}-{i}"), max_attempts=50)

    in_threads(2, writer)
    preferences = [p["text"] for p in memnet.get_document(*DYNAMIC).content["preferences"]]
    assert sorted(preferences) == sorted(
        ["start"] + [f"w{n}-{i}" for n in (0, 1) for i in range(6)]
    )


def test_concurrent_pure_appends_with_rebase_all_land(memnet: MemnetClient):
    """The opt-in: an append that does not depend on the content is rebased by the
    server instead of answering 412."""
    memnet.update(*DYNAMIC, append_preference("start"))

    def writer(n: int) -> None:
        for i in range(6):
            memnet.update(*DYNAMIC, append_preference(f"w{n}-{i}"), rebase=True)

    in_threads(2, writer)
    preferences = [p["text"] for p in memnet.get_document(*DYNAMIC).content["preferences"]]
    assert sorted(preferences) == sorted(
        ["start"] + [f"w{n}-{i}" for n in (0, 1) for i in range(6)]
    )


def add_once(text: str, before: Callable[[], None] = lambda: None) -> Any:
    """A check-then-append: depends on the content, so it must see the latest."""
    seen: list[list[str]] = []

    def change(content: Any) -> list[dict[str, Any]]:
        texts = [item["text"] for item in content["preferences"]]
        seen.append(texts)
        before()
        return [] if text in texts else append_preference(text)(content)

    change.seen = seen  # type: ignore[attr-defined]
    return change


def test_a_concurrent_write_makes_change_run_again_on_the_latest_content(
    memnet: MemnetClient, admin: MemnetClient
):
    memnet.update(*DYNAMIC, append_preference("coffee"))
    other = iter([lambda: admin.update(*DYNAMIC, append_preference("tea"))])
    change = add_once("tea", before=lambda: next(other, lambda: None)())
    result = memnet.update(*DYNAMIC, change)
    assert change.seen == [["coffee"], ["coffee", "tea"]] and result.unchanged
    assert memnet.get_document(*DYNAMIC).content["preferences"] == [
        {"text": "coffee"},
        {"text": "tea"},
    ]


def test_concurrent_increments_lose_nothing(memnet: MemnetClient):
    memnet.update(*PROJECT, increment)

    def writer(n: int) -> None:
        for _ in range(5):
            memnet.update(*PROJECT, increment, max_attempts=50)

    in_threads(2, writer)
    assert memnet.get_document(*PROJECT).content["summary"] == "11"


def test_update_gives_up_after_max_attempts(memnet: MemnetClient, admin: MemnetClient):
    memnet.update(*PROJECT, increment)
    calls = []

    def change_while_someone_else_writes(content: Any) -> list[dict[str, Any]]:
        calls.append(content["summary"])
        admin.update(*PROJECT, increment)  # the other writer, between our read and write
        return increment(content)

    with pytest.raises(UpdateConflict) as caught:
        memnet.update(*PROJECT, change_while_someone_else_writes, max_attempts=3)
    assert caught.value.attempts == 3 and len(calls) == 3
    assert caught.value.last.code == "ETAG_MISMATCH"
    assert memnet.get_document(*PROJECT).content["summary"] == "4"  # only the other's


def test_update_propagates_other_not_found(memnet: MemnetClient):
    with pytest.raises(NotFound) as caught:
        memnet.update("user", "nothing_binds_this.json", append_preference("x"))
    assert caught.value.code == "BINDING_NOT_FOUND"
