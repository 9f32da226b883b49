"""A local Entra ID for tests: an OpenID configuration and JWKS served over real HTTP on
127.0.0.1, RSA keys that can rotate, realistic v2 access tokens, and hostile ones.

Not a test module. Use it as a context manager or with ``start()``/``stop()``::

    with LocalEntra() as entra:
        verifier = JwtVerifier(entra.metadata_url, [entra.audience])
        verifier.verify(entra.mint())
        for name, token in hostile_tokens(entra).items(): ...
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

# What JwtVerifier must answer for each token of hostile_tokens().
HOSTILE_CODES: dict[str, str] = {
    "expired": "TOKEN_EXPIRED",
    "not_yet_valid": "TOKEN_EXPIRED",
    "wrong_audience": "TOKEN_AUDIENCE",
    "wrong_issuer": "TOKEN_ISSUER",
    "unknown_kid": "TOKEN_KEY_UNKNOWN",
    "alg_none": "TOKEN_INVALID",
    "hs256_public_key": "TOKEN_INVALID",
    "ps256": "TOKEN_INVALID",
    "tampered": "TOKEN_INVALID",
    "foreign_key_known_kid": "TOKEN_INVALID",
    "no_exp": "TOKEN_INVALID",
    "no_kid": "TOKEN_INVALID",
    "malformed": "TOKEN_INVALID",
    "bad_base64": "TOKEN_INVALID",
    "header_not_json": "TOKEN_INVALID",
}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64json(value: object) -> str:
    return b64url(json.dumps(value, separators=(",", ":")).encode())


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class SigningKey:
    """One key the local tenant publishes; ``alg`` is the JWK's own ``alg`` (often absent)."""

    kid: str
    private_key: rsa.RSAPrivateKey
    alg: str | None = None

    def jwk(self) -> dict[str, Any]:
        data = RSAAlgorithm.to_jwk(self.private_key.public_key(), as_dict=True)
        assert isinstance(data, dict)
        alg = {"alg": self.alg} if self.alg else {}
        return {**data, "kid": self.kid, "use": "sig", **alg}

    def public_pem(self) -> bytes:
        return self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


class LocalEntra:
    """A tenant's OpenID configuration (``/{tid}/v2.0/.well-known/openid-configuration``) and
    JWKS (``/{tid}/discovery/v2.0/keys``) on an ephemeral port; tokens are minted at
    ``clock()``. Knobs for failure tests: ``available``, ``jwks_uri_override``,
    ``metadata_redirect``, ``extra_jwks_entries``. ``available = False`` makes
    both answer 503."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock  # "now" for minted tokens: tests may share a fake with the verifier
        self.tenant_id = str(uuid.uuid4())
        self.client_id = str(uuid.uuid4())  # the calling app (azp)
        self.audience = f"api://{uuid.uuid4()}"
        self.issuer = f"https://login.microsoftonline.com/{self.tenant_id}/v2.0"
        self.keys: list[SigningKey] = [SigningKey(uuid.uuid4().hex, new_rsa_key())]
        self.available = True
        self.jwks_uri_override: str | None = None
        self.metadata_redirect: str | None = None  # answer the metadata with a 302 to here
        self.extra_jwks_entries: list[dict[str, Any]] = []  # junk or huge entries, as given
        self.jwks_requests = 0
        self.metadata_requests = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- server -------------------------------------------------------------------------

    def start(self) -> LocalEntra:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        serve = self._server.serve_forever
        # A short poll: shutdown() waits for one, and each test starts and stops a server.
        self._thread = threading.Thread(target=serve, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LocalEntra:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the LocalEntra first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/{self.tenant_id}"

    @property
    def metadata_url(self) -> str:
        return f"{self.base_url}/v2.0/.well-known/openid-configuration"

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/discovery/v2.0/keys"

    def metadata(self) -> dict[str, Any]:
        return {
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri_override or self.jwks_url,
            "token_endpoint": f"{self.base_url}/oauth2/v2.0/token",
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [key.jwk() for key in self.keys] + self.extra_jwks_entries}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        entra = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if entra.metadata_redirect and self.path.endswith("openid-configuration"):
                    self.send_response(302)
                    self.send_header("Location", entra.metadata_redirect)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = entra._answer(self.path)
                status = 200 if body is not None else (503 if not entra.available else 404)
                payload = json.dumps(body if body is not None else {"error": status}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: tests read counters, not access logs."""

        return Handler

    def _answer(self, path: str) -> dict[str, Any] | None:
        with self._lock:
            if path.endswith("/discovery/v2.0/keys"):
                self.jwks_requests += 1
                return self.jwks() if self.available else None
            if path.endswith("/.well-known/openid-configuration"):
                self.metadata_requests += 1
                return self.metadata() if self.available else None
        return None

    # -- keys ---------------------------------------------------------------------------

    @property
    def current(self) -> SigningKey:
        return self.keys[-1]

    def add_key(self, alg: str | None = None) -> SigningKey:
        key = SigningKey(uuid.uuid4().hex, new_rsa_key(), alg)
        with self._lock:
            self.keys.append(key)
        return key

    def rotate(self) -> SigningKey:
        """Publish a new key and drop every older one, as Entra does after a rollover."""
        key = self.add_key()
        with self._lock:
            self.keys = [key]
        return key

    # -- tokens -------------------------------------------------------------------------

    def claims(self, **overrides: Any) -> dict[str, Any]:
        """Claims of a v2 app-only access token; an override of ``None`` removes the claim."""
        now = int(self.clock())
        service_principal = str(uuid.uuid4())  # an app-only token: sub equals oid
        base: dict[str, Any] = {
            "aud": self.audience,
            "iss": self.issuer,
            "iat": now,
            "nbf": now,
            "exp": now + 3600,
            "aio": b64url(uuid.uuid4().bytes),
            "azp": self.client_id,
            "azpacr": "2",
            "oid": service_principal,
            "rh": "0.AAAA" + b64url(uuid.uuid4().bytes),
            "roles": ["Memory.ReadWrite"],
            "sub": service_principal,
            "tid": self.tenant_id,
            "uti": b64url(uuid.uuid4().bytes),
            "ver": "2.0",
        }
        merged = {**base, **overrides}
        return {name: value for name, value in merged.items() if value is not None}

    def mint(
        self,
        claims_overrides: dict[str, Any] | None = None,
        *,
        kid: str | None = None,
        alg: str = "RS256",
        key: rsa.RSAPrivateKey | None = None,
    ) -> str:
        """A signed token; by default a valid one from the current key."""
        headers = {"kid": kid or self.current.kid, "typ": "JWT"}
        signer = key or self.current.private_key
        return jwt.encode(self.claims(**(claims_overrides or {})), signer, alg, headers)


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    return f"{b64json(header)}.{b64json(claims)}.{b64url(signature)}"


