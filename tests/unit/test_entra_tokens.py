"""JwtVerifier against a local Entra (tests/oidc.py) over real HTTP on 127.0.0.1: valid
tokens verify, hostile ones are refused with their codes, keys rotate, refetches are rate
limited, and an unreachable Entra is a 503 rather than a 401 (issue 12)."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from memnet.adapters.azure.entra import JwtVerifier
from memnet.domain.errors import ConfigError, Unauthenticated, Unavailable
from tests.oidc import HOSTILE_CODES, LocalEntra, hostile_tokens

INTERVAL = 60.0


class FakeClock:
    """Real time until advanced; shared by the verifier and the LocalEntra that mints."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def entra(clock: FakeClock) -> Iterator[LocalEntra]:
    with LocalEntra(clock) as local:
        yield local


@pytest.fixture
def verifier(entra: LocalEntra, clock: FakeClock) -> JwtVerifier:
    return JwtVerifier(
        entra.metadata_url, [entra.audience], refetch_interval_seconds=INTERVAL, clock=clock
    )


def refusal(verifier: JwtVerifier, token: str) -> Unauthenticated:
    with pytest.raises(Unauthenticated) as caught:
        verifier.verify(token)
    assert token not in caught.value.message
    return caught.value


def test_a_valid_token_verifies_and_returns_its_claims(entra, verifier):
    claims = verifier.verify(entra.mint({"scp": "memory.read"}))
    assert claims["tid"] == entra.tenant_id
    assert claims["aud"] == entra.audience
    assert claims["iss"] == entra.issuer
    assert claims["roles"] == ["Memory.ReadWrite"]
    assert claims["scp"] == "memory.read"
    assert (entra.metadata_requests, entra.jwks_requests) == (1, 1)


@pytest.mark.parametrize("alg", ["RS384", "RS512"])
def test_the_other_rsa_algorithms_verify(entra, verifier, alg):
    assert verifier.verify(entra.mint(alg=alg))["ver"] == "2.0"


@pytest.mark.parametrize("name", sorted(HOSTILE_CODES))
def test_a_hostile_token_is_refused_with_its_code(entra, verifier, name):
    token = hostile_tokens(entra)[name]
    assert refusal(verifier, token).code == HOSTILE_CODES[name]


@pytest.mark.parametrize("name", ["tampered", "foreign_key_known_kid"])
def test_a_forged_signature_is_what_refuses_a_forgery(entra, verifier, name):
    assert "InvalidSignatureError" in refusal(verifier, hostile_tokens(entra)[name]).message


def test_hostile_tokens_cover_every_listed_code(entra):
    assert set(hostile_tokens(entra)) == set(HOSTILE_CODES)


def test_the_leeway_accepts_small_skew_and_no_more(entra, verifier, clock):
    token = entra.mint()
    clock.advance(3600 + 30)
    assert verifier.verify(token)
    clock.advance(31)
    assert refusal(verifier, token).code == "TOKEN_EXPIRED"


def test_a_jwk_that_declares_its_alg_refuses_tokens_with_another(entra, verifier):
    key = entra.add_key(alg="RS384")
    assert verifier.verify(entra.mint(kid=key.kid, key=key.private_key, alg="RS384"))
    token = entra.mint(kid=key.kid, key=key.private_key, alg="RS256")
    assert refusal(verifier, token).code == "TOKEN_INVALID"


def test_a_new_key_after_rotation_verifies_after_one_refetch(entra, verifier, clock):
    old = entra.mint()
    verifier.verify(old)
    entra.rotate()
    clock.advance(INTERVAL + 1)
    assert verifier.verify(entra.mint())
    assert entra.jwks_requests == 2
    assert refusal(verifier, old).code == "TOKEN_KEY_UNKNOWN"
    assert entra.jwks_requests == 2


def test_a_spray_of_unknown_kids_fetches_at_most_once_per_interval(entra, verifier, clock):
    verifier.verify(entra.mint())

    def spray() -> None:
        for _ in range(50):
            assert refusal(verifier, entra.mint(kid=uuid.uuid4().hex)).code == "TOKEN_KEY_UNKNOWN"

    spray()
    assert entra.jwks_requests == 1
    clock.advance(INTERVAL + 1)
    spray()
    assert entra.jwks_requests == 2
    clock.advance(INTERVAL / 2)
    spray()
    assert entra.jwks_requests == 2
    clock.advance(INTERVAL / 2)
    spray()
    assert entra.jwks_requests == 3
    assert entra.metadata_requests == 1


def test_keys_older_than_their_max_age_are_refetched(entra, clock):
    verifier = JwtVerifier(entra.metadata_url, [entra.audience], clock=clock)
    verifier.verify(entra.mint())
    clock.advance(86_400 - 1)
    verifier.verify(entra.mint())
    assert entra.jwks_requests == 1
    clock.advance(1)
    verifier.verify(entra.mint())
    assert entra.jwks_requests == 2


