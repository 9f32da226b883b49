"""Upsert with dedupe (issue 15, capability 3; docs/profiles.md "Item identity") on
soorma-coala-v1's semantic knowledge (identity: normalised content) and task sub-tasks
(identity: the normalised string), on both backends and transports."""

from __future__ import annotations

import threading
from typing import Any

from tests.clients import ApiClient, Reply
from tests.related.conftest import World
from tests.related.test_short_lived import USER

KNOWLEDGE = f"{USER}/documents/semantic/knowledge.json"


def learn(client: ApiClient, text: str, key: str, etag: str | None, **extra: Any) -> Reply:
    op = {"op": "add", "path": "/content/knowledge/-", "value": {"content": text, **extra}}
    precondition = {"If-Match": etag} if etag else {"If-None-Match": "*"}
    return client.request(
        "PATCH", KNOWLEDGE, {"ops": [op]}, {**precondition, "Idempotency-Key": key}
    )


def test_the_same_knowledge_twice_is_one_item_and_the_answer_says_so(soorma: ApiClient):
    first = learn(soorma, "Python was created by Guido van Rossum.", "k1", None)
    assert first.status == 201, first.data
    assert first.data["upserts"] == [
        {"op_index": 0, "result": "added", "path": "/content/knowledge/0"}
    ]
    second = learn(
        soorma, "python was created by  Guido van Rossum.", "k2", first.data["etag"], source="wiki"
    )
    assert second.status == 200, second.data
    assert second.data["upserts"][0]["result"] == "replaced"
    knowledge = second.data["document"]["content"]["knowledge"]
    assert knowledge == [{"content": "python was created by  Guido van Rossum.", "source": "wiki"}]
    history = soorma.request("GET", KNOWLEDGE + ":history").data["changes"]
    assert history[0]["ops"] == [
        {"op": "replace", "path": "/content/knowledge/0", "value": knowledge[0]}
    ]
    assert history[0]["upserts"] == second.data["upserts"]
    again = learn(
        soorma, "python was created by  Guido van Rossum.", "k2", first.data["etag"], source="wiki"
    )
    assert again.data == second.data  # the idempotent replay says the same


def test_an_identical_item_changes_nothing(soorma: ApiClient):
    first = learn(soorma, "Water boils at 100 C.", "k1", None)
    same = learn(soorma, "Water boils at 100 C.", "k2", first.data["etag"])
    assert same.status == 200 and same.data["unchanged"] is True
    assert same.data["upserts"][0]["result"] == "unchanged"
    assert same.data["etag"] == first.data["etag"]


def test_concurrent_rebased_upserts_of_one_fact_keep_one(soorma: ApiClient, related: World):
    first = learn(soorma, "seed", "seed", None)
    etag = first.data["etag"]
    replies: list[Reply] = []

    def write(n: int) -> None:
        op = {
            "op": "add",
            "path": "/content/knowledge/-",
            "value": {"content": "Same fact", "source": f"agent-{n}"},
        }
        replies.append(
            soorma.request(
                "PATCH",
                KNOWLEDGE,
                {"ops": [op], "rebase": True},
                {"If-Match": etag, "Idempotency-Key": f"c{n}"},
            )
        )

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.status for r in replies) == [200] * 4, [r.data for r in replies]
    knowledge = soorma.request("GET", KNOWLEDGE).data["document"]["content"]["knowledge"]
    assert [k["content"] for k in knowledge] == ["seed", "Same fact"]
    results = sorted(r.data["upserts"][0]["result"] for r in replies)
    assert results[0] == "added" and results[1:] == ["replaced"] * 3


def test_sub_tasks_are_not_duplicated(soorma: ApiClient):
    url = f"{USER}/documents/tasks/t1.json"
    ops = [{"op": "add", "path": "/content/sub_tasks/-", "value": v} for v in ("s1", "s2", "s1")]
    made = soorma.request(
        "PATCH", url, {"ops": ops}, {"If-None-Match": "*", "Idempotency-Key": "t"}
    )
    assert made.status == 201, made.data
    assert made.data["document"]["content"]["sub_tasks"] == ["s1", "s2"]
    assert [u["result"] for u in made.data["upserts"]] == ["added", "added", "unchanged"]
