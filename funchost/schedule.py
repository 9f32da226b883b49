"""NCRONTAB six-field schedules (`sec min hour day month day-of-week`) as used by timers."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

# (low, high) bounds of each field, in NCRONTAB order.
_BOUNDS: tuple[tuple[int, int], ...] = ((0, 59), (0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_SEARCH_LIMIT = timedelta(days=366 * 5)
_SETTING = re.compile(r"^%([^%]+)%$")


@dataclass(frozen=True)
class CronSchedule:
    seconds: frozenset[int]
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday

    def matches(self, moment: datetime) -> bool:
        return (
            moment.second in self.seconds
            and moment.minute in self.minutes
            and self._matches_date(moment)
            and moment.hour in self.hours
        )

    def _matches_date(self, moment: datetime) -> bool:
        weekday = (moment.weekday() + 1) % 7
        return moment.month in self.months and moment.day in self.days and weekday in self.weekdays

    def next_after(self, moment: datetime) -> datetime:
        """The first matching whole second strictly after `moment`."""
        candidate = moment.replace(microsecond=0) + timedelta(seconds=1)
        limit = candidate + _SEARCH_LIMIT
        while candidate < limit:
            if not self._matches_date(candidate):
                candidate = _start_of_day(candidate) + timedelta(days=1)
            elif candidate.hour not in self.hours:
                candidate = candidate.replace(minute=0, second=0) + timedelta(hours=1)
            elif candidate.minute not in self.minutes:
                candidate = candidate.replace(second=0) + timedelta(minutes=1)
            elif candidate.second not in self.seconds:
                candidate += timedelta(seconds=1)
            else:
                return candidate
        raise ValueError("schedule never fires")


def _start_of_day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def resolve_schedule(schedule: str) -> str:
    """Expand a `%NAME%` schedule from os.environ (as the Functions host does)."""
    found = _SETTING.match(schedule.strip())
    if not found:
        return schedule
    value = os.environ.get(found.group(1))
    if not value:
        raise ValueError(f"timer schedule setting {found.group(1)!r} is not set")
    return value


def parse_ncrontab(expression: str) -> CronSchedule:
    """Parse six fields, each `*`, `*/n`, `a-b`, `a-b/n`, a number, or a comma list of those."""
    fields = expression.split()
    if len(fields) != 6:
        raise ValueError(f"NCRONTAB needs 6 fields (sec min hour day month dow): {expression!r}")
    sets = [_parse_field(f, low, high) for f, (low, high) in zip(fields, _BOUNDS, strict=True)]
    return CronSchedule(*sets)


def _parse_field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for item in text.split(","):
        values.update(_parse_item(item, low, high))
    return frozenset(values)


def _parse_item(item: str, low: int, high: int) -> range:
    base, _, step_text = item.partition("/")
    step = _number(step_text, 1, high) if step_text else 1
    if base == "*":
        return range(low, high + 1, step)
    start_text, dash, end_text = base.partition("-")
    start = _number(start_text, low, high)
    end = _number(end_text, low, high) if dash else (high if step_text else start)
    if end < start:
        raise ValueError(f"bad NCRONTAB range: {item!r}")
    return range(start, end + 1, step)


def _number(text: str, low: int, high: int) -> int:
    if not text.isdigit() or not low <= int(text) <= high:
        raise ValueError(f"NCRONTAB value {text!r} is not in {low}..{high}")
    return int(text)
