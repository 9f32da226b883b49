"""Storage reads of one assembly do not grow with the number of projects (issue 3)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.ports import Blob, Condition
from memnet.services.context.assembly import ContextService
from tests.clients import DirectClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, doc_url, make_settings

URL = "/v1/tenants/t1/users/u1/context:assemble"


class CountingBlobStore:
    def __init__(self, inner: FileBlobStore) -> None:
        self.inner, self.reads = inner, 0

    def read(self, name: str, *, max_bytes: int | None = None) -> Blob:
        self.reads += 1
        return self.inner.read(name, max_bytes=max_bytes)

    def read_if_changed(self, name: str, etag: str) -> Blob | None:
        self.reads += 1
        return self.inner.read_if_changed(name, etag)

    def write(self, name: str, data: bytes, condition: Condition) -> str:
        return self.inner.write(name, data, condition)

    def delete(self, name: str, condition: Condition = Condition()) -> None:
        self.inner.delete(name, condition)

    def list_names(self, prefix: str) -> Iterator[str]:
        return self.inner.list_names(prefix)

    def describe(self) -> str:
        return "counting " + self.inner.describe()


def user_with(tmp_path: Path, projects: int) -> CountingBlobStore:
    settings = make_settings(tmp_path / f"data-{projects}")
    store = CountingBlobStore(FileBlobStore(settings.data_dir))
    bootstrap.install(bootstrap.build(settings, blobs=store))
    admin = DirectClient(ADMIN_KEY)
    index = [
        {"project_id": f"p{i}", "name": f"Project {i}", "keywords": ["shared"]}
        for i in range(projects)
    ]
    content = {
        "preferences": [],
        "durable_facts": [],
        "pending_confirmations": [],
        "projects_index": index,
    }
    created = admin.request(
        "PUT", doc_url(), {"content": content}, {"If-None-Match": "*", "Idempotency-Key": "k"}
    )
    assert created.status == 201, created.data
    for i in range(min(projects, 6)):
        admin.request(
            "PUT",
            doc_url(f"projects/p{i}.json"),
            {"content": {"summary": f"topic{i}", "facets": {}, "recent_notes": []}},
            {"If-None-Match": "*", "Idempotency-Key": f"p{i}"},
        )
    return store


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    yield
    bootstrap.install(None)


def reads_for(store: CountingBlobStore, hint: str) -> int:
    before = store.reads
    reply = DirectClient(AGENT_KEY).request("POST", URL, {"conversation_hint": {"text": hint}})
    assert reply.status == 200, reply.data
    return store.reads - before


@pytest.mark.parametrize("hint", ["project 3 please", "nothing relevant", "shared topic2"])
def test_reads_do_not_grow_with_the_number_of_projects(tmp_path: Path, hint: str):
    small = reads_for(user_with(tmp_path, 10), hint)
    large = reads_for(user_with(tmp_path, 150), hint)
    assert small == large


def test_reads_are_the_routing_document_plus_what_is_returned(tmp_path: Path):
    store = user_with(tmp_path, 50)
    # user_static (missing), user_dynamic (also the routing document), project p3
    assert reads_for(store, "project 3") == 3


def test_ambiguous_routing_reads_at_most_the_capped_candidates(tmp_path: Path):
    store = user_with(tmp_path, 50)
    # a keyword all 50 share: 5 candidates (max_semantic_candidates) decide, no project wins
    assert reads_for(store, "shared") <= 2 + 5


def routing_profile(tmp_path: Path) -> Path:
    """The starter profile with a separate routing document that is never returned."""
    import json
    import shutil

    from tests.conftest import REPO

    target = tmp_path / "profiles"
    shutil.copytree(REPO / "profiles", target)
    path = target / "project-copilot-v1.json"
    raw = json.loads(path.read_text())
    raw["document_bindings"].append(
        {
            "binding_id": "routing",
            "namespace": "routing",
            "path": "projects.json",
            "schema_id": "memory.user.dynamic",
            "schema_version": "1.0.0",
            "max_chars": 100000,
            "read_priority": 99,
            "write_mode": "read_only",
            "in_context": False,
            "initial_content": {
                "preferences": [],
                "durable_facts": [],
                "pending_confirmations": [],
                "projects_index": [],
            },
        }
    )
    raw["context_rules"]["routing"]["index_binding"] = "routing"
    path.write_text(json.dumps(raw))
    return target


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def install(tmp_path: Path, **context: Any) -> CountingBlobStore:
    """The service on a counting store, the routing document separate, ``context`` passed
    to :class:`ContextService`."""
    settings = make_settings(tmp_path / "data", profiles_dir=routing_profile(tmp_path))
    store = CountingBlobStore(FileBlobStore(settings.data_dir))
    services = bootstrap.build(settings, blobs=store)
    service = ContextService(store, services.registry, **context)
    bootstrap.install(dataclasses.replace(services, context=service))
    return store


def put_index(entries: list[dict[str, Any]], precondition: dict[str, str]) -> str:
    content = {
        "preferences": [],
        "durable_facts": [],
        "pending_confirmations": [],
        "projects_index": entries,
    }
    reply = DirectClient(ADMIN_KEY).request(
        "PUT",
        doc_url("routing/projects.json"),
        {"content": content},
        {**precondition, "Idempotency-Key": uuid.uuid4().hex},
    )
    assert reply.status in (200, 201), reply.data
    return str(reply.data["etag"])


def put_project(project_id: str, summary: str, precondition: dict[str, str]) -> str:
    reply = DirectClient(ADMIN_KEY).request(
        "PUT",
        doc_url(f"projects/{project_id}.json"),
        {"content": {"summary": summary, "facets": {}, "recent_notes": []}},
        {**precondition, "Idempotency-Key": uuid.uuid4().hex},
    )
    assert reply.status in (200, 201), reply.data
    return str(reply.data["etag"])


def assemble(hint: str) -> dict[str, Any]:
    reply = DirectClient(AGENT_KEY).request("POST", URL, {"conversation_hint": {"text": hint}})
    assert reply.status == 200, reply.data
    return dict(reply.data)


def counted(store: CountingBlobStore, hint: str) -> tuple[dict[str, Any], int]:
    store.reads = 0
    return assemble(hint), store.reads


def test_with_the_index_ttl_off_every_assembly_confirms_the_routing_index(tmp_path: Path):
    store = install(tmp_path, index_ttl=0)
    etag = put_index([{"project_id": "alpha"}], {"If-None-Match": "*"})
    assert assemble("alpha")["selected_project_id"] == "alpha"
    reply, reads = counted(store, "alpha")
    assert reply["selected_project_id"] == "alpha"
    assert "routing" in [d["binding_id"] for d in reply["dropped_bindings"]]
    assert reads == 4  # conditional routing read + user_static, user_dynamic, alpha
    put_index([{"project_id": "alpha"}, {"project_id": "gamma"}], {"If-Match": etag})
    assert assemble("gamma")["selected_project_id"] == "gamma"


def test_within_the_index_ttl_the_index_is_trusted_but_a_miss_asks_storage(tmp_path: Path):
    clock = Clock()
    store = install(tmp_path, index_ttl=5, monotonic=clock)
    etag = put_index([{"project_id": "alpha"}], {"If-None-Match": "*"})
    assemble("alpha")
    assert counted(store, "alpha")[1] == 3  # user_static, user_dynamic, alpha
    put_index([{"project_id": "alpha"}, {"project_id": "gamma"}], {"If-Match": etag})
    # nothing in the trusted index matches "gamma": storage is asked, gamma is found
    assert assemble("gamma")["selected_project_id"] == "gamma"
    clock.now += 5
    assert counted(store, "alpha")[1] == 4  # the TTL is over: a conditional read again


def test_a_new_project_that_competes_with_a_known_one_waits_for_the_index_ttl(
    tmp_path: Path,
):
    """The documented price of the index TTL."""
    clock = Clock()
    install(tmp_path, index_ttl=5, monotonic=clock)
    etag = put_index([{"project_id": "alpha", "keywords": ["search"]}], {"If-None-Match": "*"})
    assert assemble("alpha search")["selected_project_id"] == "alpha"
    put_index(
        [{"project_id": "alpha", "keywords": ["search"]}, {"project_id": "alpha-search"}],
        {"If-Match": etag},
    )
    assert assemble("alpha search")["selected_project_id"] == "alpha"
    clock.now += 5
    assert assemble("alpha search")["selected_project_id"] == "alpha-search"


def tie_user() -> dict[str, str]:
    put_index(
        [
            {"project_id": "p1", "keywords": ["shared"]},
            {"project_id": "p2", "keywords": ["shared"]},
        ],
        {"If-None-Match": "*"},
    )
    return {
        "p1": put_project("p1", "kafka consumers", {"If-None-Match": "*"}),
        "p2": put_project("p2", "grafana boards", {"If-None-Match": "*"}),
    }


def test_tie_break_reads_no_candidate_within_the_semantic_ttl(tmp_path: Path):
    clock = Clock()
    store = install(tmp_path, index_ttl=0, semantic_ttl=30, monotonic=clock)
    tie_user()
    first, cold = counted(store, "shared kafka lag")
    assert first["selected_project_id"] == "p1"
    again, warm = counted(store, "shared kafka lag")
    assert again["selected_project_id"] == "p1"
    assert (cold, warm) == (5, 4)  # routing, user_static, user_dynamic, p1 (+ p2 when cold)
    clock.now += 30
    assert counted(store, "shared kafka lag")[1] == 5


def test_a_document_chosen_with_a_cached_text_is_returned_as_it_is_now(tmp_path: Path):
    clock = Clock()
    install(tmp_path, semantic_ttl=30, monotonic=clock)
    etags = tie_user()
    assert assemble("shared kafka lag")["selected_project_id"] == "p1"
    etag = put_project("p1", "kafka consumers, now with tracing", {"If-Match": etags["p1"]})
    reply = assemble("shared kafka lag")
    returned = {d["binding_id"]: d for d in reply["documents"]}["project_doc"]
    assert returned["etag"] == etag
    assert returned["document"]["content"]["summary"] == "kafka consumers, now with tracing"


def test_semantic_texts_follow_the_documents_once_the_ttl_is_over(tmp_path: Path):
    clock = Clock()
    install(tmp_path, semantic_ttl=30, monotonic=clock)
    etags = tie_user()
    assert assemble("shared grafana")["selected_project_id"] == "p2"
    put_project("p1", "grafana dashboards for kafka", {"If-Match": etags["p1"]})
    put_project("p2", "billing exports", {"If-Match": etags["p2"]})
    assert assemble("shared grafana")["selected_project_id"] == "p2"  # texts within TTL
    clock.now += 30
    assert assemble("shared grafana")["selected_project_id"] == "p1"


@pytest.mark.parametrize("hint", ["shared kafka lag", "p2 please", "nothing at all"])
def test_concurrent_reads_assemble_the_same_context(tmp_path: Path, hint: str):
    install(tmp_path, concurrent_reads_above=0.0)  # the pool from the first read on
    tie_user()
    inline_service = bootstrap.services()
    concurrent = assemble(hint)
    replaced = ContextService(inline_service.blobs, inline_service.registry, read_workers=0)
    bootstrap.install(dataclasses.replace(inline_service, context=replaced))
    assert assemble(hint) == concurrent
