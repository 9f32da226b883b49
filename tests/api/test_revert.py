"""Revert and undo (issue 27 item 3; docs/decisions.md "Revert and undo"):
``POST {document}:revert`` writes an earlier version back, or the inverse of one change,
as a new change through the governed write path, audited with reason ``revert``."""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.audit_records import AuditRecord, change_time, fold
from tests.api.migrating import LATEST, STEP_TRANSFORM, bumped_profiles
from tests.api.test_documents import PREF, create, patch
from tests.api.test_forget_conversation import C2, fact, forget_conversation
from tests.api.test_policy import FACT
from tests.clients import ApiClient, Reply
from tests.conftest import PRIVACY_KEY, doc_url, starter_profiles

TEXT = "/content/preferences/0/text"


def revert(
    client: ApiClient, etag: str | None, key: str, url: str = doc_url(), **body: Any
) -> Reply:
    headers = {"Idempotency-Key": key, **({"If-Match": etag} if etag else {})}
    return client.request("POST", url + ":revert", body, headers)


def history(client: ApiClient, url: str = doc_url()) -> list[dict[str, Any]]:
    reply = client.request("GET", url + ":history")
    assert reply.status == 200, reply.data
    return list(reply.data["changes"])


def three_versions(client: ApiClient) -> list[dict[str, Any]]:
    """Create, then two patches: each reply's ``{"etag", "document"}``."""
    replies = [create(client).data]
    for i, ops in enumerate(
        (
            [{"op": "replace", "path": TEXT, "value": "second"}],
            [{"op": "add", "path": PREF, "value": {"text": "third"}}],
        )
    ):
        reply = patch(client, replies[-1]["etag"], ops, f"v{i}")
        assert reply.status == 200, reply.data
        replies.append(reply.data)
    return replies


def change_id(version: dict[str, Any]) -> str:
    return str(version["document"]["change_id"])


def test_a_revert_writes_the_version_back_as_a_new_audited_change(
    client: ApiClient, admin: ApiClient
):
    versions = three_versions(client)
    first = change_id(versions[0])
    reply = revert(admin, versions[-1]["etag"], "r1", to_change_id=first, reason="bad import")
    assert reply.status == 200, reply.data
    document = reply.data["document"]
    assert document["content"] == versions[0]["document"]["content"]
    assert document["change_id"] not in {change_id(v) for v in versions}
    assert reply.headers["etag"] == reply.data["etag"] != versions[-1]["etag"]
    changes = history(admin)
    newest = changes[0]
    assert (newest["reason"], newest["reverted_to"], newest["operation"]) == (
        "revert",
        first,
        "patch",
    )
    assert "undone" not in newest and "undone" not in changes[1]
    assert newest["evidence"] == {"revert": {"reverted_to": first, "reason": "bad import"}}
    assert "reverted_to" not in changes[1]  # older records as they were stored
    current = admin.request("GET", doc_url()).data
    assert fold(map(AuditRecord.from_json, reversed(changes))) == current["document"]


def test_undo_applies_the_inverse_of_one_change_to_the_latest_version(
    client: ApiClient, admin: ApiClient
):
    versions = three_versions(client)
    second = change_id(versions[1])  # replaced the first preference's text
    reply = revert(admin, versions[-1]["etag"], "u1", undo_change_id=second)
    assert reply.status == 200, reply.data
    preferences = reply.data["document"]["content"]["preferences"]
    assert preferences == [{"text": "Be brief."}, {"text": "third"}]  # the later append kept
    changes = history(admin)
    assert (changes[0]["reason"], changes[0]["undone"]) == ("revert", second)
    assert "reverted_to" not in changes[0]
    current = admin.request("GET", doc_url()).data
    assert fold(map(AuditRecord.from_json, reversed(changes))) == current["document"]


def test_undo_of_a_durable_fact_passes_the_durable_gate_as_a_reviewed_write(
    client: ApiClient, admin: ApiClient
):
    created = create(client).data
    fact = patch(
        client,
        created["etag"],
        [{"op": "add", "path": "/content/durable_facts/-", "value": FACT}],
        "fact",
        confidence=0.9,
        evidence={"message_ids": ["m1"]},
    )
    assert fact.data["document"]["content"]["durable_facts"] == [FACT], fact.data
    reply = revert(
        admin, fact.data["etag"], "u1", undo_change_id=fact.data["document"]["change_id"]
    )
    assert reply.status == 200, reply.data
    assert reply.data["document"]["content"] == created["document"]["content"]
    assert "redirected_ops" not in reply.data


