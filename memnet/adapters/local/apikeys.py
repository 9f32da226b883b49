"""API-key callers from a registry file (development and simple deployments).

The file (``MEMNET_CALLERS_FILE``) holds only SHA-256 hashes of keys:
``{"callers": [{"caller_id", "key_sha256", "tenants", "profiles", "roles", "services"?}]}``
(``services``: the service ids the caller may record events as besides its own caller id;
``["*"]``: any).
Keys are long random secrets, so an unsalted fast hash is enough to keep a leaked file
from revealing them; the lookup is by digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memnet.domain.callers import ANY, ROLES, Caller
from memnet.domain.errors import ConfigError, Unauthenticated
from memnet.domain.identifiers import SEGMENT


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyAuthenticator:
    def __init__(self, callers: Mapping[str, Caller]) -> None:
        self._by_hash = dict(callers)

    @classmethod
    def from_file(cls, path: Path) -> ApiKeyAuthenticator:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(str(path), "(file)", f"not readable JSON: {exc}") from exc
        entries = raw.get("callers") if isinstance(raw, dict) else None
        if not isinstance(entries, list):
            raise ConfigError(str(path), "/callers", "must be an array")
        return cls(
            {e["key_sha256"]: _caller(e, f"/callers/{i}", str(path)) for i, e in enumerate(entries)}
        )

    def authenticate(self, headers: Mapping[str, str]) -> Caller:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("Send 'Authorization: Bearer <api key>'.")
        # A dict lookup on the digest leaks nothing usable: the attacker cannot steer it.
        caller = self._by_hash.get(hash_key(token.strip()))
        if caller is None:
            raise Unauthenticated("Unknown API key.")
        return caller

    def describe(self) -> str:
        return f"api keys ({len(self._by_hash)} callers)"


def _caller(entry: Any, where: str, source: str) -> Caller:
    if not isinstance(entry, dict):
        raise ConfigError(source, where, "must be an object")
    _need(entry, where, source)
    roles = frozenset(entry["roles"])
    if not roles <= ROLES:
        raise ConfigError(source, f"{where}/roles", f"unknown roles {sorted(roles - ROLES)}")
    return Caller(
        entry["caller_id"],
        frozenset(entry["tenants"]),
        frozenset(entry["profiles"]),
        roles,
        _services(entry.get("services", []), f"{where}/services", source),
    )


def _services(values: Any, where: str, source: str) -> frozenset[str]:
    if not isinstance(values, list) or not all(
        isinstance(v, str) and (v == ANY or SEGMENT.fullmatch(v)) for v in values
    ):
        raise ConfigError(source, where, f"must be a list of service ids ({ANY!r} = all)")
    return frozenset(values)


def _need(entry: dict[str, Any], where: str, source: str) -> None:
    if not isinstance(entry.get("caller_id"), str) or not SEGMENT.fullmatch(entry["caller_id"]):
        raise ConfigError(source, f"{where}/caller_id", "must be an identifier")
    key = entry.get("key_sha256")
    if not isinstance(key, str) or len(key) != 64:
        raise ConfigError(source, f"{where}/key_sha256", "must be a hex SHA-256 of the key")
    for name in ("tenants", "profiles", "roles"):
        values = entry.get(name)
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            problem = f"must be a list of strings ({ANY!r} = all)"
            raise ConfigError(source, f"{where}/{name}", problem)
