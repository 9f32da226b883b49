"""Versions (issue 27 items 1 and 2) on the related profiles: an expired document's span
stays gone and a document created again in its place has only its own versions
(soorma-coala-v1's day-long working memory), a shared document reads the same through
every user's path, and a caller who does not see every sensitivity class reads no
version, as no history (a2p-v1). Both backends and transports."""

from __future__ import annotations

from urllib.parse import quote

from memnet.bootstrap import Services
from memnet.domain.audit_records import change_time
from memnet.domain.layout import SHARED_OWNER, user_prefix
from memnet.domain.timestamps import format_millis
from tests.clients import ApiClient, Reply
from tests.related.conftest import A2P_USER_KEY, World
from tests.related.test_sensitivity import MEMORIES, seed
from tests.related.test_shared import SHARED, add, url
from tests.related.test_short_lived import DAY, USER, set_state

WORKING = f"{USER}/documents/working/plan-1.json"


def as_of(client: ApiClient, where: str, at: str) -> Reply:
    return client.request("GET", f"{where}?as_of={quote(at)}")


def refused(reply: Reply, status: int, code: str) -> None:
    assert (reply.status, reply.error_code) == (status, code), reply.data


def test_an_expired_span_stays_gone_and_a_new_document_has_its_own_versions(
    soorma: ApiClient, related: World
):
    old = set_state(soorma, "plan-1", "old", "secret plan").data["document"]
    assert as_of(soorma, WORKING, old["change_id"]).data["document"] == old
    related.clock.advance(DAY)
    refused(as_of(soorma, WORKING, old["change_id"]), 404, "DOCUMENT_NOT_FOUND")
    new = set_state(soorma, "plan-1", "new", "fresh").data["document"]
    refused(as_of(soorma, WORKING, old["change_id"]), 404, "CHANGE_NOT_FOUND")
    refused(
        soorma.request("GET", f"{WORKING}:diff?from={old['change_id']}"), 404, "CHANGE_NOT_FOUND"
    )
    in_old_span = format_millis(change_time(old["change_id"]))
    refused(as_of(soorma, WORKING, in_old_span), 404, "DOCUMENT_NOT_FOUND")
    assert as_of(soorma, WORKING, new["change_id"]).data["document"] == new
    now = format_millis(related.clock.now())
    assert as_of(soorma, WORKING, now).data["document"] == new


def test_a_shared_document_has_one_set_of_versions_for_every_user(
    soorma: ApiClient, related: World
):
    first = add(soorma, "u1", SHARED, "Refunds take 5 days.", "k1").data["document"]
    second = add(soorma, "u2", SHARED, "Billing runs on the 1st.", "k2").data["document"]
    for user in ("u1", "u2"):
        assert as_of(soorma, url(user, SHARED), first["change_id"]).data["document"] == first
        ops = soorma.request("GET", f"{url(user, SHARED)}:diff?from={first['change_id']}")
        assert ops.data["to"] == second["change_id"] and len(ops.data["ops"]) == 1
    services: Services = related.services
    assert list(services.blobs.list_names(user_prefix("t1", "u1") + "versions/")) == []
    assert list(services.blobs.list_names(user_prefix("t1", SHARED_OWNER) + "versions/"))


def test_a_caller_who_does_not_see_every_class_reads_no_version(a2p: ApiClient):
    user = a2p.as_key(A2P_USER_KEY)
    change_id = seed(user).data["document"]["change_id"]
    refused(as_of(a2p, MEMORIES, change_id), 403, "CLEARANCE_REQUIRED")
    refused(a2p.request("GET", f"{MEMORIES}:diff?from={change_id}"), 403, "CLEARANCE_REQUIRED")
    assert as_of(user, MEMORIES, change_id).status == 200
    assert user.request("GET", f"{MEMORIES}:diff?from={change_id}").data["ops"] == []