def test_undo_of_a_change_a_later_one_overwrote_is_a_conflict_naming_it(
    client: ApiClient, admin: ApiClient
):
    versions = three_versions(client)
    later = patch(
        client, versions[-1]["etag"], [{"op": "replace", "path": TEXT, "value": "x"}], "l"
    )
    assert later.status == 200
    reply = revert(admin, later.data["etag"], "u1", undo_change_id=change_id(versions[1]))
    assert (reply.status, reply.error_code) == (409, "UNDO_CONFLICT"), reply.data
    conflict = reply.data["error"]["details"]["conflict"]
    assert conflict["change_id"] == later.data["document"]["change_id"]
    assert conflict["path"] == TEXT
    assert len(history(admin)) == 4  # nothing written


def test_undo_of_a_create_is_refused(client: ApiClient, admin: ApiClient):
    versions = three_versions(client)
    reply = revert(admin, versions[-1]["etag"], "u1", undo_change_id=change_id(versions[0]))
    assert (reply.status, reply.error_code) == (422, "UNDO_NOT_POSSIBLE"), reply.data


def test_reverting_to_the_current_content_writes_nothing(client: ApiClient, admin: ApiClient):
    versions = three_versions(client)
    latest = versions[-1]
    reply = revert(admin, latest["etag"], "r1", to_change_id=change_id(latest))
    assert reply.status == 200, reply.data
    assert reply.data["unchanged"] is True and reply.data["etag"] == latest["etag"]
    assert len(history(admin)) == 3


def test_a_retry_answers_the_stored_response_and_another_body_is_a_conflict(
    client: ApiClient, admin: ApiClient
):
    versions = three_versions(client)
    second = change_id(versions[1])
    undo = revert(admin, versions[-1]["etag"], "u1", undo_change_id=second)
    assert undo.status == 200, undo.data
    again = revert(admin, versions[-1]["etag"], "u1", undo_change_id=second)
    assert again.data == undo.data and again.headers["idempotent-replayed"] == "true"
    etag, first = undo.data["etag"], change_id(versions[0])
    done = revert(admin, etag, "r1", to_change_id=first)
    again = revert(admin, etag, "r1", to_change_id=first)
    assert done.status == again.status == 200
    assert again.data == done.data and again.headers["idempotent-replayed"] == "true"
    other = revert(admin, etag, "r1", to_change_id=second)
    assert (other.status, other.error_code) == (409, "IDEMPOTENCY_KEY_REUSED")
    assert len(history(admin)) == 5  # create, two patches, one undo, one revert


def test_a_patch_and_a_revert_with_one_if_match_one_wins(client: ApiClient, admin: ApiClient):
    versions = three_versions(client)
    etag, first = versions[-1]["etag"], change_id(versions[0])
    start = threading.Barrier(2)
    replies: dict[str, Reply] = {}

    def run(name: str, call: Any) -> None:
        start.wait()
        replies[name] = call()

    calls = {
        "patch": lambda: patch(client, etag, [{"op": "replace", "path": TEXT, "value": "p"}], "p"),
        "revert": lambda: revert(admin, etag, "r", to_change_id=first),
    }
    threads = [threading.Thread(target=run, args=item) for item in calls.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    statuses = sorted(reply.status for reply in replies.values())
    assert statuses == [200, 412], {k: v.data for k, v in replies.items()}
    assert len(history(admin)) == 4


def test_a_stale_if_match_is_412_and_none_is_428(client: ApiClient, admin: ApiClient):
    versions = three_versions(client)
    first = change_id(versions[0])
    stale = revert(admin, versions[0]["etag"], "r1", to_change_id=first)
    assert (stale.status, stale.error_code) == (412, "ETAG_MISMATCH")
    assert stale.data["error"]["details"]["latest_etag"] == versions[-1]["etag"]
    missing = revert(admin, None, "r2", to_change_id=first)
    assert missing.status == 428
    undo = revert(admin, versions[0]["etag"], "u1", undo_change_id=change_id(versions[2]))
    assert (undo.status, undo.error_code) == (412, "ETAG_MISMATCH")  # before the undone one


def test_reverting_needs_the_bindings_revert_roles(client: ApiClient):
    versions = three_versions(client)
    reply = revert(client, versions[-1]["etag"], "r1", to_change_id=change_id(versions[0]))
    assert (reply.status, reply.error_code) == (403, "ROLE_FORBIDDEN")
    assert reply.data["error"]["details"]["roles"] == ["admin"]


def test_another_tenants_or_documents_change_is_not_found(client: ApiClient, admin: ApiClient):
    versions = three_versions(client)
    etag = versions[-1]["etag"]
    theirs = create(client, doc_url(tenant="t2")).data["document"]["change_id"]
    another_user = create(client, doc_url(user="u2")).data["document"]["change_id"]
    other_doc = create(client, doc_url("projects/p.json"), [], "p").data["document"]["change_id"]
    for foreign in (theirs, another_user, other_doc, "chg_" + "0" * 28):
        for body in ({"to_change_id": foreign}, {"undo_change_id": foreign}):
            reply = revert(admin, etag, f"k-{foreign}-{len(body)}-{next(iter(body))}", **body)
            assert (reply.status, reply.error_code) == (404, "CHANGE_NOT_FOUND"), reply.data
    assert len(history(admin)) == 3
    assert client.request("GET", doc_url(tenant="t2")).data["document"]["change_id"] == theirs


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"to_change_id": "chg_" + "0" * 28, "undo_change_id": "chg_" + "0" * 28},
        {"to_change_id": "chg_zz"},
        {"to_change_id": 7},
        {"to_change_id": "chg_" + "0" * 28, "reason": "x" * 1001},
        {"to_change_id": "chg_" + "0" * 28, "ops": []},
    ],
)
def test_a_malformed_body_is_400(client: ApiClient, admin: ApiClient, body: dict[str, Any]):
    versions = three_versions(client)
    reply = revert(admin, versions[-1]["etag"], "r1", **body)
    assert reply.status == 400, reply.data
    assert len(history(admin)) == 3