def hs256_with_public_key(entra: LocalEntra) -> str:
    """The classic confusion attack: HS256 keyed with the RSA public key's PEM (built by hand,
    since PyJWT refuses to HMAC with a PEM)."""
    header = {"alg": "HS256", "typ": "JWT", "kid": entra.current.kid}
    signing_input = f"{b64json(header)}.{b64json(entra.claims())}"
    mac = hmac.new(entra.current.public_pem(), signing_input.encode(), hashlib.sha256)
    return f"{signing_input}.{b64url(mac.digest())}"


def tampered(entra: LocalEntra) -> str:
    """A valid token whose payload is swapped for one granting more, signature kept."""
    header, _, signature = entra.mint().split(".")
    forged = entra.claims(roles=["Memory.Admin"])
    return f"{header}.{b64json(forged)}.{signature}"


def hostile_tokens(entra: LocalEntra) -> dict[str, str]:
    """Name -> token that a verifier for ``entra`` must refuse (codes in HOSTILE_CODES)."""
    now = int(entra.clock())
    stranger = new_rsa_key()
    return dict(_hostile(entra, now, stranger))


def _hostile(entra: LocalEntra, now: int, stranger: rsa.RSAPrivateKey) -> Iterator[tuple[str, str]]:
    yield "expired", entra.mint({"iat": now - 7200, "nbf": now - 7200, "exp": now - 3600})
    yield "not_yet_valid", entra.mint({"iat": now, "nbf": now + 3600, "exp": now + 7200})
    yield "wrong_audience", entra.mint({"aud": f"api://{uuid.uuid4()}"})
    v1_issuer = f"https://sts.windows.net/{entra.tenant_id}/"
    yield "wrong_issuer", entra.mint({"iss": v1_issuer})
    yield "unknown_kid", entra.mint(kid=uuid.uuid4().hex, key=stranger)
    yield "alg_none", unsigned({"alg": "none", "typ": "JWT"}, entra.claims())
    yield "hs256_public_key", hs256_with_public_key(entra)
    yield "ps256", entra.mint(alg="PS256")
    yield "tampered", tampered(entra)
    yield "foreign_key_known_kid", entra.mint(key=stranger)
    yield "no_exp", entra.mint({"exp": None})
    no_kid = unsigned({"alg": "RS256", "typ": "JWT"}, entra.claims(), b"x" * 256)
    yield "no_kid", no_kid
    yield "malformed", "not-a-jwt"
    yield "bad_base64", "e30.%%%.e30"
    yield "header_not_json", f"{b64url(b'not json')}.{b64json(entra.claims())}.AAAA"
