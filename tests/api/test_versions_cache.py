"""The version cache is derived and safe to lose (issue 27 item 1; memnet/services/
documents/versions.py): reads answer the same when it is deleted between them, in part
or whole, and when several readers build it at once; a change id of another tenant,
user or document is never a version of this one."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from memnet.bootstrap import Services
from memnet.domain.layout import user_prefix
from tests.api.test_documents import create
from tests.api.test_versions import as_of, written
from tests.clients import ApiClient
from tests.conftest import doc_url

CACHE = user_prefix("t1", "u1") + "versions/"


def drop(services: Services, which: str = "") -> int:
    names = [n for n in services.blobs.list_names(CACHE) if which in n]
    for name in names:
        services.blobs.delete(name)
    return len(names)


def check(client: ApiClient, versions: list[tuple[str, dict]]) -> None:
    for change_id, document in versions:
        reply = as_of(client, change_id)
        assert reply.status == 200, reply.data
        assert (reply.data["change_id"], reply.data["document"]) == (change_id, document)


def test_reads_answer_the_same_when_the_cache_is_lost_between_them(
    client: ApiClient, services: Services
):
    versions = written(client, 40)
    check(client, versions[::-3])
    assert drop(services, "/index/") == 1  # the index alone: checkpoints stay, unlisted
    check(client, versions[::5])
    assert drop(services, "/chg_") >= 2  # the checkpoints alone: the index names them
    check(client, versions[1::4])
    assert drop(services) >= 2  # everything
    check(client, versions)


def test_readers_building_the_cache_at_once_all_read_right(client: ApiClient, services: Services):
    versions = written(client, 3 * 16 + 5)
    start = threading.Barrier(6)

    def read(offset: int) -> None:
        start.wait()  # all begin on an empty cache
        check(client, versions[offset::6][::-1])

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(read, range(6)))
    drop(services)
    with ThreadPoolExecutor(6) as pool:  # and again, each reading everything
        list(pool.map(lambda _: check(client, versions[::-1]), range(6)))
    check(client, versions)


def test_another_tenants_or_users_change_id_is_not_a_version(client: ApiClient):
    written(client, 2)
    for url in (doc_url(tenant="t2"), doc_url(user="u2"), doc_url("projects/x.json")):
        theirs = create(client, url, [], "theirs").data["document"]["change_id"]
        for reply in (
            as_of(client, theirs),
            client.request("GET", f"{doc_url()}:diff?from={theirs}"),
            client.request("GET", f"{url}:diff?from={written_head(client)}"),
        ):
            assert (reply.status, reply.data["error"]["code"]) == (404, "CHANGE_NOT_FOUND")


def written_head(client: ApiClient) -> str:
    return str(client.request("GET", doc_url()).data["document"]["change_id"])