def test_post_takes_only_the_revert_suffix(client: ApiClient, admin: ApiClient):
    three_versions(client)
    for url, allow in ((doc_url(), "GET, PATCH, PUT"), (doc_url() + ":history", "GET")):
        reply = admin.request("POST", url, {}, {"If-Match": '"x"', "Idempotency-Key": "k"})
        assert (reply.status, reply.headers["allow"]) == (405, allow), url
    for method in ("PATCH", "PUT"):
        reply = admin.request(method, doc_url() + ":revert", {"ops": []}, {"If-Match": '"x"'})
        assert (reply.status, reply.headers["allow"]) == (405, "POST"), method


def test_a_revert_while_the_user_is_forgotten_is_refused(client: ApiClient, admin: ApiClient):
    versions = three_versions(client)
    assert client.as_key(PRIVACY_KEY).request("DELETE", "/v1/tenants/t1/users/u1").status == 202
    reply = revert(admin, versions[-1]["etag"], "r1", to_change_id=change_id(versions[0]))
    assert (reply.status, reply.error_code) == (409, "FORGET_IN_PROGRESS")


def test_a_revert_across_a_schema_version_is_422_and_writes_nothing(
    client: ApiClient, admin: ApiClient, services: Services, tmp_path: Path
):
    old = create(client, ops=[{"op": "add", "path": PREF, "value": {"text": "t", "topic": "x"}}])
    gone = patch(
        client, old.data["etag"], [{"op": "remove", "path": "/content/preferences/0/topic"}], "p"
    )
    assert gone.status == 200, gone.data
    stricter_schema(services, tmp_path)  # a preference has no topic any more
    reply = revert(admin, gone.data["etag"], "r1", to_change_id=old.data["document"]["change_id"])
    assert (reply.status, reply.error_code) == (422, "SCHEMA_VIOLATION"), reply.data
    violations = reply.data["error"]["details"]["violations"]
    assert [(v["code"], v["path"]) for v in violations] == [
        ("SCHEMA_VIOLATION", "/content/preferences/0")
    ]
    assert admin.request("GET", doc_url()).data["etag"] == gone.data["etag"]
    assert len(history(admin)) == 2


def test_a_profile_may_let_writers_revert(client: ApiClient, services: Services, tmp_path: Path):
    def edit(raw: dict[str, Any]) -> None:
        for binding in raw["document_bindings"]:
            binding["revert_roles"] = ["write"]

    versions = three_versions(client)
    reinstall(services, starter_profiles(tmp_path / "profiles", edit))
    reply = revert(client, versions[-1]["etag"], "r1", to_change_id=change_id(versions[0]))
    assert reply.status == 200, reply.data


