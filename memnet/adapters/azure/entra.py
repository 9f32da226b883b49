"""Entra ID bearer tokens checked against the tenant's published signing keys (issue 12).

:class:`JwtVerifier` reads the tenant's OpenID configuration and JWKS lazily (never in the
constructor), caches the keys, and verifies RS256/RS384/RS512 access tokens: signature,
``exp``/``nbf`` with a small skew, ``iss`` exactly the metadata's issuer, ``aud`` one of ours.
Every refusal is :class:`~memnet.domain.errors.Unauthenticated` with a distinct code and a
message that never quotes the token; keys that cannot be had at all are
:class:`~memnet.domain.errors.Unavailable` (503), since retrying may succeed.

Outbound fetches are rate limited to one per ``refetch_interval_seconds`` across threads, so
a caller spraying unknown ``kid`` values cannot turn each request into a request to Entra.
What that gives up: a token signed with a key Entra published less than one interval after
our last fetch is refused (``TOKEN_KEY_UNKNOWN``) until the interval passes. Keys older than
``keys_max_age_seconds`` are refreshed; if the refresh fails the old keys stay in use (an
Entra outage should not take the service down; keys are public, so staleness only delays a
revocation), and a warning is logged.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from jwt.types import Options

from memnet.domain.errors import ConfigError, Unauthenticated, Unavailable

log = logging.getLogger(__name__)

ALGORITHMS = frozenset({"RS256", "RS384", "RS512"})
MAX_TOKEN_BYTES = 16 * 1024
MAX_DOCUMENT_BYTES = 1024 * 1024
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})

# Times are checked by JwtVerifier._check_times against the injectable clock.
_DECODE_OPTIONS: Options = {
    "require": ["exp", "iss", "aud"],
    "verify_exp": False,
    "verify_nbf": False,
    "verify_iat": False,
}
_PYJWT_CODES: tuple[tuple[type[Exception], str], ...] = (
    (jwt.InvalidAudienceError, "TOKEN_AUDIENCE"),
    (jwt.InvalidIssuerError, "TOKEN_ISSUER"),
)


class _FetchError(Exception):
    """The metadata or JWKS could not be fetched or made sense of; the message is safe to log."""


@dataclass(frozen=True)
class _SigningKey:
    """One RSA key from the JWKS, with the ``alg`` it declares (``None``: any of ours)."""

    public_key: RSAPublicKey
    declared_alg: str | None


def check_url(url: str) -> str:
    """``url`` if it may be fetched: ``https://``, or ``http://`` to a loopback host only
    (so tests can serve metadata locally); otherwise :class:`_FetchError`."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS:
        return url
    raise _FetchError(f"refusing to fetch {url!r}: https only (http to loopback in tests)")


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to a URL that :func:`check_url` allows."""

    def redirect_request(
        self, req: Any, fp: Any, code: Any, msg: Any, headers: Any, newurl: str
    ) -> Any:
        return super().redirect_request(req, fp, code, msg, headers, check_url(newurl))


def fetch_json(url: str, timeout: float) -> dict[str, Any]:
    """The JSON object at ``url``: bounded in time and size; any failure is :class:`_FetchError`."""
    request = urllib.request.Request(check_url(url), headers={"Accept": "application/json"})
    try:
        opener = urllib.request.build_opener(_CheckedRedirects)  # per call: reads proxy env
        with opener.open(request, timeout=timeout) as response:
            body = response.read(MAX_DOCUMENT_BYTES + 1)
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        raise _FetchError(f"cannot fetch {url}: {type(error).__name__}: {error}") from error
    if len(body) > MAX_DOCUMENT_BYTES:
        raise _FetchError(f"{url} is larger than {MAX_DOCUMENT_BYTES} bytes")
    try:
        document = json.loads(body)
    except ValueError as error:
        raise _FetchError(f"{url} is not JSON in UTF-8: {error}") from error
    if not isinstance(document, dict):
        raise _FetchError(f"{url} is not a JSON object")
    return document


def parse_jwks(document: Mapping[str, Any]) -> dict[str, _SigningKey]:
    """The RSA signing keys of a JWKS by ``kid``; other keys (EC, encryption, no kid) are
    skipped. A set with no usable key is :class:`_FetchError`: keeping what we had is safer."""
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise _FetchError("the JWKS has no 'keys' list")
    keys = dict(filter(None, (_signing_key(entry) for entry in entries)))
    if not keys:
        raise _FetchError("the JWKS holds no RSA signing key with a kid")
    return keys


def _signing_key(entry: Any) -> tuple[str, _SigningKey] | None:
    if not isinstance(entry, dict) or entry.get("kty") != "RSA":
        return None
    kid, alg = entry.get("kid"), entry.get("alg")
    if not isinstance(kid, str) or entry.get("use", "sig") != "sig":
        return None
    try:
        key = jwt.PyJWK(entry).key
    except (jwt.PyJWTError, ValueError) as error:  # bad base64 in n/e is a ValueError
        log.warning("skipping unusable JWKS key %r: %s", kid, error)
        return None
    if not isinstance(key, RSAPublicKey):
        return None
    return kid, _SigningKey(key, alg if isinstance(alg, str) else None)


class JwtVerifier:
    """Verifies Entra ID access tokens for one tenant and a set of accepted audiences.

    Thread-safe: one lock guards the key cache and is held while fetching, so many threads
    that miss at once cause one fetch and wait for it (at most ``2 * timeout_seconds``).
    """

    def __init__(
        self,
        metadata_url: str,
        audiences: Sequence[str],
        *,
        leeway_seconds: int = 60,
        refetch_interval_seconds: float = 60.0,
        keys_max_age_seconds: float = 86_400.0,
        timeout_seconds: float = 5.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        try:
            check_url(metadata_url)
        except _FetchError as error:
            raise ConfigError("entra", "metadata_url", str(error)) from error
        if not audiences or not all(isinstance(a, str) and a for a in audiences):
            raise ConfigError("entra", "audiences", "name at least one audience")
        self._metadata_url = metadata_url
        self._audiences = list(audiences)
        self._leeway = leeway_seconds
        self._interval = refetch_interval_seconds
        self._max_age = keys_max_age_seconds
        self._timeout = timeout_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._issuer: str | None = None
        self._jwks_uri: str | None = None
        self._keys: dict[str, _SigningKey] = {}
        self._fetched_at: float | None = None
        self._last_attempt: float | None = None

    def describe(self) -> str:
        """Where tokens come from, for startup logs; no secrets (there are none to hold)."""
        source = f"issuer {self._issuer}" if self._issuer else f"metadata {self._metadata_url}"
        return f"entra id tokens ({source}; audiences {', '.join(self._audiences)})"

    def verify(self, token: str) -> dict[str, Any]:
        """The claims of ``token`` if Entra signed it for us and it is current; otherwise
        :class:`Unauthenticated` with a ``TOKEN_*`` code, or :class:`Unavailable`."""
        alg, kid = _header(token)
        key = self._key(kid)
        if key.declared_alg is not None and key.declared_alg != alg:
            raise Unauthenticated("token alg does not match its key", code="TOKEN_INVALID")
        claims = self._decode(token, key.public_key, alg)
        self._check_times(claims)
        return claims

    def _decode(self, token: str, key: RSAPublicKey, alg: str) -> dict[str, Any]:
        """Signature, ``iss`` and ``aud`` by PyJWT with the key object (never a string, so an
        HS256 token keyed with our public PEM cannot verify); times by :meth:`_check_times`."""
        try:
            return jwt.decode(
                token, key, [alg], _DECODE_OPTIONS, audience=self._audiences, issuer=self._issuer
            )
        except jwt.PyJWTError as error:
            code = next((c for kind, c in _PYJWT_CODES if isinstance(error, kind)), None)
            raise Unauthenticated(
                f"token refused: {type(error).__name__}", code=code or "TOKEN_INVALID"
            ) from None

    def _check_times(self, claims: Mapping[str, Any]) -> None:
        """``exp`` (required) and ``nbf`` (when present) against our clock, with the leeway."""
        now, exp, nbf = self._clock(), claims["exp"], claims.get("nbf")
        if not all(_is_number(claims[name]) for name in ("exp", "nbf", "iat") if name in claims):
            raise Unauthenticated("token times are not numbers", code="TOKEN_INVALID")
        if now >= exp + self._leeway:
            raise Unauthenticated("token has expired", code="TOKEN_EXPIRED")
        if nbf is not None and now < nbf - self._leeway:
            raise Unauthenticated("token is not valid yet", code="TOKEN_EXPIRED")

    def _key(self, kid: str) -> _SigningKey:
        """The cached key ``kid``, refetching (rate limited) when stale or unknown."""
        with self._lock:
            now = self._clock()
            if kid not in self._keys or self._is_stale(now):
                self._refresh(now)
            if self._fetched_at is None:
                raise Unavailable(
                    "the Entra signing keys cannot be fetched", retry_after=self._wait(now)
                )
            key = self._keys.get(kid)
        if key is None:
            raise Unauthenticated("token signed by an unknown key", code="TOKEN_KEY_UNKNOWN")
        return key

    def _is_stale(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= self._max_age

    def _wait(self, now: float) -> int:
        last = now if self._last_attempt is None else self._last_attempt
        return max(1, math.ceil(self._interval - (now - last)))

    def _refresh(self, now: float) -> None:
        """Fetch the keys unless a fetch was tried within the interval; a failure keeps the
        keys we have and is logged (without any token)."""
        if self._last_attempt is not None and now - self._last_attempt < self._interval:
            return
        self._last_attempt = now
        try:
            self._keys = parse_jwks(fetch_json(self._jwks(), self._timeout))
        except _FetchError as error:
            log.warning("cannot refresh the Entra signing keys: %s", error)
            return
        self._fetched_at = now

    def _jwks(self) -> str:
        """The JWKS URL, reading the metadata (issuer, jwks_uri) once: both are fixed per tenant."""
        if self._jwks_uri is None:
            metadata = fetch_json(self._metadata_url, self._timeout)
            issuer, jwks_uri = metadata.get("issuer"), metadata.get("jwks_uri")
            if not isinstance(issuer, str) or not issuer or not isinstance(jwks_uri, str):
                raise _FetchError(f"{self._metadata_url} lacks issuer or jwks_uri")
            self._issuer, self._jwks_uri = issuer, check_url(jwks_uri)
        return self._jwks_uri


def _header(token: str) -> tuple[str, str]:
    """The ``alg`` and ``kid`` of a bounded, well-formed token whose alg is on our list; checked
    before any key is looked up so ``none``/HS*/ES*/PS* never reach a verifier."""
    if not isinstance(token, str) or len(token) > MAX_TOKEN_BYTES:
        raise Unauthenticated("token is malformed or too large", code="TOKEN_INVALID")
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        raise Unauthenticated("token is malformed", code="TOKEN_INVALID") from None
    alg, kid = header.get("alg"), header.get("kid")
    if not isinstance(alg, str) or alg not in ALGORITHMS:
        raise Unauthenticated("token alg is not allowed", code="TOKEN_INVALID")
    if not isinstance(kid, str) or not kid:
        raise Unauthenticated("token names no key", code="TOKEN_INVALID")
    return alg, kid


def _is_number(value: object) -> bool:
    """A finite number that is not a bool; an integer too large for a float (which a
    signed token could carry) is not a time either."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
