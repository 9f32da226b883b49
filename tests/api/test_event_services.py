"""Who an event says it is from (issue 8): ``recorded_by`` is the authenticated caller,
set by the server; ``service_id`` may only name a service the caller may act as (its own
id, one in its ``services`` list, any with ``"*"`` or the admin role), otherwise 403
``SERVICE_FORBIDDEN``. Directly and over HTTP."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.apikeys import hash_key
from memnet.bootstrap import Services
from memnet.domain.errors import ConfigError
from tests.api.test_events import BASE, event, ids, post, search
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import make_settings


def caller(caller_id: str, roles: list[str], **extra: object) -> dict[str, object]:
    return {
        "caller_id": caller_id,
        "key_sha256": hash_key(f"{caller_id}-key"),
        "tenants": ["t1"],
        "profiles": ["*"],
        "roles": roles,
        **extra,
    }


CALLERS = [
    caller("solo", ["read", "write"]),  # no services: only its own id
    caller("scribe", ["read", "write"], services=["assistant-a"]),
    caller("relay", ["read", "write"], services=["*"]),
    caller("boss", ["read", "write", "admin"]),
]


@pytest.fixture(params=["direct", "http"])
def as_caller(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[str], ApiClient]]:
    """A client for a caller of :data:`CALLERS`, by caller id, through each transport."""
    path = tmp_path / "callers.json"
    path.write_text(json.dumps({"callers": CALLERS}))
    bootstrap.install(bootstrap.build(make_settings(tmp_path / "data", callers_file=path)))
    if request.param == "direct":
        yield lambda caller_id: DirectClient(f"{caller_id}-key")
    else:
        url = request.getfixturevalue("http_server")
        yield lambda caller_id: HttpClient(url, f"{caller_id}-key")
    bootstrap.install(None)


@pytest.mark.parametrize(
    ("caller_id", "service_id"),
    [
        ("solo", "solo"),
        ("scribe", "assistant-a"),
        ("scribe", "scribe"),
        ("relay", "anything-else"),
        ("boss", "assistant-b"),
    ],
)
def test_a_caller_records_events_as_a_service_it_may_act_as(
    as_caller: Callable[[str], ApiClient], caller_id: str, service_id: str
):
    reply = post(as_caller(caller_id), event(service_id=service_id), "k1")
    assert reply.status == 201, reply.data
    stored = reply.data["event"]
    assert (stored["service_id"], stored["recorded_by"]) == (service_id, caller_id)


@pytest.mark.parametrize(("caller_id", "service_id"), [("solo", "assistant-a"), ("scribe", "x")])
def test_a_service_the_caller_may_not_act_as_is_403_and_stores_nothing(
    as_caller: Callable[[str], ApiClient], caller_id: str, service_id: str
):
    client = as_caller(caller_id)
    reply = post(client, event(service_id=service_id), "k1")
    assert (reply.status, reply.error_code) == (403, "SERVICE_FORBIDDEN"), reply.data
    assert reply.data["error"]["details"] == {"service_id": service_id}
    assert ids(search(client)) == []
    assert post(client, event(service_id=...), "k1").status == 201  # the key is free


def test_service_id_defaults_to_the_caller(as_caller: Callable[[str], ApiClient]):
    stored = post(as_caller("solo"), event(service_id=...), "k1").data["event"]
    assert stored["service_id"] == stored["recorded_by"] == "solo"


def test_recorded_by_is_the_caller_and_cannot_be_claimed(client: ApiClient, services: Services):
    reply = post(client, event(recorded_by="dev-admin"), "k1")
    assert (reply.status, reply.data["error"]["details"]) == (400, {"field": "recorded_by"})
    stored = post(client, event(), "k2").data["event"]
    assert stored["recorded_by"] == "dev-agent"
    assert client.request("GET", f"{BASE}/events/{stored['event_id']}").data == stored


@pytest.mark.parametrize("services", ["assistant-a", ["bad id"], [5], {"a": 1}])
def test_a_bad_services_list_stops_startup_naming_the_field(tmp_path: Path, services: object):
    path = tmp_path / "callers.json"
    path.write_text(json.dumps({"callers": [caller("solo", ["write"], services=services)]}))
    with pytest.raises(ConfigError) as caught:
        bootstrap.build(make_settings(tmp_path, callers_file=path))
    assert caught.value.field == "/callers/0/services"
