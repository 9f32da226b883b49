"""The Azure AI Search adapter at the HTTP level (memnet.adapters.azure.search).

There is no Azure AI Search emulator, so the SearchIndex contract suite runs on SQLite
only; here the real SDK clients run over a recording ``HttpTransport`` that answers with
response shapes as the service returns them (``tests/data/azure_search``). The tests check
what goes on the wire (paths, api-key, index definition, actions, keys, OData filter,
escaped search text, paging) and how answers and failures come back.

NOT run against a live service: the request/response shapes follow the REST reference
(api-version 2026-04-01), not a recorded session with a real search service.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ResourceNotFoundError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.core.rest import HttpRequest

from memnet.adapters.azure.search import (
    INDEX_DEFINITION,
    AzureSearchIndex,
    document_key,
    map_search_errors,
    search_text,
)
from memnet.ports import EventHit, EventQuery, IndexedEvent, StorageError, StorageUnavailable
from tests.contract.canned import CannedResponse, InMemoryTransport
from tests.secret_scan import PLANTED

SEARCH_KEY = PLANTED["search api key"]  # a planted secret: the log scan looks for it

DATA = Path(__file__).resolve().parents[1] / "data" / "azure_search"
ENDPOINT = "https://memnet-test.search.windows.net"
INDEX = "memnet-events"
DOCS = f"/indexes('{INDEX}')/docs"


def shape(name: str) -> Any:
    return json.loads((DATA / name).read_text())


SEARCH_HEADERS = {"Content-Type": "application/json; odata.metadata=minimal"}


@dataclass
class Sent:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any


@dataclass
class RecordingTransport(InMemoryTransport):
    """Records each request; answers with the queued (status, body) pairs in order."""

    answers: list[tuple[int, Any]] = field(default_factory=list)
    sent: list[Sent] = field(default_factory=list)

    def send(self, request: HttpRequest, **kwargs: Any) -> CannedResponse:
        url = urlsplit(request.url)
        content = request.content
        body = json.loads(content) if content else None
        headers = {k.lower(): v for k, v in request.headers.items()}
        self.sent.append(
            Sent(request.method, unquote(url.path), parse_qs(url.query), headers, body)
        )
        status, answer = self.answers.pop(0) if self.answers else (500, None)
        return CannedResponse(request, status, answer, SEARCH_HEADERS)


@pytest.fixture
def transport() -> RecordingTransport:
    return RecordingTransport()


@pytest.fixture
def index(transport: RecordingTransport) -> AzureSearchIndex:
    credential = AzureKeyCredential(SEARCH_KEY)
    return AzureSearchIndex(ENDPOINT, INDEX, credential, transport=transport, retry_total=0)


def event(event_id: str, user_id: str = "u1", **fields: Any) -> IndexedEvent:
    base: dict[str, Any] = {
        "timestamp": "2026-02-14T21:00:00+01:00",
        "service_id": "assistant-a",
        "source_type": "chat",
        "digest": "User asked to split memory by contention and lifecycle.",
    }
    return IndexedEvent("t1", user_id, event_id, **{**base, **fields})


def ranked_search(index: AzureSearchIndex, transport: RecordingTransport, **query: Any) -> Sent:
    transport.answers.append((200, shape("search_ranked.json")))
    index.search(EventQuery(tenant_id="t1", user_id="O'Brien", **query))
    return transport.sent[-1]


# --- the index definition -----------------------------------------------------------


def test_constructing_the_index_sends_nothing(transport: RecordingTransport) -> None:
    AzureSearchIndex(ENDPOINT, INDEX, AzureKeyCredential("k"), transport=transport)
    assert transport.sent == []


def test_ensure_index_puts_the_json_definition_with_the_api_key(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((201, shape("index_created.json")))
    index.ensure_index()
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("PUT", f"/indexes('{INDEX}')")
    assert sent.query["api-version"] == ["2026-04-01"]
    assert sent.headers["api-key"] == SEARCH_KEY
    assert sent.body == json.loads(INDEX_DEFINITION.read_text())


def test_ensure_index_uses_the_configured_index_name(transport: RecordingTransport) -> None:
    other = AzureSearchIndex(
        ENDPOINT, "tenant-a-events", AzureKeyCredential("k"), transport=transport
    )
    transport.answers.append((201, {**shape("index_created.json"), "name": "tenant-a-events"}))
    other.ensure_index()
    assert transport.sent[0].path == "/indexes('tenant-a-events')"
    assert transport.sent[0].body["name"] == "tenant-a-events"


def test_definition_is_the_one_architecture_decides() -> None:
    fields = {f["name"]: f for f in json.loads(INDEX_DEFINITION.read_text())["fields"]}
    assert fields["id"]["key"] is True
    assert all(fields[n]["filterable"] for n in ("tenant_id", "user_id"))
    assert all(fields[n]["facetable"] for n in ("service_id", "source_type", "project_ids"))
    assert fields["keywords"]["type"] == fields["project_ids"]["type"] == "Collection(Edm.String)"
    assert fields["keywords"]["searchable"] and fields["keywords"]["facetable"]
    assert fields["digest"]["analyzer"] == fields["keywords"]["analyzer"] == "memnet_text"
    assert fields["timestamp"]["type"] == "Edm.DateTimeOffset"
    assert fields["timestamp"]["sortable"] and fields["timestamp"]["filterable"]
    for name in ("snapshot_uri", "evidence"):
        assert fields[name]["retrievable"]
        assert not any(fields[name][a] for a in ("searchable", "filterable", "facetable"))


# --- indexing -------------------------------------------------------------------------


def test_upsert_sends_merge_or_upload_with_the_base64_key_and_every_field(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((200, shape("index_documents.json")))
    index.upsert([event("evt_01", keywords=("memory",), project_ids=("alpha",), evidence="{}")])
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("POST", f"{DOCS}/search.index")
    assert sent.headers["api-key"] == SEARCH_KEY
    (action,) = sent.body["value"]
    assert action["@search.action"] == "mergeOrUpload"
    assert action["id"] == "dDF8dTF8ZXZ0XzAx"
    assert base64.urlsafe_b64decode(action["id"]) == b"t1|u1|evt_01"
    assert action["timestamp"] == "2026-02-14T20:00:00Z"
    assert (action["keywords"], action["project_ids"]) == (["memory"], ["alpha"])
    assert action["snapshot_uri"] is None  # sent explicitly, so merge replaces it
    assert set(action) - {"@search.action"} == {
        f["name"] for f in json.loads(INDEX_DEFINITION.read_text())["fields"]
    }


def test_upsert_sends_at_most_1000_documents_per_request(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers += [(200, shape("index_documents.json"))] * 2
    index.upsert([event(f"evt_{i:04d}") for i in range(1001)])
    assert [len(s.body["value"]) for s in transport.sent] == [1000, 1]


def test_delete_sends_delete_actions_by_key(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((200, shape("index_documents.json")))
    index.delete("t1", "u1", ["evt_01", "evt_02"])
    assert transport.sent[0].body == {
        "value": [
            {"@search.action": "delete", "id": document_key("t1", "u1", "evt_01")},
            {"@search.action": "delete", "id": document_key("t1", "u1", "evt_02")},
        ]
    }


def test_a_document_the_service_rejects_fails_the_upsert(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((207, shape("index_documents_partial.json")))
    with pytest.raises(StorageError) as raised:
        index.upsert([event("evt_01"), event("evt_02")])
    assert not isinstance(raised.value, StorageUnavailable)


def test_a_throttled_document_is_retryable(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((207, shape("index_documents_throttled.json")))
    with pytest.raises(StorageUnavailable):
        index.upsert([event("evt_01")])


# --- searching --------------------------------------------------------------------------


def test_search_sends_scope_filter_escaped_text_top_and_fields(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    sent = ranked_search(index, transport, text="memory split", top_k=5)
    assert (sent.method, sent.path) == ("POST", f"{DOCS}/search.post.search")
    assert sent.body["filter"] == "tenant_id eq 't1' and user_id eq 'O''Brien'"
    assert sent.body["search"] == "memory split"
    assert sent.body["top"] == 5
    assert sent.body["searchFields"] == "digest,keywords"
    assert (sent.body["queryType"], sent.body["searchMode"]) == ("simple", "any")
    assert "orderby" not in sent.body


def test_search_maps_hits_back_to_event_hits(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((200, shape("search_ranked.json")))
    hits = index.search(EventQuery(tenant_id="t1", user_id="O'Brien", text="memory"))
    assert hits == [
        EventHit(event_id="evt_02", score=2.7182817, timestamp="2026-02-14T20:00:00Z"),
        EventHit(event_id="evt_01", score=0.5753642, timestamp="2026-02-13T08:30:00.123000Z"),
    ]


@pytest.mark.parametrize("text", ["", "   ", '"', "()", "*:-", "\\"])
def test_text_without_words_orders_by_newest(
    index: AzureSearchIndex, transport: RecordingTransport, text: str
) -> None:
    transport.answers.append((200, shape("search_newest.json")))
    hits = index.search(EventQuery(tenant_id="t1", user_id="O'Brien", text=text))
    sent = transport.sent[-1]
    assert sent.body["search"] == "*"
    assert sent.body["orderby"] == "timestamp desc"
    assert sent.body["filter"] == "tenant_id eq 't1' and user_id eq 'O''Brien'"
    assert [h.event_id for h in hits] == ["evt_02", "evt_01"]


HOSTILE = [  # operators never reach the parser: only the query's words do
    ('a+b -c "d"', "b c d"),  # "a" is a stop word
    ("(x | y) & !z", "x y z"),
    ("field:term tail* fuzzy~2 boost^3", "field term tail fuzzy 2 boost 3"),
    ("{a} [b] c? d/e f\\g", "b c d e f g"),
    ("a && b || c", "b c"),
]


@pytest.mark.parametrize(("text", "words"), HOSTILE)
def test_only_the_query_words_reach_the_parser(
    index: AzureSearchIndex, transport: RecordingTransport, text: str, words: str
) -> None:
    assert ranked_search(index, transport, text=text).body["search"] == words


def test_no_simple_syntax_operator_is_a_word() -> None:
    specials = '+-&|!(){}[]^"~*?:\\/'
    assert search_text(f"w {specials}") == "w"
    assert search_text(specials) is None


def test_stop_words_are_dropped_as_the_embedded_index_drops_them(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    sent = ranked_search(index, transport, text="What did I decide about the Solr cluster?")
    assert sent.body["search"] == "decide Solr cluster"
    only_stop_words = ranked_search(index, transport, text="to be or not to be")
    assert only_stop_words.body["search"] == "to be or not"  # all kept: nothing else remains


def test_filters_use_search_in_any_and_time_bounds_in_utc(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    sent = ranked_search(
        index,
        transport,
        text="x",
        since="2026-02-14T21:00:00+01:00",
        until="2026-03-01T00:00:00.5Z",
        service_ids=("assistant-a", "assistant-b"),
        source_types=("chat",),
        project_ids=("alpha", "O'Neil"),
        keywords=("memory", "a,b"),
    )
    assert sent.body["filter"] == (
        "tenant_id eq 't1' and user_id eq 'O''Brien'"
        " and timestamp ge 2026-02-14T20:00:00Z and timestamp lt 2026-03-01T00:00:00.500000Z"
        " and search.in(service_id, 'assistant-a,assistant-b', ',')"
        " and search.in(source_type, 'chat', ',')"
        " and project_ids/any(p: search.in(p, 'alpha,O''Neil', ','))"
        " and keywords/any(k: search.in(k, 'memory|a,b', '|'))"
    )


@pytest.mark.parametrize(
    ("classes", "clause"),
    [
        (None, None),  # every class (the jobs, or no profile has classes): no clause
        ((), " and (sensitivity eq null)"),
        (
            ("a2p-v1:restricted", "a2p-v1:sensitive"),
            " and (sensitivity eq null"
            " or search.in(sensitivity, 'a2p-v1:restricted,a2p-v1:sensitive', ','))",
        ),
    ],
)
def test_a_class_filter_keeps_unclassified_events_and_those_of_its_classes(
    index: AzureSearchIndex,
    transport: RecordingTransport,
    classes: tuple[str, ...] | None,
    clause: str | None,
) -> None:
    for text in ("x", ""):
        sent = ranked_search(index, transport, text=text, classes=classes)
        scope = "tenant_id eq 't1' and user_id eq 'O''Brien'"
        assert sent.body["filter"] == scope + (clause or "")


def test_an_events_class_is_indexed_filterable_and_never_returned(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    fields = {f["name"]: f for f in json.loads(INDEX_DEFINITION.read_text())["fields"]}
    assert fields["sensitivity"]["filterable"] and not fields["sensitivity"]["retrievable"]
    transport.answers.append((200, shape("index_documents.json")))
    index.upsert([event("evt_01", sensitivity="a2p-v1:sensitive"), event("evt_02")])
    first, second = transport.sent[0].body["value"]
    assert (first["sensitivity"], second["sensitivity"]) == ("a2p-v1:sensitive", None)


def test_values_containing_every_delimiter_fall_back_to_eq(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    sent = ranked_search(index, transport, text="x", keywords=(",|;~^#", "it's"))
    assert sent.body["filter"].endswith(" and keywords/any(k: (k eq ',|;~^#' or k eq 'it''s'))")


def test_a_quote_in_the_user_cannot_widen_the_scope(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((200, shape("search_newest.json")))
    index.search(EventQuery(tenant_id="t1", user_id="x' or user_id ne '"))
    assert transport.sent[0].body["filter"] == (
        "tenant_id eq 't1' and user_id eq 'x'' or user_id ne '''"
    )


def test_list_event_ids_pages_by_key(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    keys = [document_key("t1", "u1", f"evt_{i:04d}") for i in range(1001)]
    transport.answers.append(
        (200, {"value": [{"@search.score": 1.0, "id": k} for k in keys[:1000]]})
    )
    transport.answers.append((200, {"value": [{"@search.score": 1.0, "id": keys[1000]}]}))
    listed = list(index.list_event_ids("t1"))
    assert listed == [("t1", "u1", f"evt_{i:04d}") for i in range(1001)]
    first, second = (s.body for s in transport.sent)
    assert (first["search"], first["filter"], first["orderby"]) == (
        "*",
        "tenant_id eq 't1'",
        "id asc",
    )
    assert (first["select"], first["top"]) == ("id", 1000)
    assert second["filter"] == f"tenant_id eq 't1' and id gt '{keys[999]}'"


def test_list_event_ids_for_one_user_filters_by_user(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((200, {"value": []}))
    assert list(index.list_event_ids("t1", "u1")) == []
    assert transport.sent[0].body["filter"] == "tenant_id eq 't1' and user_id eq 'u1'"


def test_list_event_ids_of_the_whole_index_has_no_scope_filter(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    keys = [document_key("t1", "u1", "a"), document_key("t2", "u9", "b")]
    transport.answers.append((200, {"value": [{"@search.score": 1.0, "id": k} for k in keys]}))
    assert list(index.list_event_ids(None)) == [("t1", "u1", "a"), ("t2", "u9", "b")]
    assert "filter" not in transport.sent[0].body


# --- failures -------------------------------------------------------------------------


def test_503_on_search_is_storage_unavailable(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((503, shape("service_unavailable.json")))
    with pytest.raises(StorageUnavailable) as raised:
        index.search(EventQuery(tenant_id="t1", user_id="u1", text="memory"))
    assert isinstance(raised.value.__cause__, HttpResponseError)


def test_503_on_upsert_is_storage_unavailable(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((503, shape("service_unavailable.json")))
    with pytest.raises(StorageUnavailable):
        index.upsert([event("evt_01")])


def test_400_is_a_storage_error_not_unavailable(
    index: AzureSearchIndex, transport: RecordingTransport
) -> None:
    transport.answers.append((400, shape("bad_request.json")))
    with pytest.raises(StorageError) as raised:
        index.search(EventQuery(tenant_id="t1", user_id="u1", text="memory"))
    assert not isinstance(raised.value, StorageUnavailable)


def _http_error(status: int) -> HttpResponseError:
    error = HttpResponseError(f"status {status}")
    error.status_code = status
    return error


def _auth_error(status: int | None) -> ClientAuthenticationError:
    error = ClientAuthenticationError("rejected")
    error.status_code = status
    return error


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (ServiceRequestError("connection refused"), StorageUnavailable),
        (ServiceResponseError("connection reset"), StorageUnavailable),
        (_auth_error(None), StorageUnavailable),  # e.g. no managed identity token yet
        (_auth_error(401), StorageError),
        (_http_error(403), StorageError),
        (ResourceNotFoundError("no such index"), StorageError),
        (_http_error(408), StorageUnavailable),
        (_http_error(429), StorageUnavailable),
        (_http_error(500), StorageUnavailable),
        (_http_error(503), StorageUnavailable),
        (_http_error(400), StorageError),
        (AzureError("anything else"), StorageError),
    ],
)
def test_every_sdk_error_is_mapped(error: AzureError, expected: type[StorageError]) -> None:
    with pytest.raises(StorageError) as raised, map_search_errors():
        raise error
    assert type(raised.value) is expected
    assert raised.value.__cause__ is error
