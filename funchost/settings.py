"""Host settings: the host's own limits and pool size, read from the environment (the
command line loads local.settings.json into it first, as `func start` does:
:func:`memnet.local_settings.load_local_settings`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

_N = TypeVar("_N", int, float)


@dataclass(frozen=True)
class HostLimits:
    """What one client may cost the local host (docs/decisions.md, "Local host limits").

    Each has a ``FUNCHOST_*`` setting, read once by :meth:`from_env` at startup."""

    max_body_bytes: int = 4 * 1024 * 1024  # FUNCHOST_MAX_BODY_BYTES: larger bodies get 413
    read_timeout_seconds: float = 30.0  # FUNCHOST_READ_TIMEOUT_SECONDS: to send one request
    idle_timeout_seconds: float = 120.0  # FUNCHOST_IDLE_TIMEOUT_SECONDS: before a request
    max_connections: int = 256  # FUNCHOST_MAX_CONNECTIONS: open at once; beyond, 503

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> HostLimits:
        env = os.environ if env is None else env
        default = cls()
        return cls(
            _positive(env, "FUNCHOST_MAX_BODY_BYTES", int, default.max_body_bytes),
            _positive(env, "FUNCHOST_READ_TIMEOUT_SECONDS", float, default.read_timeout_seconds),
            _positive(env, "FUNCHOST_IDLE_TIMEOUT_SECONDS", float, default.idle_timeout_seconds),
            _positive(env, "FUNCHOST_MAX_CONNECTIONS", int, default.max_connections),
        )


def _positive(
    env: Mapping[str, str], name: str, kind: Callable[[str], _N], default: _N, zero: bool = False
) -> _N:
    """The setting `name` as a finite number above 0 (or at least 0, with `zero`)."""
    text = env.get(name, "").strip()
    if not text:
        return default
    wanted = "a number >= 0" if zero else "a positive number"
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name} must be {wanted}: {text!r}") from None
    in_range = value >= 0 if zero else value > 0  # False for NaN too
    if not in_range or value == math.inf:
        raise ValueError(f"{name} must be {wanted}: {text!r}")
    return value


def blob_poll_seconds(env: Mapping[str, str] | None = None) -> float:
    """``FUNCHOST_BLOB_POLL_SECONDS``: how often blob triggers poll the store (default 60;
    0 disables them). See :mod:`funchost.blobs` for what one poll costs."""
    env = os.environ if env is None else env
    return _positive(env, "FUNCHOST_BLOB_POLL_SECONDS", float, 60.0, zero=True)


def invocation_threads(env: Mapping[str, str] | None = None) -> int:
    """The Functions Python worker's pool size: ``PYTHON_THREADPOOL_THREAD_COUNT`` if set,
    else ``ThreadPoolExecutor``'s default, ``min(32, cpus + 4)``."""
    value = (os.environ if env is None else env).get("PYTHON_THREADPOOL_THREAD_COUNT", "")
    if value.strip():
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError(
                f"PYTHON_THREADPOOL_THREAD_COUNT must be a positive integer: {value!r}"
            )
        return int(value)
    return min(32, (os.cpu_count() or 1) + 4)
