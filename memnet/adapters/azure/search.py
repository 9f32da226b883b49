"""The Azure :class:`~memnet.ports.SearchIndex`, over ``azure-search-documents`` (sync).

The index is the one docs/operations.md ("Events: queue and search index") describes, written out in
``search_index.json`` and applied by :meth:`AzureSearchIndex.ensure_index`: key ``id`` =
URL-safe base64 of ``tenant|user|event_id`` (also filterable and sortable, so
:meth:`~AzureSearchIndex.list_event_ids` can page by key past the 100,000 ``$skip``
limit), ``digest`` and ``keywords`` searchable with the ``memnet_text`` analyzer (words
split where a character is not a letter, digit or mark, lowercase, ASCII folding, the
Porter stemmer: the embedded index's FTS5 ``porter unicode61 remove_diacritics 2``), BM25
with keywords weighted 1.5 (the default scoring profile, as in the SQLite index).

Every query's OData filter starts with ``tenant_id eq '..' and user_id eq '..'``; string
literals double their single quotes, collections match with ``any()`` + ``search.in``.
A query with ``classes`` (a caller below some sensitivity class, :mod:`memnet.services.
event_classes`) adds ``(sensitivity eq null or search.in(sensitivity, ..))``: the
``sensitivity`` field (filterable, not retrievable) holds an event's class label. An
index created before the field existed gains it in place by the idempotent PUT of
``ensure_index`` (adding a field is allowed); every event it holds then has none (null),
which is right: events had no classes before it.
The query text is reduced to its words first, as the embedded index does
(:func:`memnet.domain.search_words.query_words`: English stop words dropped unless nothing
else remains), and only those words, space-separated, go to the simple parser with
``searchMode=any``: no operator character can reach it. Text without a word is treated
as empty: ``*`` ordered by ``timestamp desc``.

Vectors (issue 16; :mod:`.search_vectors`): with ``vector_dimensions`` N the index also
holds ``digest_vector`` (``Collection(Edm.Single)`` of N, HNSW, cosine, not retrievable),
``vector_model`` (filterable) and ``vector_hash``; without, it is the lexical index
unchanged. ``put_vectors`` *merges* them into documents the index holds (``upsert`` keeps
them, ``delete`` drops them). ``nearest`` is a vector query (k = ``top_k``, no search text)
with the user's filter and ``vector_model eq ..`` as a ``preFilter`` (the k nearest among
the user's events, not overall), HNSW (approximate; the embedded index is exact); its
``@search.score``, ``1 / (1 + cosine distance)``, is turned back into the cosine. Upgrade:
the idempotent PUT of ``ensure_index`` may add fields, so an index with this version's
analyzer gains vectors in place (an index from before the ``memnet_text`` analyzer must
be rebuilt: docs/operations.md); a changed vector size cannot
change a field: it needs a new index (a new ``MEMNET_SEARCH_INDEX``, then a reindex).

Every SDK exception is translated in one place, :func:`map_search_errors`. The
constructor does no I/O; clients are built on first use, once per index object. Tested
over the HTTP transport with recorded response shapes: the service is not reachable.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

from azure.core.credentials import AzureKeyCredential
from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    ServiceRequestError,
    ServiceResponseError,
)
from azure.search.documents import SearchClient
from azure.search.documents.indexes import SearchIndexClient
from azure.search.documents.models import VectorizedQuery

from memnet.adapters.azure import search_vectors as vectors
from memnet.domain.search_words import query_words
from memnet.domain.timestamps import normalise_timestamp
from memnet.ports import EventHit, EventQuery, IndexedEvent, StorageError, StorageUnavailable

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

    Credential = AzureKeyCredential | TokenCredential

INDEX_DEFINITION = Path(__file__).with_name("search_index.json")
SEARCH_FIELDS = ["digest", "keywords"]
BATCH = 1000  # documents per indexing request (the service's limit)
PAGE = 1000
_DELIMITERS = ",|;~^#"
_TRANSIENT_STATUSES = frozenset({408, 429})
_TRANSIENT_ITEM_STATUSES = frozenset({409, 422, 503})  # per-document retryable (SDK's list)


class AzureSearchIndex:
    """Event digests in one Azure AI Search index; every query scoped to one user."""

    def __init__(
        self,
        endpoint: str,
        index_name: str,
        credential: Credential | None = None,
        *,
        vector_dimensions: int | None = None,
        **options: Any,
    ) -> None:
        """``vector_dimensions``: the embedder's vector size, to keep vectors (None: a
        lexical index; the vector methods then fail). ``options`` go to both SDK clients
        (``transport``, ``retry_total``, ...)."""
        if vector_dimensions is not None and vector_dimensions < 1:
            raise ValueError("vector_dimensions must be positive")
        self.vector_dimensions = vector_dimensions
        self._endpoint = endpoint
        self._index_name = index_name
        self._credential = credential
        self._options = options
        self._clients: tuple[SearchIndexClient, SearchClient] | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_settings(
        cls,
        endpoint: str,
        index_name: str,
        api_key: str | None = None,
        vector_dimensions: int | None = None,
    ) -> AzureSearchIndex:
        """An api-key index when a key is set, else identity-based (DefaultAzureCredential)."""
        credential = AzureKeyCredential(api_key) if api_key else None
        return cls(endpoint, index_name, credential, vector_dimensions=vector_dimensions)

    def describe(self) -> str:
        return f"azure ai search index {self._index_name} at {self._endpoint}"

    def erase_deleted(self) -> None:
        """Nothing to do: the service drops deleted documents from its segments when it
        merges them, on its own schedule, and offers no call to force it."""

    def ensure_index(self) -> None:
        """Create the index, or update it to ``search_index.json`` (idempotent PUT), with
        the vector fields when the index has a vector size."""
        lexical = {**json.loads(INDEX_DEFINITION.read_text()), "name": self._index_name}
        definition = vectors.with_vectors(lexical, self.vector_dimensions)
        with map_search_errors():
            self._index_client.create_or_update_index(definition)

    def upsert(self, events: list[IndexedEvent]) -> None:
        """mergeOrUpload with every field set, so an existing entry is fully replaced."""
        documents = [document(event) for event in events]
        self._send(self._documents.merge_or_upload_documents, documents)

    def delete(self, tenant_id: str, user_id: str, event_ids: list[str]) -> None:
        """Delete by key; the service reports missing keys as deleted."""
        keys = [{"id": document_key(tenant_id, user_id, event_id)} for event_id in event_ids]
        self._send(self._documents.delete_documents, keys)

    def search(self, query: EventQuery) -> list[EventHit]:
        """Best first (BM25) for text, else newest first; only the query's tenant and user."""
        if query.top_k <= 0:
            return []
        text = search_text(query.text)
        with map_search_errors():
            results = self._documents.search(
                search_text=text or "*",
                filter=odata_filter(query),
                top=query.top_k,
                order_by=None if text else ["timestamp desc"],
                search_fields=SEARCH_FIELDS,
                query_type="simple",
                search_mode="any",
                select=["id", "timestamp"],
            )
            return [_hit(result) for result in islice(results, query.top_k)]

    # -- vectors (hybrid retrieval: .search_vectors) ------------------------------------

    def put_vectors(
        self, tenant_id: str, user_id: str, model: str, rows: list[tuple[str, str, list[float]]]
    ) -> int:
        """Merge (event_id, text_hash, vector) into the events the index holds; a key it
        does not hold answers 404 and is skipped (never created vector-only)."""
        size = self._vector_size()
        documents = [
            vectors.merge_document(
                document_key(tenant_id, user_id, event_id), model, text_hash, vectors.unit(v, size)
            )
            for event_id, text_hash, v in rows
        ]  # every vector checked before the first request
        merged = 0
        for start in range(0, len(documents), BATCH):
            with map_search_errors():
                results = self._documents.merge_documents(documents[start : start + BATCH])
            count, failed = vectors.stored(results)
            _check_results(failed)
            merged += count
        return merged

    def stale_vectors(
        self, tenant_id: str, user_id: str, model: str, wanted: list[tuple[str, str]]
    ) -> list[str]:
        """The event ids of ``wanted`` (in order) without a vector of this model and text,
        looked up by key within the user's scope, at most 1000 keys per query."""
        self._vector_size()
        keys = [document_key(tenant_id, user_id, event_id) for event_id, _ in wanted]
        found: dict[str, tuple[Any, Any]] = {}
        for start in range(0, len(keys), vectors.LOOKUP_PAGE):
            page = keys[start : start + vectors.LOOKUP_PAGE]
            expression = f"{_scope_filter(tenant_id, user_id)} and {_any_of('id', page)}"
            with map_search_errors():
                results = self._documents.search(
                    search_text="*",
                    filter=expression,
                    select=["id", "vector_model", "vector_hash"],
                    top=len(page),
                )
                for r in islice(results, len(page)):
                    found[str(r["id"])] = (r.get("vector_model"), r.get("vector_hash"))
        return vectors.stale(model, wanted, keys, found)

    def nearest(self, query: EventQuery, model: str, vector: list[float]) -> list[EventHit]:
        """Best first by cosine (the score is the cosine), among the query's user's events
        passing its filters with a vector of ``model``; a vector of another size finds
        nothing, as in the embedded index."""
        size = self._vector_size()
        probe = vectors.unit(vector)
        if query.top_k <= 0 or len(probe) != size:
            return []
        knn = VectorizedQuery(
            vector=probe,
            k_nearest_neighbors=query.top_k,
            fields=vectors.VECTOR_FIELD,
            exhaustive=False,
        )
        expression = f"{odata_filter(query)} and vector_model eq {odata_string(model)}"
        with map_search_errors():
            results = self._documents.search(
                search_text=None,
                filter=expression,
                vector_queries=[knn],
                vector_filter_mode="preFilter",
                select=["id", "timestamp"],
                top=query.top_k,
            )
            return [_hit(r, vectors.cosine) for r in islice(results, query.top_k)]

    def _vector_size(self) -> int:
        if self.vector_dimensions is None:
            raise StorageError("search index built without vectors (no vector_dimensions)")
        return self.vector_dimensions

    def list_event_ids(
        self, tenant_id: str | None, user_id: str | None = None
    ) -> Iterator[tuple[str, str, str]]:
        """Stream every entry in scope, a page at a time, keyed by ``id`` (no ``$skip``)."""
        scope = None if tenant_id is None else _scope_filter(tenant_id, user_id)
        after: str | None = None
        while True:
            page = self._keys_after(scope, after)
            yield from (identity(key) for key in page)
            if len(page) < PAGE:
                return
            after = page[-1]

    def _keys_after(self, scope: str | None, after: str | None) -> list[str]:
        parts = [p for p in (scope, after and f"id gt {odata_string(after)}") if p]
        expression = " and ".join(parts) or None
        with map_search_errors():
            results = self._documents.search(
                search_text="*", filter=expression, order_by=["id asc"], select=["id"], top=PAGE
            )
            return [str(result["id"]) for result in islice(results, PAGE)]

    def _send(self, action: Callable[..., Sequence[Any]], documents: list[dict[str, Any]]) -> None:
        for start in range(0, len(documents), BATCH):
            with map_search_errors():
                results = action(documents[start : start + BATCH])
            _check_results(results)

    @property
    def _index_client(self) -> SearchIndexClient:
        return self._built()[0]

    @property
    def _documents(self) -> SearchClient:
        return self._built()[1]

    def _built(self) -> tuple[SearchIndexClient, SearchClient]:
        if self._clients is None:
            with self._lock:
                if self._clients is None:
                    credential = self._credential or _default()
                    self._clients = (
                        SearchIndexClient(self._endpoint, credential, **self._options),
                        SearchClient(self._endpoint, self._index_name, credential, **self._options),
                    )
        return self._clients


