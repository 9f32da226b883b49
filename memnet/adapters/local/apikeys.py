"""The callers file (``MEMNET_CALLERS_FILE``): API-key callers, and the Entra ID
principals that production callers are mapped from.

``{"callers": [entry, ...]}``; every entry has ``caller_id``, ``tenants``, ``profiles``,
``roles`` and optionally ``services`` (the service ids the caller may record events as
besides its own caller id; ``["*"]``: any), and exactly one way to prove it:

- ``key_sha256``: the hex digest of an API key (development and simple deployments).
  Keys are long random secrets, so a fast hash is enough to keep a leaked file from
  revealing them; with ``MEMNET_API_KEY_PEPPER`` set the digest is HMAC-SHA-256 keyed by
  the pepper (kept in Key Vault), so the file alone cannot even confirm a guessed key.
  The lookup is by digest.
- ``entra_app_id`` or ``entra_object_id``: an Entra ID application or service principal
  (:mod:`memnet.domain.principals`); ``roles`` is then a ceiling on what its token's app
  roles grant, and ``delegated: true`` accepts users' tokens issued to that application.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from memnet.domain.callers import ANY, ROLES, Caller
from memnet.domain.errors import ConfigError, Unauthenticated
from memnet.domain.identifiers import SEGMENT
from memnet.domain.principals import PrincipalMap, grant_from_entry

Entry = tuple[str, dict[str, Any]]  # (where in the file, the entry)
_PROOFS = ("key_sha256", "entra_app_id", "entra_object_id")


def hash_key(key: str, pepper: str | None = None) -> str:
    """The digest a callers file holds for ``key``."""
    if pepper:
        return hmac.new(pepper.encode(), key.encode(), hashlib.sha256).hexdigest()
    return hashlib.sha256(key.encode()).hexdigest()


class ApiKeyAuthenticator:
    def __init__(self, callers: Mapping[str, Caller], pepper: str | None = None) -> None:
        self._by_hash = dict(callers)
        self._pepper = pepper

    @classmethod
    def from_entries(
        cls, entries: Iterable[Entry], source: str, pepper: str | None = None
    ) -> ApiKeyAuthenticator:
        by_hash: dict[str, Caller] = {}
        for where, entry in entries:
            if "key_sha256" not in entry:
                continue
            key = entry["key_sha256"]
            if not isinstance(key, str) or len(key) != 64:
                raise ConfigError(source, f"{where}/key_sha256", "must be a hex SHA-256 of the key")
            by_hash[key] = _caller(entry, where, source)
        return cls(by_hash, pepper)

    def authenticate(self, headers: Mapping[str, str]) -> Caller:
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthenticated("Send 'Authorization: Bearer <api key>'.")
        # A dict lookup on the digest leaks nothing usable: the attacker cannot steer it.
        caller = self._by_hash.get(hash_key(token.strip(), self._pepper))
        if caller is None:
            raise Unauthenticated("Unknown API key.")
        return caller

    def __len__(self) -> int:
        return len(self._by_hash)

    def describe(self) -> str:
        return f"api keys ({len(self._by_hash)} callers)"


def principal_map(entries: Iterable[Entry], source: str) -> PrincipalMap:
    """The Entra entries of a callers file."""
    return PrincipalMap(
        grant_from_entry(entry, where, source)
        for where, entry in entries
        if "key_sha256" not in entry
    )


def read_entries(path: Path) -> list[Entry]:
    """Every entry of the file, its common fields checked, each with one proof."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(str(path), "(file)", f"not readable JSON: {exc}") from exc
    entries = raw.get("callers") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(str(path), "/callers", "must be an array")
    checked: list[Entry] = []
    for i, entry in enumerate(entries):
        where = f"/callers/{i}"
        _caller(entry, where, str(path))
        if sum(name in entry for name in _PROOFS) != 1:
            raise ConfigError(str(path), where, f"needs exactly one of {', '.join(_PROOFS)}")
        checked.append((where, entry))
    ids = [entry["caller_id"] for _, entry in checked]
    duplicate = next((i for i in ids if ids.count(i) > 1), None)
    if duplicate is not None:
        raise ConfigError(str(path), "/callers", f"caller_id {duplicate!r} appears twice")
    return checked


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
        clearance=clearance_of(entry, where, source),
    )


def clearance_of(entry: dict[str, Any], where: str, source: str) -> str | None:
    """A caller entry's ``clearance``: a sensitivity class name (docs/profiles.md)."""
    value = entry.get("clearance")
    if value is not None and (not isinstance(value, str) or not SEGMENT.fullmatch(value)):
        raise ConfigError(source, f"{where}/clearance", "must be a class name")
    return value


def _services(values: Any, where: str, source: str) -> frozenset[str]:
    if not isinstance(values, list) or not all(
        isinstance(v, str) and (v == ANY or SEGMENT.fullmatch(v)) for v in values
    ):
        raise ConfigError(source, where, f"must be a list of service ids ({ANY!r} = all)")
    return frozenset(values)


def _need(entry: dict[str, Any], where: str, source: str) -> None:
    """The fields every entry has: an identifier, and three non-empty lists (an empty one
    would make a caller that can do nothing, a typo nobody would notice); a tenant is an
    identifier or ``"*"``, as the routes take them (a tenant that could never be in a
    route, ``"acme "``, would bind the caller to nothing)."""
    if not isinstance(entry.get("caller_id"), str) or not SEGMENT.fullmatch(entry["caller_id"]):
        raise ConfigError(source, f"{where}/caller_id", "must be an identifier")
    for name in ("tenants", "profiles", "roles"):
        values = entry.get(name)
        if (
            not isinstance(values, list)
            or not values
            or not all(isinstance(v, str) for v in values)
        ):
            problem = f"must be a non-empty list of strings ({ANY!r} = all)"
            raise ConfigError(source, f"{where}/{name}", problem)
    for i, tenant in enumerate(entry["tenants"]):
        if tenant != ANY and not SEGMENT.fullmatch(tenant):
            problem = f"{tenant!r} is not a tenant id (letters, digits, '.', '_', '-') or {ANY!r}"
            raise ConfigError(source, f"{where}/tenants/{i}", problem)
