"""Snapshots and their replay (spec 7.2, 9.3, 13, 14), on both storage backends and
through both transports: upload, encryption at rest, the worker's governed writes,
rejections, conflicts (rebase, parking, retries, review) and deduplication."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import azure.functions as func
import pytest
from azure.storage.blob import BlobClient

import function_app
from funchost.blobs import LOCAL_ACCOUNT_URL
from memnet import bootstrap
from memnet.bootstrap import Services
from memnet.domain.layout import SnapshotRef
from memnet.domain.replay_contract import ExtractionRequest
from memnet.ports import ExtractorError, KeyProviderError
from memnet.services.replay.sealing import MAX_SEALED_BYTES, seal
from memnet.services.replay.writes import REPLAY_QUEUE
from tests.api.test_documents import create
from tests.clients import ApiClient, DirectClient, HttpClient
from tests.conftest import (
    ADMIN_KEY,
    AGENT_KEY,
    PRIVACY_KEY,
    SERVICE_BACKENDS,
    backend_settings,
    doc_url,
    starter_profiles,
    trusting_guard,
)

SNAP = "/v1/tenants/t1/users/u1/snapshots/conv-1/snap-1"
REF = SnapshotRef("t1", "u1", "conv-1", "snap-1")
SECRET = "Zanzibar-7731 is my locker code"
PROJECT = doc_url("projects/alpha.json")


def transcript(*texts: str, **extra: Any) -> dict[str, Any]:
    messages = [
        {"id": f"m{i}", "role": "user", "text": text, "timestamp": f"2026-11-24T10:00:0{i}Z"}
        for i, text in enumerate(texts, 1)
    ]
    return {"messages": messages, **extra}


class ScriptedExtractor:
    """An Extractor port double: returns ``output`` (built from the request), after
    running ``during`` (a concurrent writer acting while the model thinks)."""

    name, version = "scripted", "1.0.0"

    def __init__(self) -> None:
        self.output: Callable[[ExtractionRequest], Any] = lambda request: {"digests": []}
        self.during: Callable[[], None] = lambda: None
        self.error: ExtractorError | None = None
        self.calls = 0

    def extract(self, request: ExtractionRequest) -> Any:
        self.calls += 1
        if self.error is not None:
            raise self.error
        self.during()
        return self.output(request)


@pytest.fixture(params=SERVICE_BACKENDS)
def setup(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Services, Any]]:
    settings = replace(
        backend_settings(request, request.param, tmp_path / "data"),
        profiles_dir=starter_profiles(tmp_path / "profiles", trusting_guard),
        replay_retry_base_seconds=0,
        replay_retry_limit=2,
    )
    extractor = ScriptedExtractor()
    services = bootstrap.build(settings, extractor=extractor)
    bootstrap.install(services)
    yield services, extractor
    bootstrap.install(None)


@pytest.fixture(params=["direct", "http"])
def api(request: pytest.FixtureRequest, setup: tuple[Services, Any]) -> ApiClient:
    if request.param == "direct":
        return DirectClient(AGENT_KEY)
    return HttpClient(request.getfixturevalue("http_server"), AGENT_KEY)


def drain(services: Services, limit: int = 100) -> int:
    """Work off the replay queue here, as the queue trigger would."""
    done = 0
    while done < limit:
        messages = services.queue.receive(REPLAY_QUEUE, max_messages=16)
        if not messages:
            return done
        for message in messages:
            services.replay.handle_message(message.body)
            services.queue.delete(REPLAY_QUEUE, message)
            done += 1
    return done


def fact(request: ExtractionRequest, text: str, confidence: float = 0.9) -> dict[str, Any]:
    value = {
        "fact": text,
        "confidence": confidence,
        "evidence": {"message_ids": ["m1"]},
        "last_verified_at": request.now,
    }
    return {
        "target_binding_id": "user_dynamic",
        "target_path": "user_dynamic.json",
        "ops": [{"op": "add", "path": "/content/durable_facts/-", "value": value}],
        "confidence": confidence,
        "evidence": {"message_ids": ["m1"]},
    }


def note(text: str) -> dict[str, Any]:
    return {
        "target_binding_id": "project_doc",
        "target_path": "alpha.json",
        "ops": [{"op": "add", "path": "/content/recent_notes/-", "value": {"note": text}}],
        "confidence": 0.9,
        "evidence": {"message_ids": ["m1"]},
    }


def summary(text: str) -> dict[str, Any]:
    return {**note(text), "ops": [{"op": "replace", "path": "/content/summary", "value": text}]}


def texts(notes: list[dict[str, Any]]) -> list[str]:
    return [n["note"] for n in notes]


DIGEST = {"digest": "User talked about Lisbon.", "keywords": ["lisbon"], "message_ids": ["m1"]}


def upload(api: ApiClient, body: dict[str, Any] | None = None, url: str = SNAP) -> Any:
    return api.request("PUT", url, body or transcript(SECRET))


# -- upload ---------------------------------------------------------------------------------


def test_upload_answers_202_with_the_status_url_and_stores_no_plaintext(setup, api):
    services, _ = setup
    reply = upload(api)
    assert reply.status == 202, reply.data
    assert reply.headers["location"] == SNAP + "/replay"
    assert reply.data["status"] == "queued" and reply.data["status_url"] == SNAP + "/replay"
    stored = services.blobs.read(REF.blob_name).data
    for needle in (SECRET, "Zanzibar", "locker", "messages", "2026-11-24", "dev-agent"):
        assert needle.encode() not in stored
    assert services.queue.count(REPLAY_QUEUE) == 1


def test_reading_a_snapshot_back_needs_the_snapshots_role(setup, api):
    upload(api)
    assert api.request("GET", SNAP).error_code == "ROLE_FORBIDDEN"
    reply = api.as_key(ADMIN_KEY).request("GET", SNAP)
    assert reply.status == 200
    assert reply.data["messages"][0]["text"] == SECRET
    assert reply.data["profile_id"] == "project-copilot-v1"
    assert reply.data["service_id"] == "dev-agent"


def test_the_same_upload_again_is_idempotent_and_another_is_409(setup, api):
    services, _ = setup
    assert upload(api).status == 202
    again = upload(api)
    assert again.status == 202 and again.headers["idempotent-replayed"] == "true"
    other = upload(api, transcript("something else"))
    assert other.status == 409 and other.error_code == "SNAPSHOT_EXISTS"
    assert drain(services) >= 1
    assert api.request("GET", SNAP + "/replay").data["status"] == "applied"
    assert upload(api).status == 202
    assert services.queue.count(REPLAY_QUEUE) == 0  # a finished replay is not queued again


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"messages": []}, "messages"),
        ({"messages": [{"id": "m1", "role": "user", "text": "x"}]}, "messages[0].timestamp"),
        (transcript("a") | {"extra": 1}, None),
        ({"messages": transcript("a", "b")["messages"][:1] * 2}, "messages[1].id"),
        (
            {"messages": [{**transcript("a")["messages"][0], "role": "wizard"}]},
            "messages[0].role",
        ),
        (  # an unhashable role was a 500 (found by Schemathesis)
            {"messages": [{**transcript("a")["messages"][0], "role": {}}]},
            "messages[0].role",
        ),
        (transcript("a", profile_id="../x"), "profile_id"),
    ],
)
def test_a_bad_transcript_is_400_and_stores_nothing(setup, api, body, field):
    services, _ = setup
    reply = upload(api, body)
    assert reply.status == 400, reply.data
    if field is not None:
        assert reply.data["error"]["details"]["field"] == field
    assert list(services.blobs.list_names("tenants/t1/users/u1/")) == []


def test_bad_ids_and_callers_are_refused(setup, api):
    assert upload(api, url="/v1/tenants/t1/users/u1/snapshots/c%20x/s1").status in (400, 404)
    assert api.as_key(None).request("PUT", SNAP, transcript("a")).status == 401
    assert upload(api, transcript("a", profile_id="nope")).status == 403


# -- the worker ---------------------------------------------------------------------------


def test_a_replay_writes_its_digest_and_governed_patches(setup, api):
    services, extractor = setup
    create(api, PROJECT, [{"op": "replace", "path": "/content/summary", "value": "s"}])
    extractor.output = lambda r: {
        "digests": [DIGEST],
        "patches": [fact(r, "Works in Lisbon", 0.6), note("Chose Postgres")],
    }
    upload(api, transcript("Remember that I work in Lisbon.", project_hint="alpha"))
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "applied", status
    assert status["extractor"] == {"name": "scripted", "version": "1.0.0"}
    assert len(status["events"]) == 1 and len(status["changes"]) == 2
    event = api.request("GET", f"/v1/tenants/t1/users/u1/events/{status['events'][0]}").data
    assert event["snapshot_uri"] == REF.uri and event["source_type"] == "replay"
    dynamic = api.request("GET", doc_url()).data["document"]["content"]
    assert dynamic["durable_facts"] == []  # 0.6 < 0.8: redirected to pending
    assert dynamic["pending_confirmations"][0]["candidate"]["fact"] == "Works in Lisbon"
    assert status["changes"][0]["redirected_ops"]
    project = api.request("GET", PROJECT).data["document"]["content"]
    assert texts(project["recent_notes"]) == ["Chose Postgres"]
    stamped = project["recent_notes"][0]["evidence"]  # the server's, not the extractor's
    assert stamped["conversation_id"] == "conv-1" and stamped["snapshot_uri"] == REF.uri
    head = api.request("GET", PROJECT + ":history?limit=1").data["changes"][0]
    assert head["reason"] == "replay_update" and head["actor"] == "memnet-replay"
    assert head["evidence"] == {
        "snapshot_uri": REF.uri,
        "message_ids": ["m1"],
        "conversation_id": "conv-1",
    }
    assert head["origin"]["extractor"]["version"] == "1.0.0"
    assert status["patches"][1]["idempotency_key"] == f"replay-{REF.replay_id}-1"


def test_hostile_output_is_rejected_part_by_part_with_reasons(setup, api):
    services, extractor = setup
    extractor.output = lambda r: {
        "digests": [DIGEST, {"digest": ""}],
        "patches": [
            {**note("x"), "target_binding_id": "nope"},
            {**note("x"), "ops": [{"op": "replace", "path": "/doc_id", "value": "x"}]},
            {
                **fact(r, "x"),
                "ops": [
                    {
                        "op": "add",
                        "path": "/content/durable_facts/0/credentials",
                        "value": "hunter2",
                    }
                ],
            },
            {**note("x"), "evidence": {"message_ids": ["m999"]}},
            {k: v for k, v in note("x").items() if k != "evidence"},
            fact(r, "Fine", 0.95),
            {**note("x"), "target_path": "other-project.json"},
        ],
    }
    upload(api, transcript(SECRET, project_hint="alpha"))
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "partially_applied"
    codes = sorted((r["part"], r["index"], r["code"]) for r in status["rejected"])
    assert codes == [
        ("digest", 1, "INVALID_DIGEST"),
        ("patch", 0, "UNKNOWN_BINDING"),
        ("patch", 1, "ENVELOPE_READ_ONLY"),
        ("patch", 2, "DENIED_PATH"),
        ("patch", 3, "UNKNOWN_MESSAGE"),
        ("patch", 4, "MISSING_EVIDENCE"),
        ("patch", 6, "NOT_A_TARGET"),
    ]
    dynamic = api.request("GET", doc_url()).data["document"]["content"]
    assert [f["fact"] for f in dynamic["durable_facts"]] == ["Fine"]


def test_a_replay_never_makes_a_proposal_approval_could_not_write(setup, api):
    services, extractor = setup

    def whole_list(request: ExtractionRequest) -> dict[str, Any]:
        """One fact at the list itself, below the threshold: approval would replace it."""
        patch = fact(request, "Lives in Lisbon", 0.6)
        op = {**patch["ops"][0], "path": "/content/durable_facts"}
        return {**patch, "ops": [op]}

    extractor.output = lambda r: {"patches": [whole_list(r), fact(r, "Likes tea", 0.6)]}
    upload(api)
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert [(r["index"], r["code"]) for r in status["rejected"]] == [(0, "PROPOSAL_TARGET_INVALID")]
    dynamic = api.request("GET", doc_url()).data["document"]["content"]
    assert [p["candidate"]["fact"] for p in dynamic["pending_confirmations"]] == ["Likes tea"]


def test_free_text_output_fails_the_replay_and_writes_nothing(setup, api):
    services, extractor = setup
    extractor.output = lambda r: "Sure! The user lives in Lisbon."
    upload(api)
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "failed"
    assert status["error"]["code"] == "OUTPUT_NOT_STRUCTURED"
    assert status["events"] == [] and status["changes"] == []


def test_a_permanent_extractor_failure_fails_and_a_transient_one_retries(setup, api):
    services, extractor = setup
    extractor.error = ExtractorError("upstream 503", transient=True)
    upload(api)
    with pytest.raises(ExtractorError):
        drain(services)
    assert api.request("GET", SNAP + "/replay").data["status"] == "running"
    extractor.error = ExtractorError("model refused", transient=False)
    services.replay.run(REF)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "failed" and status["error"]["code"] == "EXTRACTOR_FAILED"
    assert status["attempts"] == 2


def test_a_wrong_key_fails_clearly_and_writes_nothing(setup, api, tmp_path):
    services, extractor = setup
    upload(api)
    from memnet.adapters.local.keyfile import LocalKeyFile

    other = bootstrap.build(  # another instance on the same storage, with another key
        services.settings,
        blobs=services.blobs,
        queue=services.queue,
        keys=LocalKeyFile(tmp_path / "other.json"),
        extractor=extractor,
    )
    bootstrap.install(other)
    drain(other)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "failed"
    assert status["error"]["code"] == "SNAPSHOT_DECRYPT_FAILED"
    assert extractor.calls == 0 and status["events"] == []


def test_duplicate_messages_replay_once(setup, api):
    services, extractor = setup
    extractor.output = lambda r: {"digests": [DIGEST], "patches": [note("once")]}
    upload(api, transcript("x", project_hint="alpha"))
    message = json.dumps({"kind": "replay", **REF.as_json()})
    services.queue.send(REPLAY_QUEUE, message)
    services.replay.handle_message(message)
    drain(services)
    assert extractor.calls == 1
    assert texts(api.request("GET", PROJECT).data["document"]["content"]["recent_notes"]) == [
        "once"
    ]


def test_the_blob_trigger_replays_a_snapshot_written_straight_to_storage(setup, api):
    services, extractor = setup
    extractor.output = lambda r: {"digests": [DIGEST]}
    plaintext = json.dumps(transcript("hello")).encode()
    sealed = seal(plaintext, REF.blob_name.encode(), services.snapshots._keys)
    from memnet.ports import Condition

    services.blobs.write(REF.blob_name, sealed, Condition.create_only())
    # What the worker's SDK-type binding hands the function: a client naming the blob.
    client = BlobClient(LOCAL_ACCOUNT_URL, services.settings.blob_container, REF.blob_name)
    function_app.snapshot_written(client)
    function_app.snapshot_written(client)  # Event Grid delivers at least once
    assert services.queue.count(REPLAY_QUEUE) == 1
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "applied" and status["source"] == "blob_trigger"
    assert status["profile_id"] == "project-copilot-v1"  # the only profile


def padded(services: Services, ref: SnapshotRef, body: dict[str, Any], size: int) -> bytes:
    """``body`` sealed as a writer straight to storage would, padded with JSON whitespace
    to ``size`` bytes: it opens to ``body`` whatever its size."""
    sealed = seal(json.dumps(body).encode(), ref.blob_name.encode(), services.snapshots._keys)
    return sealed + b" " * (size - len(sealed))


def test_a_snapshot_blob_over_the_bound_fails_its_replay_for_good(setup, api):
    services, extractor = setup
    extractor.output = lambda r: {"digests": [DIGEST]}
    from memnet.ports import Condition

    blob = padded(services, REF, transcript("hello"), MAX_SEALED_BYTES + 1)
    services.blobs.write(REF.blob_name, blob, Condition.create_only())
    function_app.snapshot_written(
        BlobClient(LOCAL_ACCOUNT_URL, services.settings.blob_container, REF.blob_name)
    )
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "failed" and status["error"]["code"] == "SNAPSHOT_TOO_LARGE"
    assert status["attempts"] == 1 and status["events"] == [] and extractor.calls == 0
    read_back = api.as_key(ADMIN_KEY).request("GET", SNAP)
    assert (read_back.status, read_back.error_code) == (500, "SNAPSHOT_TOO_LARGE")
    assert upload(api).error_code == "SNAPSHOT_EXISTS"  # the same id: not the same upload
    services.queue.send(REPLAY_QUEUE, json.dumps({"kind": "replay", **REF.as_json()}))
    assert drain(services) == 1  # a redelivery finds it failed: nothing is retried
    assert api.request("GET", SNAP + "/replay").data["attempts"] == 1


# -- conflicts ---------------------------------------------------------------------------


def live_write_while_extracting(
    api: ApiClient, extractor: ScriptedExtractor, op: dict[str, Any]
) -> str:
    """Create the project document; a live writer changes it while the model thinks.
    Returns the ETag the extractor was shown."""
    tag = create(api, PROJECT, [{"op": "replace", "path": "/content/summary", "value": "s"}])
    headers = {"If-Match": tag.data["etag"], "Idempotency-Key": "live-1"}
    extractor.during = lambda: api.request("PATCH", PROJECT, {"ops": [op]}, headers)
    return str(tag.data["etag"])


def test_a_commuting_conflict_is_rebased_onto_the_latest_version(setup, api):
    services, extractor = setup
    op = {"op": "add", "path": "/content/recent_notes/-", "value": {"note": "live"}}
    shown = live_write_while_extracting(api, extractor, op)
    extractor.output = lambda r: {"patches": [note("replayed")]}
    upload(api, transcript("x", project_hint="alpha"))
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "applied"
    assert status["changes"][0]["rebased_from"] == shown
    notes = api.request("GET", PROJECT).data["document"]["content"]["recent_notes"]
    assert texts(notes) == ["live", "replayed"]


def park_one(api: ApiClient, services: Services, extractor: ScriptedExtractor) -> None:
    op = {"op": "replace", "path": "/content/summary", "value": "live"}
    live_write_while_extracting(api, extractor, op)
    extractor.output = lambda r: {"patches": [summary("replayed"), note("fine")]}
    upload(api, transcript("x", project_hint="alpha"))


def test_a_conflict_is_parked_retried_with_backoff_then_left_for_review(setup, api):
    services, extractor = setup
    park_one(api, services, extractor)
    drain(services)  # the run, then two retries (limit 2, no delay in this test)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "unresolved"
    [entry] = status["unresolved"]
    assert entry["patch_index"] == 0 and entry["state"] == "review" and entry["attempts"] == 2
    assert entry["conflict"]["path"] == "/content/summary"
    assert [c["patch_index"] for c in status["changes"]] == [1]
    content = api.request("GET", PROJECT).data["document"]["content"]
    assert content["summary"] == "live" and texts(content["recent_notes"]) == ["fine"]
    admin = api.as_key(ADMIN_KEY)
    listed = admin.request("GET", "/v1/tenants/t1/users/u1/replays/unresolved").data
    assert [r["replay_id"] for r in listed["replays"]] == [REF.replay_id]
    assert api.request("GET", "/v1/tenants/t1/users/u1/replays/unresolved").status == 403


def test_an_admin_retry_applies_a_parked_patch_to_the_latest_version_once(setup, api):
    services, extractor = setup
    park_one(api, services, extractor)
    drain(services)
    admin = api.as_key(ADMIN_KEY)
    assert api.request("POST", SNAP + "/replay/patches/0/retry").status == 403
    reply = admin.request("POST", SNAP + "/replay/patches/0/retry")
    assert reply.status == 200, reply.data
    assert reply.data["status"] == "applied"
    assert reply.data["changes"][-1]["resolved_by"] == "dev-admin"
    assert api.request("GET", PROJECT).data["document"]["content"]["summary"] == "replayed"
    again = admin.request("POST", SNAP + "/replay/patches/0/retry")
    assert again.status == 404 and again.error_code == "UNRESOLVED_NOT_FOUND"


def test_an_admin_discard_drops_a_parked_patch(setup, api):
    services, extractor = setup
    park_one(api, services, extractor)
    drain(services)
    admin = api.as_key(ADMIN_KEY)
    reply = admin.request("POST", SNAP + "/replay/patches/0/discard")
    assert reply.status == 200
    assert reply.data["status"] == "partially_applied"
    assert reply.data["unresolved"][0]["discarded_by"] == "dev-admin"
    assert admin.request("POST", SNAP + "/replay/patches/0/bogus").status == 400
    assert admin.request("POST", SNAP + "/replay/patches/x/retry").status == 400


def test_a_poison_message_goes_to_the_poison_queue_and_blocks_nothing(setup, api):
    from funchost import functions_of
    from funchost.background import deliver_message
    from funchost.queues import PortQueueSource

    services, extractor = setup
    extractor.output = lambda r: {"digests": [DIGEST]}
    services.queue.send(REPLAY_QUEUE, "not json")
    services.queue.send(REPLAY_QUEUE, json.dumps({"kind": "replay", "tenant_id": "../x"}))
    upload(api)
    source = PortQueueSource(services.queue, max_dequeue_count=1)
    [worker] = [
        q for q in functions_of(function_app.app).queue_functions if q.queue_name == REPLAY_QUEUE
    ]
    for _ in range(3):
        for message in source.receive(REPLAY_QUEUE):
            deliver_message(worker, message, source)
    assert services.queue.count(REPLAY_QUEUE + "-poison") == 2
    assert api.request("GET", SNAP + "/replay").data["status"] == "applied"


class UnreachableVault:
    """A KeyProvider whose vault does not answer (transient, like a 503 or a timeout)."""

    def wrap(self, data_key: bytes) -> Any:
        raise KeyProviderError("vault timed out", transient=True)

    def unwrap(self, wrapped: Any) -> bytes:
        raise KeyProviderError("vault timed out", transient=True)

    def describe(self) -> str:
        return "unreachable"


def test_an_unreachable_key_vault_is_503_and_stores_nothing(setup, api):
    services, extractor = setup
    bootstrap.install(
        bootstrap.build(services.settings, keys=UnreachableVault(), extractor=extractor)
    )
    reply = upload(api)
    assert reply.status == 503 and reply.error_code == "SNAPSHOT_KEY_UNAVAILABLE"
    assert reply.headers["retry-after"] == "1"
    assert list(services.blobs.list_names("tenants/t1/users/u1/")) == []


# -- review findings ------------------------------------------------------------------------


def test_retries_address_a_parked_patch_by_its_index_after_a_rejected_one(setup, api):
    services, extractor = setup
    op = {"op": "replace", "path": "/content/summary", "value": "live"}
    live_write_while_extracting(api, extractor, op)
    extractor.output = lambda r: {
        "patches": [{**note("x"), "target_binding_id": "nope"}, summary("replayed"), note("ok")]
    }
    upload(api, transcript("x", project_hint="alpha"))
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert [(u["patch_index"], u["state"]) for u in status["unresolved"]] == [(1, "review")]
    assert [c["patch_index"] for c in status["changes"]] == [2]
    reply = api.as_key(ADMIN_KEY).request("POST", SNAP + "/replay/patches/1/retry")
    assert reply.status == 200, reply.data
    assert reply.data["status"] == "partially_applied"  # patch 0 was rejected
    assert api.request("GET", PROJECT).data["document"]["content"]["summary"] == "replayed"


def test_a_parked_patch_the_write_path_then_refuses_reads_partially_applied():
    from memnet.domain.errors import Unprocessable
    from memnet.services.replay.records import Parked, ReplayRecord, reject_parked

    ids = ("rpl_x", "t", "u", "c", "s", "blob://x", "2026-01-01T00:00:00.000Z")
    record = ReplayRecord(
        *ids, ids[-1], finished=True, unresolved=(Parked(0, "retrying", attempts=1),)
    )
    record = reject_parked(0, Unprocessable("schema", code="SCHEMA_VIOLATION"))(record)
    assert record.unresolved[0].state == "rejected"
    assert record.unresolved[0].as_json()["error"] == "SCHEMA_VIOLATION"
    assert record.rejected[0].code == "SCHEMA_VIOLATION"
    assert record.derived_status() == "partially_applied"


def test_a_second_planner_that_fails_does_not_fail_an_applied_replay(setup, api):
    services, extractor = setup
    answers = iter([None, {"patches": [note("first plan")]}])

    def output(request: ExtractionRequest) -> Any:
        answer = next(answers)
        if answer is None:  # while this model thinks, another worker plans and applies
            services.replay.run(REF)
            return "Sorry, I cannot help with that."
        return answer

    extractor.output = output
    upload(api, transcript("x", project_hint="alpha"))
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "applied" and status["error"] is None
    assert texts(api.request("GET", PROJECT).data["document"]["content"]["recent_notes"]) == [
        "first plan"
    ]


def test_a_sealed_blob_that_is_no_transcript_fails_the_replay_it_does_not_poison(setup, api):
    services, _ = setup
    from memnet.ports import Condition

    bad = json.dumps({"messages": [{"id": "m1", "role": "user", "text": "no time"}]})
    sealed = seal(bad.encode(), REF.blob_name.encode(), services.snapshots._keys)
    services.blobs.write(REF.blob_name, sealed, Condition.create_only())
    services.snapshots.start_from_blob(REF.blob_name)
    drain(services)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "failed" and status["error"]["code"] == "SNAPSHOT_INVALID"
    assert upload(api).error_code == "SNAPSHOT_EXISTS"  # another transcript is there


def test_a_snapshot_blob_of_a_user_being_forgotten_is_not_replayed(setup, api):
    """The blob trigger meets the tombstone: nothing to retry (the forget deletes the
    blob), so no record and no error for the host to retry (found by Schemathesis)."""
    services, _ = setup
    from memnet.ports import Condition

    forget = api.as_key(PRIVACY_KEY).request("DELETE", "/v1/tenants/t1/users/u1")
    assert forget.status == 202, forget.data
    sealed = seal(
        json.dumps(transcript("a")).encode(), REF.blob_name.encode(), services.snapshots._keys
    )
    services.blobs.write(REF.blob_name, sealed, Condition.create_only())
    assert services.snapshots.start_from_blob(REF.blob_name) is None
    assert services.snapshots._records.load(REF) is None


def test_a_replay_that_gave_up_is_failed_and_an_admin_can_redrive_it(setup, api):
    services, extractor = setup
    extractor.error = ExtractorError("upstream 503", transient=True)
    upload(api)
    message = json.dumps({"kind": "replay", **REF.as_json()})
    with pytest.raises(ExtractorError):
        services.replay.handle_message(message)
    poisoned = func.queue.QueueMessage(body=message)  # type: ignore[no-untyped-call]
    function_app.replay_gave_up(poisoned)
    status = api.request("GET", SNAP + "/replay").data
    assert status["status"] == "failed" and status["error"]["code"] == "REPLAY_GAVE_UP"
    assert api.request("POST", SNAP + "/replay/redrive").status == 403
    extractor.error = None
    extractor.output = lambda r: {"digests": [DIGEST]}
    reply = api.as_key(ADMIN_KEY).request("POST", SNAP + "/replay/redrive")
    assert reply.status == 202 and reply.data["status"] == "queued"
    drain(services)
    assert api.request("GET", SNAP + "/replay").data["status"] == "applied"
    again = api.as_key(ADMIN_KEY).request("POST", SNAP + "/replay/redrive")
    assert again.status == 409 and again.error_code == "REPLAY_NOT_FAILED"


def test_the_status_is_for_callers_of_its_profile(setup, api):
    services, _ = setup
    from memnet.domain.callers import Caller
    from memnet.domain.errors import Forbidden

    upload(api)
    drain(services)
    other = Caller("other", frozenset({"t1"}), frozenset({"another-profile"}), frozenset({"read"}))
    with pytest.raises(Forbidden):
        services.snapshots.status(other, REF)
