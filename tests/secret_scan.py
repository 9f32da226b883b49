"""Nothing secret is logged: every log record of a test run goes to a file, and the run
fails if a planted secret or a JWT shows up in one.

Secrets the tests use are *planted*: fixed, distinctive values (:data:`PLANTED`) that
tests hand to the code as API keys, the pepper, the extractor's key and the search admin
key. ``tests/conftest.py`` puts a :class:`logging.FileHandler` on the root logger of
every pytest process (each xdist worker writes ``<worker>.log``) at DEBUG, so records of
every level and every library are kept, formatted with their arguments and traceback.
Server subprocesses write their output into the same directory
(:func:`subprocess_log_path`). When the run ends, the controller scans the directory
with :func:`scan` and fails the session on any finding, printing where with the secret
masked.

Cost, measured on the full suite with ``-n 2`` on two cores: 170 s without the capture,
175 s with it (and 36 more tests); 7 s more CPU (about 3 %). A run writes about 40 MB of
logs (mostly azure-core's request and response lines and urllib3's), scanned in 0.35 s.
Levels below the usual WARNING are recorded for every library, since that is where an SDK
would print a header or a body.

What it cannot see: a secret in an encoded form (base64, hashed), output a test captures
and never logs (``subprocess.run(capture_output=True)``), and Azurite's own log.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# What each planted value stands for -> the value. The dev API keys come from
# callers.dev.json and are sent by nearly every test; the others are for the tests of
# the pepper, extractor and search adapters, so any of them in a log is a leak.
PLANTED = {
    "agent api key": "dev-agent-key",
    "admin api key": "dev-admin-key",
    "privacy api key": "dev-privacy-key",
    "api key pepper": "planted-pepper-5c1f0e9a7b3d4862",
    "openai api key": "planted-openai-key-8e2b6d0c4a1f9735",
    "search api key": "planted-search-key-3d7a1c9e5f0b2846",
    "vault secret": "planted-vault-secret-b94e27c06a1d583f",
    "blobs extension key": "planted-blobs-extension-key-6a0d2f9c41e8b375",
}
# A JWT: base64url JSON header and payload, each starting ``{"`` (``eyJ``), then a dot.
JWT = re.compile(r"eyJ[A-Za-z0-9_-]*\.eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*")
_FINDER = re.compile("|".join([JWT.pattern, *(re.escape(v) for v in PLANTED.values())]))
_NAMES = {value: name for name, value in PLANTED.items()}

LOG_FORMAT = "%(asctime)s %(process)d %(threadName)s %(name)s %(levelname)s %(message)s"
EXCERPT = 160  # characters of the line around a finding
KEEP_RUNS = 3  # log directories of earlier runs kept beside this one (~40 MB each)


@dataclass(frozen=True)
class Finding:
    """One secret in one line of one file; ``excerpt`` has every secret masked."""

    path: Path
    line: int
    what: str
    excerpt: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}: {self.excerpt}"


def scan(paths: Iterable[Path]) -> list[Finding]:
    """Every planted secret and JWT in the files at ``paths``, in file and line order."""
    return [finding for path in sorted(paths) for finding in scan_file(path)]


def scan_file(path: Path) -> list[Finding]:
    text = path.read_text(encoding="utf-8", errors="replace")
    findings = []
    for found in _FINDER.finditer(text):
        line = text.count("\n", 0, found.start()) + 1
        start = text.rfind("\n", 0, found.start()) + 1
        end = text.find("\n", found.end())
        excerpt = _excerpt(text[start : len(text) if end < 0 else end], found.start() - start)
        findings.append(Finding(path, line, _what(found[0]), excerpt))
    return findings


def mask(text: str) -> str:
    """``text`` with every secret replaced by what it stands for."""
    return _FINDER.sub(lambda found: f"<{_what(found[0])}>", text)


def report(findings: list[Finding]) -> str:
    header = f"secret scan: {len(findings)} secret(s) in the logs of this run (masked):"
    return "\n".join([header, *(f"  {finding}" for finding in findings)])


def _what(secret: str) -> str:
    return _NAMES.get(secret, "JWT")


def _excerpt(line: str, at: int) -> str:
    start = max(0, at - EXCERPT // 2)
    return mask(line[start : start + EXCERPT])


# --- where the logs go ------------------------------------------------------------


def new_run_dir(root: Path) -> Path:
    """A fresh directory for this run's logs under ``root``; older runs beyond the last
    :data:`KEEP_RUNS` are removed (concurrent runs each get their own)."""
    root.mkdir(exist_ok=True)
    for old in sorted(root.glob("run-*"))[:-KEEP_RUNS]:
        shutil.rmtree(old, ignore_errors=True)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    run_dir = root / f"run-{stamp}-{time.monotonic_ns() % 10**9:09d}"
    run_dir.mkdir()
    return run_dir


def capture(path: Path) -> logging.Handler:
    """A handler writing every record that reaches it to ``path``, at DEBUG."""
    handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    return handler


def subprocess_log_path(run_dir: Path, worker: str, name: str) -> Path:
    """Where a subprocess of ``worker`` writes its output, so it is scanned too."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[-120:]
    return run_dir / f"{worker}-{safe}.log"
