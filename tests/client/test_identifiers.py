"""Ids in paths: ``""``, ``"."`` and ``".."`` (which httpx would remove as dot segments,
addressing another route) are refused before anything is sent; every other character
is percent-encoded, so the server sees exactly the id given."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from memnet_client import BadRequest, InvalidIdentifier, MemnetClient, MemnetError, NotFound

from memnet.bootstrap import Services
from tests.client.conftest import Recording, connect
from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY


@pytest.fixture
def recorded(http_server: str, services: Services) -> Iterator[Callable[[str], Any]]:
    """``recorded(key)``: a client with that key and the transport it sends through."""
    opened: list[MemnetClient] = []

    def open_client(key: str) -> tuple[MemnetClient, Recording]:
        transport = Recording()
        client = connect(http_server, key, transport=transport)
        opened.append(client)
        return client, transport

    yield open_client
    for client in opened:
        client.close()


def test_forget_conversation_dot_dot_is_refused_and_sends_nothing(recorded):
    privacy, transport = recorded(PRIVACY_KEY)
    with pytest.raises(InvalidIdentifier) as caught:
        privacy.forget_conversation("..")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, MemnetError)
    assert caught.value.code == "INVALID_IDENTIFIER"
    assert transport.sent == []
    with pytest.raises(NotFound):  # the user was not forgotten
        privacy.get_forget_status()


def test_clear_legal_hold_for_user_dot_dot_is_refused_and_keeps_the_tenant_hold(recorded):
    admin, transport = recorded(ADMIN_KEY)
    admin.set_legal_hold("litigation 42")
    transport.sent.clear()
    with pytest.raises(InvalidIdentifier):
        admin.clear_legal_hold(user_id="..")
    assert transport.sent == []
    assert admin.list_legal_holds()["tenant"] is not None


@pytest.mark.parametrize("bad", ["", ".", ".."])
@pytest.mark.parametrize(
    "use",
    [
        lambda c, v: c.get_event(v),
        lambda c, v: c.get_forget_conversation_status(v),
        lambda c, v: c.get_receipt(v),
        lambda c, v: c.get_replay(v, "s1"),
        lambda c, v: c.get_replay("c1", v),
        lambda c, v: c.for_user("t1", v).get_event("e1"),
        lambda c, v: c.for_user(v, "u1").get_event("e1"),
        lambda c, v: c.get_document(v, "user_dynamic.json"),
    ],
)
def test_every_id_in_a_path_refuses_dot_segments_before_any_io(recorded, use, bad: str):
    client, transport = recorded(AGENT_KEY)
    with pytest.raises(InvalidIdentifier):
        use(client, bad)
    assert transport.sent == []


@pytest.mark.parametrize("path", ["a/../b", "../../events/x", "a/./b", "a//b", "/a", "a/", ""])
def test_a_document_path_with_a_dot_or_empty_part_is_refused(recorded, path: str):
    client, transport = recorded(AGENT_KEY)
    with pytest.raises(InvalidIdentifier):
        client.get_document("user", path)
    with pytest.raises(InvalidIdentifier):
        client.update("user", path, lambda content: [])
    assert transport.sent == []


@pytest.mark.parametrize("event_id", ["%2e%2e", "a/b", "a?b#c", "%2F"])
def test_reserved_characters_reach_the_server_as_the_id_given(recorded, event_id: str):
    client, transport = recorded(AGENT_KEY)
    with pytest.raises((BadRequest, NotFound)):  # not an id the server has or accepts
        client.get_event(event_id)
    [request] = transport.sent
    sent = request.url.raw_path.decode().rsplit("/events/", 1)[1]
    assert "/" not in sent and httpx.URL("/" + sent).path == "/" + event_id
