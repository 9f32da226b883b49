"""Bounded waiting for what Azure makes true a little later: a role assignment that
answers 403 for minutes after it was created, a host key that exists once the host has
restarted on the new code, a webhook that answers Event Grid's handshake once it is up.

:class:`Patience` retries an attempt that says "not yet" (returns None, or raises an
error ``retryable`` accepts) with exponential pauses until a deadline, then raises
:class:`GaveUp` naming what it waited for and the last reason, so a hook fails with a
cause instead of hanging or failing on the first try."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")


class GaveUp(Exception):
    """The deadline passed while the attempt kept saying "not yet"."""


@dataclass(frozen=True)
class Patience:
    """Wait at most ``deadline_s`` in all, pausing ``first_pause_s`` after the first
    "not yet", doubling up to ``max_pause_s``. ``sleep`` and ``clock`` are the real ones
    unless a test passes its own."""

    deadline_s: float
    first_pause_s: float = 5.0
    max_pause_s: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def until(
        self,
        what: str,
        attempt: Callable[[], T | None],
        retryable: Callable[[Exception], str | None] = lambda _: None,
    ) -> T:
        """``attempt()``'s first answer that is not None. ``retryable(error)`` returns why
        an error is worth another try (it is raised at once when it returns None)."""
        give_up_at, pause, reason = self.clock() + self.deadline_s, self.first_pause_s, ""
        while True:
            try:
                found = attempt()
            except Exception as error:
                reason = retryable(error) or ""
                if not reason:
                    raise
            else:
                if found is not None:
                    return found
                reason = "not yet"
            if self.clock() + pause > give_up_at:
                raise GaveUp(f"{what}: gave up after {self.deadline_s:g} s ({reason})")
            print(f"{what}: {reason}; trying again in {pause:g} s", flush=True)
            self.sleep(pause)
            pause = min(pause * 2, self.max_pause_s)
