"""The resumable, leased walk (memnet.services.governance.walker) on the embedded store: it resumes
where it stopped, yields to a live lease, and stops when its lapsed lease is taken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memnet.adapters.local.blobstore import FileBlobStore
from memnet.ports import BlobInfo, Condition
from memnet.services.governance.walker import Walker


class Clock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self.moment


def store_with(tmp_path: Path, count: int) -> FileBlobStore:
    store = FileBlobStore(tmp_path, fsync=False)
    for i in range(count):
        store.write(f"tenants/t/users/u/events/e{i:02d}.json", b"{}", Condition.create_only())
    return store


def test_runs_of_one_page_visit_every_blob_once_then_start_a_new_pass(tmp_path: Path) -> None:
    store, seen = store_with(tmp_path, 7), list[str]()
    walker = Walker(store, Clock(), "job", page_size=3)

    def visit(items: list[BlobInfo]) -> None:
        seen.extend(info.name for info in items)

    reports = [walker.run(visit, max_seconds=0) for _ in range(3)]
    assert [r.pass_complete for r in reports] == [False, False, True]
    assert seen == sorted(seen) and len(set(seen)) == 7
    walker.run(visit, max_seconds=0)
    assert seen[7] == seen[0]  # the next pass begins again


def test_a_walker_whose_lapsed_lease_was_taken_over_stops_at_its_next_save(
    tmp_path: Path,
) -> None:
    store, clock = store_with(tmp_path, 4), Clock()
    slow = Walker(store, clock, "job", page_size=1)
    other = Walker(store, clock, "job", page_size=1)
    taken = []

    def visit(items: list[BlobInfo]) -> None:
        if not taken:
            clock.moment += timedelta(hours=1)  # this page took longer than the lease
            taken.append(other.run(lambda page: None, max_seconds=0))

    report = slow.run(visit, max_seconds=10)
    assert taken[0].yielded is False
    assert report.yielded is True and report.pages == 1
    state = slow.state()
    assert state is not None and state.owner == other.owner


def test_a_dry_run_stops_at_its_limit_and_saves_nothing(tmp_path: Path) -> None:
    store, seen = store_with(tmp_path, 5), list[BlobInfo]()
    walker = Walker(store, Clock(), "job", page_size=2)
    report = walker.run(seen.extend, max_seconds=60, dry_run=True, limit=3)
    assert (report.visited, len(seen), report.pass_complete) == (3, 3, False)
    assert walker.state() is None