def stricter_schema(services: Services, tmp_path: Path) -> None:
    """Today's schema of ``memory.user.dynamic`` without a preference's ``topic``: the
    content of older versions fails it. (In place, not as a new schema version: a
    document still at the old version is not writable until it is migrated.)"""
    profiles = starter_profiles(tmp_path / "profiles", lambda raw: None)
    path = profiles / "schemas" / "memory.user.dynamic" / "1.0.0.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    del schema["properties"]["preferences"]["items"]["properties"]["topic"]
    path.write_text(json.dumps(schema), encoding="utf-8")
    reinstall(services, profiles)


def reinstall(services: Services, profiles: Path) -> None:
    """The same storage served under ``profiles`` (a deployment of a new profile)."""
    settings = replace(services.settings, profiles_dir=profiles)
    bootstrap.install(bootstrap.build(settings, blobs=services.blobs, queue=services.queue))


def test_a_version_past_the_audit_horizon_is_gone(
    client: ApiClient, admin: ApiClient, services: Services
):
    versions = three_versions(client)
    services.audit.raise_horizon("t1", "u1", change_time(change_id(versions[1])))
    etag = versions[-1]["etag"]
    for body in (
        {"to_change_id": change_id(versions[0])},
        {"undo_change_id": change_id(versions[1])},
    ):
        reply = revert(admin, etag, f"k-{next(iter(body))}", **body)
        assert (reply.status, reply.error_code) == (410, "HISTORY_TRUNCATED"), reply.data
    assert len(history(admin)) == 3


def test_a_version_at_an_older_schema_version_is_migrated_as_it_is_written_back(
    client: ApiClient, admin: ApiClient, services: Services, tmp_path: Path
):
    first, changed = old_versions(admin)
    reinstall(services, bumped_profiles(tmp_path / "profiles"))  # now at 1.2.0
    reply = revert(admin, changed["etag"], "r1", to_change_id=first["document"]["change_id"])
    assert reply.status == 200, reply.data
    document = reply.data["document"]
    assert document["schema_version"] == LATEST
    assert document["content"]["preferences"] == [{"text": "Tea", "category": "drinks"}]
    assert document["content"]["projects"] == [{"project_id": "p1"}]
    changes = history(admin)
    assert changes[0]["migration"] == {"from": "1.0.0", "to": LATEST}
    assert fold(map(AuditRecord.from_json, reversed(changes))) == document


def test_a_version_no_migration_leads_from_is_422_and_writes_nothing(
    client: ApiClient, admin: ApiClient, services: Services, tmp_path: Path
):
    first, changed = old_versions(admin)
    reinstall(services, bumped_profiles(tmp_path / "profiles", steps=[STEP_TRANSFORM]))
    reply = revert(admin, changed["etag"], "r1", to_change_id=first["document"]["change_id"])
    assert (reply.status, reply.error_code) == (422, "SCHEMA_VERSION_UNSUPPORTED"), reply.data
    assert len(history(admin)) == 2


def old_versions(admin: ApiClient) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two versions of user_dynamic written at 1.0.0: a preference with a topic and a
    projects index, then the preference changed."""
    content = {
        "preferences": [{"text": "Tea", "topic": "drinks"}],
        "durable_facts": [],
        "pending_confirmations": [],
        "projects_index": [{"project_id": "p1"}],
    }
    headers = {"If-None-Match": "*", "Idempotency-Key": "seed"}
    first = admin.request("PUT", doc_url(), {"content": content}, headers)
    assert first.status == 201, first.data
    changed = patch(
        admin, first.data["etag"], [{"op": "replace", "path": TEXT, "value": "Milk"}], "c"
    )
    assert changed.status == 200, changed.data
    return first.data, changed.data


def test_a_version_older_than_a_conversations_retraction_stays_forgotten(
    client: ApiClient, admin: ApiClient, services: Services
):
    taught = [{"op": "add", "path": "/content/durable_facts/-", "value": fact("In Porto", C2)}]
    created = create(client, ops=taught, confidence=0.9, evidence={"message_ids": ["m"]})
    assert created.status == 201, created.data
    forget_conversation(client, services, "conv-2")
    latest = admin.request("GET", doc_url()).data
    assert latest["document"]["content"]["durable_facts"] == []  # retracted
    reply = revert(admin, latest["etag"], "r1", to_change_id=created.data["document"]["change_id"])
    assert (reply.status, reply.error_code) == (410, "HISTORY_FORGOTTEN"), reply.data
    assert admin.request("GET", doc_url()).data["etag"] == latest["etag"]
