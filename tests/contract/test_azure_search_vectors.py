"""Event vectors in the Azure AI Search adapter (memnet/adapters/azure/search_vectors.py and
the vector methods of AzureSearchIndex), at the HTTP level.

As in test_azure_search_transport.py, the real SDK clients run over a recording transport
answering with response shapes as the service returns them (tests/data/azure_search):
NOT run against a live service (none is reachable from here); the shapes follow the REST
reference and docs (api-version 2026-04-01). The behaviour mirrors what
tests/contract/test_search_vectors.py promises for the embedded index: vectors only for
events the index holds, stale by model or text, cosine scores, zero and non-finite
vectors refused, a vector of another size finds nothing.

Taken from the documentation (vector-search-how-to-create-index, vector-search-ranking,
the filter pages) and the SDK 12.0.0 source: the vector field (`Collection(Edm.Single)`,
`dimensions`, `vectorSearchProfile`), the `vectorSearch` section (hnsw, cosine,
profiles), the vector query (`vectorQueries` kind/vector/k/fields/exhaustive,
`vectorFilterMode: preFilter`), the cosine score `1 / (1 + (1 - cos))`, per-item results
of a merge in a 207. Assumed, not confirmed: that merging a key the index lacks answers
a per-item 404 (the docs say it fails, not with which code), the wording of the per-item
400 for a vector of the wrong size, that a missing key is simply absent from a
`search.in` lookup, that 1,000 keys in one `search.in` fit the request limits (POST
body), and that HNSW parameters left out take the service defaults.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from azure.core.credentials import AzureKeyCredential

from memnet.adapters.azure.search import INDEX_DEFINITION, AzureSearchIndex, document_key
from memnet.adapters.azure.search_vectors import cosine
from memnet.adapters.azure.search_vectors import unit as azure_unit
from memnet.domain.errors import ConfigError
from memnet.ports import EventHit, EventQuery, StorageError, StorageUnavailable, VectorIndex
from memnet.services.search.vectors import EventVectors
from memnet.wiring import event_vectors
from tests.contract.test_azure_search_transport import (
    DOCS,
    ENDPOINT,
    INDEX,
    SEARCH_KEY,
    RecordingTransport,
    shape,
)

M = "test-model@3"
USER = "O'Brien"


@pytest.fixture
def transport() -> RecordingTransport:
    return RecordingTransport()


@pytest.fixture
def index(transport: RecordingTransport) -> AzureSearchIndex:
    credential = AzureKeyCredential(SEARCH_KEY)
    return AzureSearchIndex(
        ENDPOINT, INDEX, credential, vector_dimensions=3, transport=transport, retry_total=0
    )


@pytest.fixture
def lexical(transport: RecordingTransport) -> AzureSearchIndex:
    credential = AzureKeyCredential(SEARCH_KEY)
    return AzureSearchIndex(ENDPOINT, INDEX, credential, transport=transport, retry_total=0)


def query(**fields: Any) -> EventQuery:
    return EventQuery(tenant_id="t1", user_id=USER, **fields)


def fields_of(definition: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in definition["fields"]}


# --- the index definition -----------------------------------------------------------


def test_the_azure_index_is_a_vector_index(index: AzureSearchIndex) -> None:
    assert isinstance(index, VectorIndex)


def test_without_a_vector_size_the_definition_is_the_lexical_json(
    lexical: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((201, shape("index_created.json")))
    lexical.ensure_index()
    body = transport.sent[0].body
    assert body == json.loads(INDEX_DEFINITION.read_text())
    assert "vectorSearch" not in body
    assert not {"digest_vector", "vector_model", "vector_hash"} & set(fields_of(body))


def test_with_a_vector_size_the_definition_gains_the_vector_fields(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((201, shape("index_created.json")))
    index.ensure_index()
    body = transport.sent[0].body
    lexical = json.loads(INDEX_DEFINITION.read_text())
    assert body["fields"][: len(lexical["fields"])] == lexical["fields"]  # unchanged, first
    assert {k: v for k, v in body.items() if k not in ("fields", "vectorSearch")} == {
        k: v for k, v in lexical.items() if k != "fields"
    }
    fields = fields_of(body)
    vector = fields["digest_vector"]
    assert vector["type"] == "Collection(Edm.Single)"
    assert (vector["dimensions"], vector["vectorSearchProfile"]) == (3, "memnet-vectors")
    assert vector["searchable"] is True and vector["retrievable"] is False
    assert not any(vector[a] for a in ("filterable", "sortable", "facetable"))
    assert fields["vector_model"]["type"] == fields["vector_hash"]["type"] == "Edm.String"
    assert fields["vector_model"]["filterable"] and fields["vector_model"]["retrievable"]
    assert fields["vector_hash"]["retrievable"] and not fields["vector_hash"]["filterable"]
    (profile,) = body["vectorSearch"]["profiles"]
    (algorithm,) = body["vectorSearch"]["algorithms"]
    assert profile == {"name": "memnet-vectors", "algorithm": algorithm["name"]}
    assert algorithm["kind"] == "hnsw"
    assert algorithm["hnswParameters"]["metric"] == "cosine"


def test_the_vector_size_is_the_configured_one(transport: RecordingTransport) -> None:
    wide = AzureSearchIndex(
        ENDPOINT, INDEX, AzureKeyCredential("k"), vector_dimensions=1536, transport=transport
    )
    transport.answers.append((201, shape("index_created.json")))
    wide.ensure_index()
    assert fields_of(transport.sent[0].body)["digest_vector"]["dimensions"] == 1536
    with pytest.raises(ValueError):
        AzureSearchIndex(ENDPOINT, INDEX, vector_dimensions=0)


# --- storing vectors ------------------------------------------------------------------


def test_put_vectors_merges_the_three_fields_by_key_at_unit_length(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((207, shape("vectors_merged.json")))
    stored = index.put_vectors(
        "t1", "u1", M, [("evt_01", "h1", [3.0, 4.0, 0.0]), ("gone", "h2", [0, 0, 1])]
    )
    assert stored == 1  # the 404 of the key the index does not hold: skipped, not counted
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("POST", f"{DOCS}/search.index")
    first, second = sent.body["value"]
    assert first["@search.action"] == second["@search.action"] == "merge"  # never creates
    assert set(first) == {"@search.action", "id", "digest_vector", "vector_model", "vector_hash"}
    assert first["id"] == document_key("t1", "u1", "evt_01")
    assert first["digest_vector"] == pytest.approx([0.6, 0.8, 0.0])
    assert (first["vector_model"], first["vector_hash"]) == (M, "h1")
    assert second["id"] == document_key("t1", "u1", "gone")


def test_put_vectors_sends_at_most_1000_per_request(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers += [(207, shape("vectors_merged.json"))] * 2
    assert index.put_vectors("t1", "u1", M, [(f"e{i}", "h", [1, 0, 0]) for i in range(1001)]) == 2
    assert [len(s.body["value"]) for s in transport.sent] == [1000, 1]


def test_a_vector_the_service_rejects_fails_put_vectors(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((207, shape("vectors_rejected.json")))
    with pytest.raises(StorageError) as raised:
        index.put_vectors("t1", "u1", M, [("evt_01", "h", [1, 0, 0])])
    assert not isinstance(raised.value, StorageUnavailable)


@pytest.mark.parametrize(
    "bad", [[0.0, 0.0, 0.0], [math.nan, 1.0, 0.0], [math.inf, 0, 0], [], [1.0, 0.0]]
)
def test_zero_non_finite_and_wrong_size_vectors_are_refused_before_sending(
    index: AzureSearchIndex,
    transport: RecordingTransport,
    bad: list[float],
) -> None:
    with pytest.raises(ValueError):
        index.put_vectors("t1", "u1", M, [("a", "h", [1, 0, 0]), ("b", "h", bad)])
    if len(bad) == 3 or not bad:
        with pytest.raises(ValueError):
            index.nearest(query(), M, bad)
    assert transport.sent == []


# --- stale vectors --------------------------------------------------------------------


def test_stale_vectors_looks_the_keys_up_in_the_users_scope(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((200, shape("vectors_lookup.json")))
    wanted = [("it's", "h1"), ("b", "h2"), ("c", "h3"), ("d", "h4"), ("e", "h5")]
    assert index.stale_vectors("t1", USER, M, wanted) == ["b", "c", "d", "e"]
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("POST", f"{DOCS}/search.post.search")
    keys = [document_key("t1", USER, event_id) for event_id, _ in wanted]
    assert sent.body["filter"] == (
        f"tenant_id eq 't1' and user_id eq 'O''Brien' and search.in(id, '{','.join(keys)}', ',')"
    )
    assert sent.body["select"] == "id,vector_model,vector_hash"
    assert sent.body["top"] == len(wanted)


def test_stale_vectors_keeps_the_order_asked_for(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((200, {"value": []}))
    wanted = [("z", "h"), ("a", "h"), ("m", "h")]
    assert index.stale_vectors("t1", USER, M, wanted) == ["z", "a", "m"]


def test_stale_vectors_asks_at_most_1000_keys_per_query(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers += [(200, {"value": []})] * 2
    wanted = [(f"e{i}", "h") for i in range(1001)]
    assert len(index.stale_vectors("t1", "u1", M, wanted)) == 1001
    assert [s.body["top"] for s in transport.sent] == [1000, 1]
    assert (
        transport.sent[1]
        .body["filter"]
        .endswith(f"search.in(id, '{document_key('t1', 'u1', 'e1000')}', ',')")
    )


def test_stale_vectors_of_nothing_sends_nothing(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    assert index.stale_vectors("t1", "u1", M, []) == []
    assert transport.sent == []


# --- nearest --------------------------------------------------------------------------


def test_nearest_sends_a_prefiltered_vector_query(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((200, shape("search_vector.json")))
    index.nearest(query(top_k=4, service_ids=("s1",)), "it's-model@3", [0.0, 2.0, 0.0])
    (sent,) = transport.sent
    assert (sent.method, sent.path) == ("POST", f"{DOCS}/search.post.search")
    assert "search" not in sent.body  # a pure vector query: no text, no BM25
    (knn,) = sent.body["vectorQueries"]
    assert knn["kind"] == "vector"
    assert knn["vector"] == [0.0, 1.0, 0.0]
    assert (knn["k"], knn["fields"], knn["exhaustive"]) == (4, "digest_vector", False)
    assert sent.body["filter"] == (
        "tenant_id eq 't1' and user_id eq 'O''Brien' and search.in(service_id, 's1', ',')"
        " and vector_model eq 'it''s-model@3'"
    )
    assert sent.body["vectorFilterMode"] == "preFilter"
    assert sent.body["select"] == "id,timestamp"
    assert sent.body["top"] == 4


def test_nearest_filters_classes_before_the_neighbours_are_chosen(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((200, shape("search_vector.json")))
    index.nearest(query(top_k=4, classes=("a2p-v1:restricted",)), M, [0.0, 2.0, 0.0])
    (sent,) = transport.sent
    assert (
        " and (sensitivity eq null or search.in(sensitivity, 'a2p-v1:restricted', ','))"
        in (sent.body["filter"])
    )
    assert sent.body["vectorFilterMode"] == "preFilter"  # hidden events never crowd them out


def test_nearest_scores_are_cosines_best_first(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((200, shape("search_vector.json")))
    hits = index.nearest(query(top_k=4), M, [1.0, 0.0, 0.0])
    assert [h.event_id for h in hits] == ["evt_02", "evt_01", "evt_03", "evt_04"]
    assert [round(h.score, 5) for h in hits] == [1.0, 0.4, 0.0, -1.0]
    assert hits[1] == EventHit("evt_01", pytest.approx(0.4), "2026-02-13T08:30:00.123000Z")


@pytest.mark.parametrize(
    ("similarity", "score"), [(1.0, 1.0), (0.6, 1 / 1.4), (0.0, 0.5), (-1.0, 1 / 3)]
)
def test_the_search_score_is_turned_back_into_the_cosine(similarity: float, score: float) -> None:
    # the service's cosine score: 1 / (1 + cosine distance), distance = 1 - similarity
    assert score == pytest.approx(1 / (1 + (1 - similarity)))
    assert cosine(score) == pytest.approx(similarity)


def test_cosine_stays_within_its_range() -> None:
    assert cosine(0.0) == -1.0
    assert cosine(1.0000001) == 1.0


def test_nearest_of_nothing_or_another_size_sends_nothing(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    assert index.nearest(query(top_k=0), M, [1, 0, 0]) == []
    assert index.nearest(query(), M, [1.0, 0.0]) == []  # as the embedded index: not scored
    assert transport.sent == []


# --- without vectors, and failures ---------------------------------------------------


def test_an_index_without_a_vector_size_refuses_the_vector_methods(
    lexical: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    with pytest.raises(StorageError):
        lexical.put_vectors("t1", "u1", M, [("a", "h", [1, 0, 0])])
    with pytest.raises(StorageError):
        lexical.stale_vectors("t1", "u1", M, [("a", "h")])
    with pytest.raises(StorageError):
        lexical.nearest(query(), M, [1, 0, 0])
    assert transport.sent == []


@pytest.mark.parametrize("method", ["put_vectors", "stale_vectors", "nearest"])
def test_503_on_every_vector_call_is_storage_unavailable(
    index: AzureSearchIndex,
    transport: RecordingTransport,
    method: str,
) -> None:
    transport.answers.append((503, shape("service_unavailable.json")))
    calls = {
        "put_vectors": lambda: index.put_vectors("t1", "u1", M, [("a", "h", [1, 0, 0])]),
        "stale_vectors": lambda: index.stale_vectors("t1", "u1", M, [("a", "h")]),
        "nearest": lambda: index.nearest(query(), M, [1, 0, 0]),
    }
    with pytest.raises(StorageUnavailable):
        calls[method]()
    assert len(transport.sent) == 1


def test_400_on_a_vector_query_is_a_storage_error(
    index: AzureSearchIndex,
    transport: RecordingTransport,
) -> None:
    transport.answers.append((400, shape("bad_request.json")))
    with pytest.raises(StorageError) as raised:
        index.nearest(query(), M, [1, 0, 0])
    assert not isinstance(raised.value, StorageUnavailable)


# --- wiring ---------------------------------------------------------------------------


class FixedEmbedder:
    model, dimensions = M, 3

    def embed(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    def describe(self) -> str:
        return "fixed"


def test_bootstrap_wires_an_azure_index_with_a_vector_size(index: AzureSearchIndex) -> None:
    assert isinstance(event_vectors(index, FixedEmbedder()), EventVectors)


def test_bootstrap_refuses_an_embedder_over_a_lexical_azure_index(
    lexical: AzureSearchIndex,
) -> None:
    with pytest.raises(ConfigError, match="keeps no vectors"):
        event_vectors(lexical, FixedEmbedder())
    assert event_vectors(lexical, None) is None


@pytest.mark.parametrize("size", [1e200, 1e-200])
def test_huge_or_tiny_finite_vectors_are_scaled_as_the_embedded_index_does(size: float) -> None:
    assert [round(x, 6) for x in azure_unit([size, size])] == [0.707107, 0.707107]
