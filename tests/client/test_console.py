"""``me()`` and ``get_profile()`` (issue 28) against the real local server: the JSON the
routes answer, the client's exceptions for their refusals, and ids refused before any
I/O."""

from __future__ import annotations

import json

import pytest
from memnet_client import (
    BadRequest,
    Forbidden,
    InvalidIdentifier,
    MemnetClient,
    NotFound,
    Unauthorized,
)

from memnet.bootstrap import Services
from tests.api.test_console_routes import AGENT_ME
from tests.client.conftest import Recording, connect
from tests.conftest import REPO, STARTER


def test_me_is_the_callers_grant(memnet: MemnetClient, admin: MemnetClient):
    assert memnet.me() == AGENT_ME
    assert admin.me()["profiles"] == [STARTER]  # "*": every loaded profile


def test_get_profile_answers_the_profile_as_configured(memnet: MemnetClient, admin: MemnetClient):
    found = memnet.get_profile(STARTER)
    configured = json.loads((REPO / "profiles" / f"{STARTER}.json").read_text())
    assert (found["profile_id"], found["profile"]) == (STARTER, configured)
    assert set(found["schemas"]) == {b["schema_id"] for b in configured["document_bindings"]}
    assert admin.get_profile() == found  # the client's own profile by default


def test_the_refusals_are_the_clients_exceptions(
    memnet: MemnetClient, admin: MemnetClient, privacy: MemnetClient
):
    with pytest.raises(Forbidden) as role:
        privacy.get_profile(STARTER)
    assert role.value.code == "ROLE_FORBIDDEN"
    with pytest.raises(Forbidden) as other:
        memnet.get_profile("nope-v1")  # not the agent's: 403, known or not
    assert other.value.code == "PROFILE_FORBIDDEN"
    with pytest.raises(NotFound) as unknown:
        admin.get_profile("nope-v1")
    assert unknown.value.code == "PROFILE_NOT_FOUND"
    with pytest.raises(BadRequest) as bad:
        admin.get_profile("a b")
    assert bad.value.code == "INVALID_IDENTIFIER"


def test_without_a_valid_key_both_are_unauthorized(http_server: str, services: Services):
    with connect(http_server, "not-a-key") as stranger:
        with pytest.raises(Unauthorized):
            stranger.me()
        with pytest.raises(Unauthorized):
            stranger.get_profile(STARTER)


@pytest.mark.parametrize("bad", ["", ".", ".."])
def test_a_dot_segment_id_is_refused_before_anything_is_sent(
    http_server: str, services: Services, bad: str
):
    transport = Recording()
    with connect(http_server, "dev-admin-key", transport=transport) as client:
        with pytest.raises(InvalidIdentifier):
            client.get_profile(bad)
        with pytest.raises(ValueError, match="no profile"):
            client.get_profile()  # no profile_id and none on the client
    assert transport.sent == []