def _default() -> TokenCredential:
    from azure.identity import DefaultAzureCredential  # slow import: only when used

    return DefaultAzureCredential()


# -- documents, keys and queries (pure) -------------------------------------------------


def document_key(tenant_id: str, user_id: str, event_id: str) -> str:
    """URL-safe base64 of ``tenant|user|event_id`` (keys allow letters, digits, _ - =)."""
    return base64.urlsafe_b64encode(f"{tenant_id}|{user_id}|{event_id}".encode()).decode()


def identity(key: str) -> tuple[str, str, str]:
    """(tenant, user, event_id) of a key; identifiers never contain ``|`` (docs/api.md,
    "Identifiers")."""
    tenant_id, user_id, event_id = base64.urlsafe_b64decode(key).decode().split("|", 2)
    return tenant_id, user_id, event_id


def document(event: IndexedEvent) -> dict[str, Any]:
    return {
        "id": document_key(event.tenant_id, event.user_id, event.event_id),
        "tenant_id": event.tenant_id,
        "user_id": event.user_id,
        "service_id": event.service_id,
        "source_type": event.source_type,
        "project_ids": list(event.project_ids),
        "keywords": list(event.keywords),
        "digest": event.digest,
        "timestamp": utc(event.timestamp),
        "snapshot_uri": event.snapshot_uri,
        "evidence": event.evidence,
        "sensitivity": event.sensitivity,
    }


