"""What stays gone stays gone (issue 27 item 1; docs/decisions.md "Versions of a
document"): a version older than the audit horizon answers 410 ``HISTORY_TRUNCATED``,
one older than a conversation's retraction 410 ``HISTORY_FORGOTTEN``, and the version
cache under the user's ``versions/`` goes with what it copies: retention and a
conversation forget drop it, a forget of the user deletes it; nothing that lists a
user's blobs mistakes it for data of its own kind. On the storage backends."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import user_prefix
from memnet.ports import BlobInfo
from memnet.services.forget.user import kind_of
from memnet.services.governance.retention import classify
from tests.api.forgetting import build, drain_forget
from tests.api.test_documents import PREF, create, patch
from tests.api.test_forget_conversation import C1, C2, fact, forget_conversation
from tests.api.test_retention import Start, start  # noqa: F401 (a fixture)
from tests.api.test_versions import as_of, written
from tests.clients import ApiClient, DirectClient
from tests.conftest import AGENT_KEY, PRIVACY_KEY, STORAGE_BACKENDS, doc_url

CACHE = user_prefix("t1", "u1") + "versions/"


@pytest.fixture(params=STORAGE_BACKENDS)
def services(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Services]:
    yield build(request, tmp_path / "data")
    bootstrap.install(None)


def cached(services: Services) -> list[str]:
    return list(services.blobs.list_names(CACHE))


def read_all(client: ApiClient, versions: list[tuple[str, dict]]) -> None:
    for change_id, document in versions:
        reply = as_of(client, change_id)
        assert reply.status == 200, reply.data
        assert reply.data["document"] == document


def gone(reply, code: str) -> None:  # type: ignore[no-untyped-def]
    assert (reply.status, reply.data["error"]["code"]) == (410, code), reply.data


def test_versions_past_the_audit_horizon_are_truncated_and_their_cache_dropped(
    start: Start,  # noqa: F811
) -> None:
    world = start()
    client = world.client
    versions = written(client, 20)
    read_all(client, versions)
    assert any(name.startswith(CACHE + "chg_") for name in world.names("versions/"))
    world.at_day(400)
    assert world.sweep()["counts"]["audit"] == {"deleted": 21}
    assert world.names("versions/") == []  # dropped with the records it copied
    for change_id, _ in (versions[0], versions[-1]):
        gone(as_of(client, change_id), "HISTORY_TRUNCATED")
    diff = client.request("GET", f"{doc_url()}:diff?from={versions[3][0]}")
    gone(diff, "HISTORY_TRUNCATED")
    etag = client.request("GET", doc_url()).data["etag"]
    late = []  # two changes on a removed version before any read: the first, a patch of
    for key in ("late-1", "late-2"):  # what retention removed, cannot be rebuilt
        op = {"op": "add", "path": PREF, "value": {"text": key}}
        reply = patch(client, etag, [op], key)
        assert reply.status == 200, reply.data
        etag = reply.data["etag"]
        late.append((reply.data["document"]["change_id"], reply.data["document"]))
    read_all(client, late[1:])  # the head reads (and anchors the index)
    gone(as_of(client, late[0][0]), "HISTORY_TRUNCATED")
    reply = patch(client, etag, [{"op": "remove", "path": "/content/preferences/0"}], "later")
    later = (reply.data["document"]["change_id"], reply.data["document"])
    read_all(client, [*late[1:], later])  # and every version after it
    ops = client.request("GET", f"{doc_url()}:diff?from={late[1][0]}").data["ops"]
    assert ops == [{"op": "remove", "path": "/content/preferences/0"}]
    gone(as_of(client, versions[-1][0]), "HISTORY_TRUNCATED")
    gone(as_of(client, "2000-01-01T00:00:00Z"), "HISTORY_TRUNCATED")  # an instant too


def test_versions_before_a_conversations_retraction_stay_forgotten(services: Services) -> None:
    agent = DirectClient(AGENT_KEY)
    ops = [
        {"op": "add", "path": "/content/durable_facts/-", "value": f}
        for f in (fact("Likes tea", C1), fact("Lives in Porto", C2))
    ]
    made = create(agent, doc_url(), ops, "facts", confidence=0.9, evidence={"message_ids": ["m"]})
    before = [(made.data["document"]["change_id"], made.data["document"])]
    etag = made.data["etag"]
    for i in range(CHECKPOINTS := 17):
        reply = patch(agent, etag, [{"op": "add", "path": PREF, "value": {"text": f"{i}"}}], f"{i}")
        etag = reply.data["etag"]
        before.append((reply.data["document"]["change_id"], reply.data["document"]))
    assert CHECKPOINTS >= 16
    read_all(agent, before)
    assert cached(services)
    forget_conversation(agent, services, "conv-1")
    assert cached(services) == []  # the retraction dropped the copies of what it removed
    for change_id, _ in before[::4] + before[-1:]:
        gone(as_of(agent, change_id), "HISTORY_FORGOTTEN")
    gone(agent.request("GET", f"{doc_url()}:diff?from={before[0][0]}"), "HISTORY_FORGOTTEN")
    current = agent.request("GET", doc_url()).data
    retracted = current["document"]["change_id"]
    reply = as_of(agent, retracted)
    assert reply.status == 200 and "Likes tea" not in str(reply.data), reply.data
    after = patch(
        agent, current["etag"], [{"op": "add", "path": PREF, "value": {"text": "x"}}], "x"
    )
    newest = after.data["document"]
    read_all(agent, [(retracted, current["document"]), (newest["change_id"], newest)])
    ops = agent.request("GET", f"{doc_url()}:diff?from={retracted}").data["ops"]
    assert ops == [{"op": "add", "path": "/content/preferences/17", "value": {"text": "x"}}]


def test_forgetting_the_user_deletes_the_cache_with_everything_else(services: Services) -> None:
    agent = DirectClient(AGENT_KEY)
    read_all(agent, written(agent, 20))
    assert cached(services)
    assert agent.as_key(PRIVACY_KEY).request("DELETE", "/v1/tenants/t1/users/u1").status == 202
    drain_forget(services)
    assert list(services.blobs.list_names(user_prefix("t1", "u1"))) == []


def test_what_lists_a_users_blobs_leaves_the_cache_alone(services: Services) -> None:
    """Retention classifies only its kinds (the cache is dropped with the audit records,
    never swept on its own age); a forget counts it as ``other`` (deleted, never held);
    and the namespace listing reads ``documents/`` only."""
    agent = DirectClient(AGENT_KEY)
    read_all(agent, written(agent, 20))
    names = cached(services)
    assert any("/index/" in n for n in names) and any(n.endswith(".json") for n in names)
    for name in names:
        assert classify(BlobInfo(name, datetime.now(UTC))) is None
        assert kind_of(name[len(user_prefix("t1", "u1")) :]) == "other"
    listed = agent.request("GET", doc_url("user/")).data["documents"]
    assert [d["path"] for d in listed] == ["user_dynamic.json"]
