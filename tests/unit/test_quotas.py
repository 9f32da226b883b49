"""Request quotas (:mod:`memnet.services.governance.quotas`) over the embedded file store, with a
clock the tests move: per user, per service, writes apart, windows, the shared counters
two instances draw from, and what happens when storage fails."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memnet.adapters.local.blobstore import FileBlobStore
from memnet.domain.errors import TooManyRequests
from memnet.ports import Blob, BlobStore, Condition, PreconditionFailed, StorageUnavailable
from memnet.services.governance.quotas import PREFIX, QuotaLimits, Quotas, batch_size

WINDOW_START = 1_800_000_000.0  # a multiple of 60: windows are aligned to the epoch


class Clock:
    def __init__(self, at: float = WINDOW_START) -> None:
        self.at = at

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.at, UTC)


class NoStorage:
    """A store that fails the test on any call."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"storage touched: {name}")


class Unreachable(FileBlobStore):
    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        raise StorageUnavailable("down")


class AlwaysContended(FileBlobStore):
    def write(self, name: str, data: bytes, condition: Condition) -> str:
        raise PreconditionFailed(name)


@pytest.fixture
def store(tmp_path: Path) -> FileBlobStore:
    return FileBlobStore(tmp_path / "data", fsync=False)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def quotas(store: BlobStore, clock: Clock, **limits: int) -> Quotas:
    return Quotas(store, clock, QuotaLimits(**limits))


def admitted(
    q: Quotas, times: int, caller: str = "svc", user: str = "u1", write: bool = False
) -> int:
    count = 0
    for _ in range(times):
        try:
            q.charge(caller, "t1", user, write=write)
            count += 1
        except TooManyRequests:
            pass
    return count


def refusal(
    q: Quotas, caller: str = "svc", user: str | None = "u1", write: bool = False
) -> TooManyRequests:
    with pytest.raises(TooManyRequests) as caught:
        q.charge(caller, "t1", user, write=write)
    return caught.value


def hammer(instances: list[Quotas], threads: int, attempts: int) -> int:
    """``threads`` threads per instance, each charging one user ``attempts`` times."""
    with ThreadPoolExecutor(len(instances) * threads) as pool:
        runs = [pool.submit(admitted, q, attempts) for q in instances for _ in range(threads)]
        return sum(run.result() for run in runs)


def counters(store: FileBlobStore) -> Iterator[tuple[str, dict[str, int]]]:
    for name in store.list_names(PREFIX):
        yield name, json.loads(store.read(name).data)


def test_user_past_the_limit_gets_429_with_retry_after_to_the_window_end(
    store: FileBlobStore, clock: Clock
) -> None:
    q = quotas(store, clock, user_requests=3)
    assert admitted(q, 3) == 3
    clock.at += 15
    error = refusal(q)
    assert (error.code, error.retry_after) == ("QUOTA_EXCEEDED", 45)
    assert error.details == {"scope": "user", "kind": "requests", "limit": 3, "window_seconds": 60}


def test_retry_after_is_at_least_one_second(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, user_requests=1)
    q.charge("svc", "t1", "u1", write=False)
    clock.at += 59.9
    assert refusal(q).retry_after == 1


def test_user_quota_is_per_tenant_and_user_across_callers(
    store: FileBlobStore, clock: Clock
) -> None:
    q = quotas(store, clock, user_requests=2)
    assert admitted(q, 1, caller="a") + admitted(q, 5, caller="b") == 2
    assert admitted(q, 2, user="u2") == 2
    q.charge("a", "t2", "u1", write=False)  # the same user id in another tenant


def test_service_quota_counts_every_user_of_the_caller(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, service_requests=3)
    assert admitted(q, 2, user="u1") + admitted(q, 2, user="u2") == 3
    assert refusal(q, user=None).details["scope"] == "service"
    assert admitted(q, 3, caller="other") == 3


def test_writes_have_their_own_quota_and_reads_go_on(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, user_requests=10, user_writes=2)
    assert admitted(q, 2, write=True) == 2
    assert refusal(q, write=True).details["kind"] == "writes"
    assert admitted(q, 10) == 8  # 2 writes + 8 reads: the refused write's token came back


def test_service_writes_are_limited_per_caller(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, service_writes=1)
    q.charge("svc", "t1", "u1", write=True)
    assert refusal(q, user="u2", write=True).details == {
        "scope": "service",
        "kind": "writes",
        "limit": 1,
        "window_seconds": 60,
    }
    assert admitted(q, 3) == 3


def test_a_new_window_admits_again_in_the_same_counter_blob(
    store: FileBlobStore, clock: Clock
) -> None:
    q = quotas(store, clock, user_requests=2)
    assert admitted(q, 3) == 2
    clock.at += 60
    assert admitted(q, 3) == 2
    [(_, counter)] = counters(store)
    assert counter == {"window": int(WINDOW_START) + 60, "reserved": 2}


def test_no_limits_do_no_storage_io(clock: Clock) -> None:
    q = Quotas(NoStorage(), clock, QuotaLimits())
    for write in (False, True):
        q.charge("svc", "t1", "u1", write=write)
    assert q.describe() == "no quotas"


