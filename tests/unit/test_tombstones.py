"""The forget tombstone's remembered miss (memnet.services.forget.tombstones): a miss is
read once per ``cache_seconds``; a forget started on this instance is refused at once,
even against a miss a check still in flight remembers after it; nothing else is
remembered."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from memnet.adapters.clock import SystemClock
from memnet.adapters.memory.blobstore import MemoryBlobStore
from memnet.domain.errors import Conflict
from memnet.domain.layout import forget_job_name
from memnet.ports import Blob, Condition
from memnet.services.forget.tombstones import Tombstones
from memnet.services.records import dump

JOB = forget_job_name("t1", "u1")


class Reads(MemoryBlobStore):
    """Counts reads of forget jobs' blobs; ``during`` runs inside the next read of
    ``JOB``, after the store looked (so what it writes is not seen by that read)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.during: Callable[[], None] | None = None

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        self.count += name.startswith(JOB.rpartition("/")[0] + "/")
        try:
            return super().read(name, max_bytes=max_bytes)
        finally:
            hook, self.during = (self.during, None) if name == JOB else (None, self.during)
            if hook is not None:
                hook()


def tombstones(store: Reads, cache_seconds: float) -> Tombstones:
    return Tombstones(store, SystemClock(), quiet_seconds=3600, cache_seconds=cache_seconds)


def start_forget(store: Reads, stones: Tombstones) -> None:
    job = {"status": "running", "forget_id": "fgt_1", "completed_at": None}
    store.write(JOB, dump(job), Condition.create_only())
    stones.started("t1", "u1")


def test_a_miss_is_read_once_per_cache_period() -> None:
    store = Reads()
    stones = tombstones(store, 0.3)
    for _ in range(5):
        stones.check("t1", "u1")
    assert store.count == 1
    stones.check("t1", "u2")  # another user: its own read
    time.sleep(0.35)
    stones.check("t1", "u1")
    assert store.count == 3


def test_without_a_cache_period_every_check_reads() -> None:
    store = Reads()
    stones = tombstones(store, 0.0)
    for _ in range(3):
        stones.check("t1", "u1")
    assert store.count == 3


def test_a_forget_started_here_is_refused_at_once() -> None:
    store = Reads()
    stones = tombstones(store, 60.0)
    stones.check("t1", "u1")  # a miss, remembered
    start_forget(store, stones)
    with pytest.raises(Conflict) as refused:
        stones.check("t1", "u1")
    assert refused.value.code == "FORGET_IN_PROGRESS"


def test_a_miss_read_before_the_forget_started_is_not_remembered_after_it() -> None:
    store = Reads()
    stones = tombstones(store, 60.0)
    store.during = lambda: start_forget(store, stones)  # the forget lands mid-check
    stones.check("t1", "u1")  # this check missed: it began before the forget
    with pytest.raises(Conflict):
        stones.check("t1", "u1")


def test_a_job_found_is_never_remembered_and_running_always_reads() -> None:
    store = Reads()
    stones = tombstones(store, 60.0)
    start_forget(store, stones)
    for _ in range(2):
        with pytest.raises(Conflict):
            stones.check("t1", "u1")
    assert stones.running("t1", "u1") and store.count == 3
    stones.check("t1", "u2")  # a miss, remembered for checks, not for running()
    assert not stones.running("t1", "u2") and not stones.running("t1", "u2")
    assert store.count == 6
