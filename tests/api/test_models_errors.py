"""A body that breaks its model is one 400 in the spec 10.7 shape, with today's codes and
the failing member's place in ``details.location`` (``["body", member, index, ...]``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memnet import bootstrap
from memnet.api.models.base import validated
from memnet.api.models.requests import AssembleBody, HoldBody, PatchBody, PutBody, SearchBody
from memnet.domain.errors import BadRequest
from memnet.domain.identifiers import check_identifier
from memnet.domain.patching import parse_ops
from tests.api.forgetting import build
from tests.clients import DirectClient
from tests.conftest import AGENT_KEY


def refused(model: Any, body: dict[str, Any]) -> BadRequest:
    with pytest.raises(BadRequest) as caught:
        validated(model, body)
    return caught.value


@pytest.mark.parametrize(
    ("model", "body", "code", "location"),
    [
        (SearchBody, {"service_id": ["ok", "a b"]}, "INVALID_FIELD", ["body", "service_id", 1]),
        (SearchBody, {"keywords": ["ok", ""]}, "INVALID_FIELD", ["body", "keywords", 1]),
        (SearchBody, {"time_range": {"to": "soon"}}, "INVALID_FIELD", ["body", "time_range", "to"]),
        (SearchBody, {"top_k": True}, "INVALID_FIELD", ["body", "top_k"]),
        (AssembleBody, {"conversation_hint": {"x": 1}}, "INVALID_FIELD",
         ["body", "conversation_hint", "x"]),
        (AssembleBody, {"profile_id": "../p"}, "INVALID_IDENTIFIER", ["body", "profile_id"]),
        (PatchBody, {"ops": [{"op": "add", "path": "/a"}]}, "INVALID_PATCH", ["body", "ops", 0]),
        (PatchBody, {"ops": [{"op": "add", "path": "a", "value": 1}]}, "INVALID_PATCH",
         ["body", "ops", 0]),
        (PatchBody, {"ops": {"op": "add"}}, "INVALID_PATCH", ["body", "ops"]),
        (PatchBody, {"ops": [], "rebase": "true"}, "INVALID_FIELD", ["body", "rebase"]),
        (PatchBody, {}, "MISSING_FIELD", ["body", "ops"]),
        (PutBody, {"content": []}, "INVALID_FIELD", ["body", "content"]),
        (HoldBody, {"reason": "ok", "kinds": ["audit", "audit"]}, "INVALID_FIELD",
         ["body", "kinds"]),
        (HoldBody, {"reason": "   "}, "INVALID_FIELD", ["body", "reason"]),
    ],
)  # fmt: skip
def test_the_first_error_names_its_code_and_location(model, body, code, location):
    error = refused(model, body)
    assert (error.code, error.details["location"]) == (code, location)


def test_unknown_members_are_reported_together_with_what_is_allowed():
    error = refused(HoldBody, {"reason": "ok", "zeta": 1, "alpha": 2})
    assert error.code == "UNKNOWN_FIELD"
    assert error.details == {
        "fields": ["alpha", "zeta"],
        "allowed": ["kinds", "reason"],
        "location": ["body", "alpha"],
    }


def test_a_bad_op_is_reported_as_the_domain_reports_it():
    ops = [{"op": "add", "path": "/a", "value": 1}, {"op": "x"}]
    error = refused(PatchBody, {"ops": ops})
    with pytest.raises(BadRequest) as domain:
        parse_ops(ops)
    assert (error.code, error.message) == ("INVALID_PATCH", domain.value.message)
    assert error.details == {"op_index": 1, "location": ["body", "ops", 1]}


def test_a_bad_body_identifier_is_worded_as_a_bad_path_identifier():
    error = refused(AssembleBody, {"profile_id": "../p"})
    with pytest.raises(BadRequest) as domain:
        check_identifier("profile_id", "../p")
    assert (error.code, error.message) == (domain.value.code, domain.value.message)


def test_a_domain_error_keeps_its_place_among_the_others():
    bad_op = {"op": "x", "path": "/a"}
    assert refused(PatchBody, {"ops": [bad_op], "zz": 1}).code == "UNKNOWN_FIELD"
    assert refused(PatchBody, {"profile_id": "../p", "ops": [bad_op]}).code == "INVALID_IDENTIFIER"
    assert refused(PatchBody, {"ops": [bad_op], "rebase": "x"}).code == "INVALID_PATCH"


def test_strict_types_are_not_coerced():
    assert refused(AssembleBody, {"max_docs": 2.5}).code == "INVALID_FIELD"
    assert refused(AssembleBody, {"max_docs": "2"}).code == "INVALID_FIELD"
    assert refused(AssembleBody, {"max_docs": True}).code == "INVALID_FIELD"
    assert refused(AssembleBody, {"debug": "true"}).code == "INVALID_FIELD"
    assert validated(SearchBody, {"recency_half_life_days": 3}).recency_half_life_days == 3.0


def test_search_filters_take_one_identifier_or_a_list():
    body = validated(SearchBody, {"service_id": "a", "project_id": ["p", "q"]})
    assert (body.service_id, body.project_id) == (["a"], ["p", "q"])


def test_time_range_bounds_are_canonical_utc():
    body = validated(SearchBody, {"time_range": {"from": "2026-02-14T21:00:00.25+01:00"}})
    assert body.time_range is not None
    assert body.time_range.from_ == "2026-02-14T20:00:00.250000Z"


def test_time_range_compares_instants_not_strings():
    window = {"from": "2026-02-14T20:00:00Z", "to": "2026-02-14T20:00:00.25Z"}
    assert validated(SearchBody, {"time_range": window}).time_range is not None
    reversed_ = {"from": window["to"], "to": window["from"]}
    assert refused(SearchBody, {"time_range": reversed_}).details["field"] == "time_range"


def test_an_integral_float_is_an_integer():
    """JSON has one number type and JSON Schema's integer matches 41.0 (Schemathesis
    found the server refusing what its OpenAPI document allows)."""
    assert validated(AssembleBody, {"max_docs": 2.0}).max_docs == 2
    assert validated(SearchBody, {"top_k": 7.0}).top_k == 7
    assert refused(SearchBody, {"top_k": 101.0}).code == "INVALID_FIELD"


@pytest.fixture(params=["local"])
def agent(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DirectClient]:
    build(request, tmp_path / "data")
    yield DirectClient(AGENT_KEY)
    bootstrap.install(None)


@pytest.mark.parametrize(
    ("method", "path", "headers", "location"),
    [
        ("GET", "/v1/tenants/t1/users/-u1/documents/user/x.json", {}, ["path", "user_id"]),
        ("GET", "/v1/tenants/t1/users/u1/documents/user/x.txt", {}, ["path", "path"]),
        ("GET", "/v1/tenants/t1/users/u1/documents/user/x.json?profile_id=..", {},
         ["query", "profile_id"]),
        ("PATCH", "/v1/tenants/t1/users/u1/documents/user/x.json", {"If-Match": "x"},
         ["header", "If-Match"]),
        ("PATCH", "/v1/tenants/t1/users/u1/documents/user/x.json", {"If-None-Match": "*"},
         ["header", "Idempotency-Key"]),
    ],
)  # fmt: skip
def test_route_query_and_header_errors_name_their_place(agent, method, path, headers, location):
    reply = agent.request(method, path, {"ops": []} if method == "PATCH" else None, headers)
    assert reply.status == 400, reply.data
    assert reply.data["error"]["details"]["location"] == location


@pytest.mark.parametrize("method", ["PATCH", "PUT"])
def test_a_write_to_a_history_path_is_405(agent, method):
    path = "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json:history"
    body = {"ops": []} if method == "PATCH" else {"content": {}}
    reply = agent.request(method, path, body, {"If-None-Match": "*", "Idempotency-Key": "k"})
    assert (reply.status, reply.error_code) == (405, "METHOD_NOT_ALLOWED")
    assert reply.headers["allow"] == "GET"


def test_a_null_event_id_is_absent_and_the_server_names_the_event(agent):
    body = {
        "event_id": None,
        "digest": "x",
        "source_type": "chat",
        "timestamp": "2026-01-01T00:00:00Z",
    }
    reply = agent.request("POST", "/v1/tenants/t1/users/u1/events", body, {"Idempotency-Key": "e1"})
    assert reply.status == 201, reply.data
    event_id = reply.data["event"]["event_id"]
    assert event_id.startswith("evt_") and reply.data["indexed"] is True
    assert agent.request("GET", f"/v1/tenants/t1/users/u1/events/{event_id}").status == 200


def test_a_rebased_retry_with_its_key_replays_though_the_document_moved_on(agent):
    """With rebase, If-Match is where to start, not a condition: the retry of a write whose
    client re-read the document in between is the same write (the MCP remember tool)."""
    url = "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json"
    add = {"op": "add", "path": "/content/preferences/-", "value": {"text": "tea"}}
    created = agent.request(
        "PATCH", url, {"ops": [add]}, {"If-None-Match": "*", "Idempotency-Key": "c"}
    )
    first_etag = created.data["etag"]
    write = {"ops": [add], "rebase": True}
    applied = agent.request("PATCH", url, write, {"If-Match": first_etag, "Idempotency-Key": "w"})
    assert applied.status == 200, applied.data
    again = agent.request(
        "PATCH", url, write, {"If-Match": applied.data["etag"], "Idempotency-Key": "w"}
    )
    assert again.status == 200 and again.headers.get("idempotent-replayed") == "true"
    assert agent.request("GET", url).data["document"]["content"]["preferences"] == [
        {"text": "tea"},
        {"text": "tea"},
    ]


def test_an_error_repeats_the_callers_input_bounded():
    """A 900 KB member name came back three times in one 400 (review)."""
    huge = "k" * 900_000
    error = refused(AssembleBody, {"conversation_hint": {huge: 1}})
    assert len(str(error.details)) + len(error.message) < 1000
    error = refused(AssembleBody, {huge: 1})
    assert len(str(error.details)) + len(error.message) < 1000


def test_a_bad_op_name_is_not_echoed():
    error = refused(PatchBody, {"ops": [{"op": {"secret": "sk-live-XYZ"}, "path": "/a"}]})
    assert error.code == "INVALID_PATCH" and "sk-live" not in error.message


def test_an_unauthenticated_write_to_a_history_path_is_401_first(agent):
    path = "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json:history"
    reply = agent.as_key(None).request("PATCH", path, {"ops": []}, {"If-None-Match": "*"})
    assert reply.status == 401


def test_an_empty_if_match_is_the_same_request_as_none(agent):
    """The fingerprint hashes the precondition as applied, not the raw headers."""
    url = "/v1/tenants/t1/users/u1/documents/user/user_dynamic.json"
    body = {"ops": [{"op": "add", "path": "/content/preferences/-", "value": {"text": "x"}}]}
    first = agent.request(
        "PATCH", url, body, {"If-Match": "", "If-None-Match": "*", "Idempotency-Key": "e"}
    )
    assert first.status == 201, first.data
    again = agent.request("PATCH", url, body, {"If-None-Match": "*", "Idempotency-Key": "e"})
    assert again.status == 201 and again.headers.get("idempotent-replayed") == "true"


def test_an_evidence_span_is_stored_as_integers_within_bounds(agent):
    url = "/v1/tenants/t1/users/u1/events"
    base = {"digest": "x", "source_type": "chat", "timestamp": "2026-01-01T00:00:00Z"}
    span = {"message_ids": ["m1"], "span": {"start": 41.0, "end": 42}}
    stored = agent.request("POST", url, {**base, "evidence": span}, {"Idempotency-Key": "s1"})
    assert stored.status == 201, stored.data
    assert stored.data["event"]["evidence"]["span"] == {"start": 41, "end": 42}
    too_far = {"message_ids": ["m1"], "span": {"start": 0, "end": 2**53}}
    refused_ = agent.request("POST", url, {**base, "evidence": too_far}, {"Idempotency-Key": "s2"})
    assert refused_.status == 400