def test_a_zero_limit_bucket_has_no_counter(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, service_requests=5)
    admitted(q, 3, write=True)
    assert [name.split("/")[1:3] for name, _ in counters(store)] == [["service", "requests"]]


def test_counter_names_hold_no_ids(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, user_requests=5, user_writes=5, service_requests=5, service_writes=5)
    q.charge("svc-caller", "tenant-x", "user-y", write=True)
    names = [name for name, _ in counters(store)]
    assert len(names) == 4
    assert not any(id_ in name for name in names for id_ in ("svc-caller", "tenant-x", "user-y"))


def test_forget_user_deletes_the_users_counters_only(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, user_requests=5, user_writes=5, service_requests=5)
    q.charge("svc", "t1", "u1", write=True)
    q.charge("svc", "t1", "u2", write=True)
    assert q.forget_user("t1", "u1") == 2
    assert q.forget_user("t1", "u1") == 0
    assert len(list(counters(store))) == 3  # u2's two, the service's one


@pytest.mark.parametrize(("count", "limit"), [(2, 200), (4, 30)])  # batch 10; batch 1
def test_instances_together_admit_at_most_the_limit(
    store: FileBlobStore, clock: Clock, count: int, limit: int
) -> None:
    instances = [quotas(store, clock, user_requests=limit) for _ in range(count)]
    total = hammer(instances, threads=6, attempts=60)
    assert limit - len(instances) * batch_size(limit) <= total <= limit
    [(_, counter)] = counters(store)
    assert counter["reserved"] == limit


def test_unspent_reservations_bound_the_under_admission(store: FileBlobStore, clock: Clock) -> None:
    first, second = (quotas(store, clock, user_requests=100) for _ in range(2))
    first.charge("svc", "t1", "u1", write=False)  # reserves a batch of 5, spends 1
    assert admitted(second, 200) == 100 - batch_size(100)


def test_a_lagging_clock_never_moves_the_counter_back(store: FileBlobStore) -> None:
    ahead, behind = Clock(WINDOW_START + 60), Clock(WINDOW_START + 59)
    quotas(store, ahead, user_requests=10).charge("svc", "t1", "u1", write=False)
    quotas(store, behind, user_requests=10).charge("svc", "t1", "u1", write=False)
    [(_, counter)] = counters(store)
    assert counter == {"window": int(WINDOW_START) + 60, "reserved": 2}


def test_storage_failure_admits_and_logs_no_ids(
    tmp_path: Path, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    q = quotas(Unreachable(tmp_path, fsync=False), clock, user_requests=1, service_requests=1)
    with caplog.at_level(logging.WARNING, logger="memnet.services.governance.quotas"):
        assert admitted(q, 5, caller="svc-caller", user="user-y") == 5
    assert caplog.records and "unreachable" in caplog.text
    assert not any(id_ in caplog.text for id_ in ("svc-caller", "user-y", "t1"))


def test_lost_compare_and_swaps_refuse_with_retry_after_one(tmp_path: Path, clock: Clock) -> None:
    q = quotas(AlwaysContended(tmp_path, fsync=False), clock, user_requests=10)
    assert refusal(q).retry_after == 1


def test_an_unreadable_counter_starts_over(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, service_requests=1)
    q.charge("svc", None, None, write=False)
    [(name, _)] = counters(store)
    store.write(name, b"not json", Condition.unconditional())
    assert admitted(quotas(store, clock, service_requests=1), 2) == 1


def test_batch_is_five_percent_of_the_limit_from_1_to_50() -> None:
    assert [batch_size(n) for n in (1, 39, 40, 200, 1000, 100_000)] == [1, 1, 2, 10, 50, 50]


def test_batch_is_capped_by_the_requests_an_instance_serves_at_once() -> None:
    assert [batch_size(n, 8) for n in (1, 100, 200, 100_000)] == [1, 5, 8, 8]


@pytest.mark.parametrize("batch_max", [1, 4])
def test_capped_batches_bound_what_many_instances_leave_unspent(
    store: FileBlobStore, clock: Clock, batch_max: int
) -> None:
    """Each of 12 instances takes one request (a scaled-out plan); with batches of 50
    they would have reserved 600 of 1,000 tokens, refusing the 13th instance's first
    requests; capped, each holds at most ``batch_max`` unspent."""
    limit = 1000
    instances = [quotas(store, clock, user_requests=limit, batch_max=batch_max) for _ in range(12)]
    for instance in instances:
        instance.charge("svc", "t1", "u1", write=False)
    late = quotas(store, clock, user_requests=limit, batch_max=batch_max)
    assert admitted(late, limit) == limit - 12 * batch_max  # all the others reserved


def test_describe_names_the_limits_and_no_ids(store: FileBlobStore, clock: Clock) -> None:
    q = quotas(store, clock, user_requests=100, service_writes=10, window_seconds=30)
    assert q.describe() == "user 100 requests, service 10 writes per 30 s (shared counters)"


def test_the_batch_cap_setting_reaches_the_quotas() -> None:
    from memnet.bootstrap import quota_limits
    from memnet.settings import Settings

    env = {"MEMNET_CALLERS_FILE": "callers.dev.json", "MEMNET_QUOTA_BATCH_MAX": "8"}
    assert quota_limits(Settings.from_env(env)).batch_max == 8
