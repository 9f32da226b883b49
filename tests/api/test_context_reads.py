"""Storage reads of one assembly do not grow with the number of projects (issue 3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memnet import bootstrap
from memnet.adapters.local.blobstore import FileBlobStore
from memnet.ports import Blob, Condition
from tests.clients import DirectClient
from tests.conftest import ADMIN_KEY, AGENT_KEY, doc_url, make_settings

URL = "/v1/tenants/t1/users/u1/context:assemble"


class CountingBlobStore:
    def __init__(self, inner: FileBlobStore) -> None:
        self.inner, self.reads = inner, 0

    def read(self, name: str) -> Blob:
        self.reads += 1
        return self.inner.read(name)

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


def test_unchanged_routing_index_is_reused_and_a_changed_one_is_reread(tmp_path: Path):
    settings = make_settings(tmp_path / "data", profiles_dir=routing_profile(tmp_path))
    store = CountingBlobStore(FileBlobStore(settings.data_dir))
    bootstrap.install(bootstrap.build(settings, blobs=store))
    admin = DirectClient(ADMIN_KEY)

    def index(projects: list[str], precondition: dict[str, str]) -> str:
        content = {
            "preferences": [],
            "durable_facts": [],
            "pending_confirmations": [],
            "projects_index": [{"project_id": p} for p in projects],
        }
        reply = admin.request(
            "PUT",
            doc_url("routing/projects.json"),
            {"content": content},
            {**precondition, "Idempotency-Key": "-".join(projects)},
        )
        return str(reply.data["etag"])

    etag = index(["alpha"], {"If-None-Match": "*"})
    assert (
        DirectClient(AGENT_KEY)
        .request("POST", URL, {"conversation_hint": {"text": "alpha"}})
        .data["selected_project_id"]
        == "alpha"
    )
    store.reads = 0
    reply = DirectClient(AGENT_KEY).request("POST", URL, {"conversation_hint": {"text": "alpha"}})
    assert reply.data["selected_project_id"] == "alpha"
    assert "routing" in [d["binding_id"] for d in reply.data["dropped_bindings"]]
    assert store.reads == 4  # conditional routing read + user_static, user_dynamic, alpha
    index(["alpha", "gamma"], {"If-Match": etag})
    reply = DirectClient(AGENT_KEY).request("POST", URL, {"conversation_hint": {"text": "gamma"}})
    assert reply.data["selected_project_id"] == "gamma"