def search_text(text: str) -> str | None:
    """The words a query searches, space-separated (no operator character is a word
    character); None if it has no word."""
    return " ".join(query_words(text)) or None


def odata_string(value: str) -> str:
    """An OData string literal: single quotes doubled."""
    return "'" + value.replace("'", "''") + "'"


def odata_filter(query: EventQuery) -> str:
    """Tenant and user first, always; then each filter, any-of within a field, AND-ed."""
    parts = [_scope_filter(query.tenant_id, query.user_id)]
    if query.since is not None:
        parts.append(f"timestamp ge {utc(query.since)}")
    if query.until is not None:
        parts.append(f"timestamp lt {utc(query.until)}")
    if query.service_ids:
        parts.append(_any_of("service_id", query.service_ids))
    if query.source_types:
        parts.append(_any_of("source_type", query.source_types))
    if query.project_ids:
        parts.append(f"project_ids/any(p: {_any_of('p', query.project_ids)})")
    if query.keywords:
        parts.append(f"keywords/any(k: {_any_of('k', query.keywords)})")
    if query.classes is not None:  # unclassified events, and those of the classes given
        shown = f" or {_any_of('sensitivity', query.classes)}" if query.classes else ""
        parts.append(f"(sensitivity eq null{shown})")
    return " and ".join(parts)