def test_stale_keys_stay_in_use_while_the_refresh_fails(entra, clock, caplog):
    verifier = JwtVerifier(entra.metadata_url, [entra.audience], clock=clock)
    verifier.verify(entra.mint())
    entra.available = False
    clock.advance(86_400 + 1)
    token = entra.mint()
    with caplog.at_level(logging.WARNING):
        assert verifier.verify(token)
    assert "cannot refresh" in caplog.text
    assert token not in caplog.text


def test_unreachable_metadata_is_unavailable_and_logged_without_the_token(entra, verifier, caplog):
    entra.available = False
    token = entra.mint()
    with caplog.at_level(logging.WARNING), pytest.raises(Unavailable) as caught:
        verifier.verify(token)
    assert caught.value.retry_after is not None and caught.value.retry_after >= 1
    assert "cannot refresh" in caplog.text
    assert token not in caplog.text + caught.value.message


def test_a_closed_port_is_unavailable(entra):
    url = entra.metadata_url
    entra.stop()
    verifier = JwtVerifier(url, [entra.audience], timeout_seconds=1.0)
    with pytest.raises(Unavailable):
        verifier.verify(entra.mint())


def test_after_a_failed_fetch_the_next_waits_for_the_interval(entra, verifier, clock):
    entra.available = False
    with pytest.raises(Unavailable):
        verifier.verify(entra.mint())
    entra.available = True
    with pytest.raises(Unavailable) as caught:
        verifier.verify(entra.mint())
    assert caught.value.retry_after == int(INTERVAL)
    clock.advance(INTERVAL)
    assert verifier.verify(entra.mint())


@pytest.mark.parametrize(
    "url",
    [
        "http://login.microsoftonline.com/tid/v2.0/.well-known/openid-configuration",
        "http://10.0.0.1/.well-known/openid-configuration",
        "file:///etc/passwd",
        "ftp://127.0.0.1/metadata",
    ],
)
def test_a_metadata_url_that_is_not_https_or_loopback_is_refused(url):
    with pytest.raises(ConfigError):
        JwtVerifier(url, ["api://memnet"])


def test_a_jwks_uri_over_http_to_another_host_is_unavailable(entra, verifier, caplog):
    entra.jwks_uri_override = "http://login.example.com/keys"
    with caplog.at_level(logging.WARNING), pytest.raises(Unavailable):
        verifier.verify(entra.mint())
    assert "refusing to fetch" in caplog.text
    assert entra.jwks_requests == 0


def test_a_redirect_to_plain_http_elsewhere_is_not_followed(entra, verifier, caplog):
    entra.metadata_redirect = "http://login.example.com/metadata"
    with caplog.at_level(logging.WARNING), pytest.raises(Unavailable):
        verifier.verify(entra.mint())
    assert "refusing to fetch" in caplog.text


def test_a_loopback_redirect_is_followed(entra, verifier):
    with LocalEntra() as other:
        entra.metadata_redirect = other.metadata_url
        other.issuer, other.keys = entra.issuer, entra.keys
        assert verifier.verify(entra.mint())


def test_keys_other_than_rsa_signing_keys_are_skipped(entra, verifier):
    entra.extra_jwks_entries = [
        {"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"},
        {"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"},
        {"kty": "RSA", "kid": "broken", "n": "!!", "e": "AQAB"},
        {"kty": "RSA", "n": "AQAB", "e": "AQAB"},
        "not an object",
    ]
    assert verifier.verify(entra.mint())
    assert refusal(verifier, entra.mint(kid="ec", alg="RS256")).code == "TOKEN_KEY_UNKNOWN"


def test_a_jwks_larger_than_the_bound_is_unavailable(entra, verifier, caplog):
    entra.extra_jwks_entries = [{"kty": "oct", "k": "x" * (1024 * 1024)}]
    with caplog.at_level(logging.WARNING), pytest.raises(Unavailable):
        verifier.verify(entra.mint())
    assert "larger than" in caplog.text


def test_an_oversized_token_is_refused_before_any_fetch(entra, verifier):
    token = entra.mint({"padding": "x" * 16_384})
    assert refusal(verifier, token).code == "TOKEN_INVALID"
    assert entra.metadata_requests == 0


def test_no_audience_is_a_config_error(entra):
    with pytest.raises(ConfigError):
        JwtVerifier(entra.metadata_url, [])


def test_describe_names_the_issuer_once_known(entra, verifier):
    assert entra.metadata_url in verifier.describe()
    verifier.verify(entra.mint())
    assert verifier.describe().startswith(f"entra id tokens (issuer {entra.issuer}")


def test_concurrent_verifications_fetch_the_keys_once(entra, verifier):
    tokens = [entra.mint() for _ in range(32)]
    barrier = threading.Barrier(len(tokens))
    verified: list[bool] = []

    def run(token: str) -> None:
        barrier.wait()
        verified.append(bool(verifier.verify(token)))

    threads = [threading.Thread(target=run, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert verified == [True] * len(tokens)
    assert (entra.metadata_requests, entra.jwks_requests) == (1, 1)