def _scope_filter(tenant_id: str, user_id: str | None) -> str:
    tenant = f"tenant_id eq {odata_string(tenant_id)}"
    return tenant if user_id is None else f"{tenant} and user_id eq {odata_string(user_id)}"


def _any_of(variable: str, values: Sequence[str]) -> str:
    """``search.in`` with a delimiter no value contains; else an ``eq`` disjunction."""
    delimiter = next((d for d in _DELIMITERS if not any(d in v for v in values)), None)
    if delimiter is None:
        return "(" + " or ".join(f"{variable} eq {odata_string(v)}" for v in values) + ")"
    listed = odata_string(delimiter.join(values))
    return f"search.in({variable}, {listed}, {odata_string(delimiter)})"


def utc(value: str) -> str:
    """An RFC 3339 timestamp as UTC ``...Z`` (:mod:`memnet.domain.timestamps`, the one parser;
    400 ``InvalidTimestamp`` otherwise)."""
    return normalise_timestamp(value)


def _hit(result: Mapping[str, Any], score: Callable[[float], float] = float) -> EventHit:
    return EventHit(
        event_id=identity(str(result["id"]))[2],
        score=score(float(result.get("@search.score") or 0.0)),
        timestamp=utc(str(result["timestamp"])),
    )


# -- the one error boundary -------------------------------------------------------------


@contextmanager
def map_search_errors() -> Iterator[None]:
    """Translate any Azure SDK exception raised inside into a :mod:`memnet.ports` error,
    chained to the original."""
    try:
        yield
    except AzureError as e:
        raise translate(e) from e


def translate(error: AzureError) -> StorageError:
    """Transient (network, token acquisition, 408, 429, 5xx) -> StorageUnavailable; any
    other (400 bad request, 401/403 rejected key, 404 missing index, ...) -> StorageError."""
    status = getattr(error, "status_code", None)
    name = type(error).__name__
    if isinstance(error, ServiceRequestError | ServiceResponseError):
        return StorageUnavailable(f"search service unreachable: {name}")
    if isinstance(error, ClientAuthenticationError) and status is None:
        return StorageUnavailable(f"search credential unavailable: {name}")
    if isinstance(status, int) and (status in _TRANSIENT_STATUSES or status >= 500):
        return StorageUnavailable(f"search service unavailable: {status}")
    return StorageError(f"search service error: {name} ({status})")


def _check_results(results: Sequence[Any]) -> None:
    """The service answers 207 when some documents failed; those fail the call."""
    failed = [r for r in results if not r.succeeded]
    if not failed:
        return
    detail = ", ".join(f"{r.status_code}: {r.error_message}" for r in failed[:3])
    if all(r.status_code in _TRANSIENT_ITEM_STATUSES for r in failed):
        raise StorageUnavailable(f"{len(failed)} documents not indexed, retryable ({detail})")
    raise StorageError(f"{len(failed)} documents not indexed ({detail})")
