"""Event vectors in the Azure AI Search index (issue 16, hybrid retrieval): the index
definition's vector part and the pure shapes and arithmetic behind
:meth:`~memnet.adapters.azure.search.AzureSearchIndex.put_vectors`, ``stale_vectors`` and
``nearest`` (the SDK calls stay in :mod:`.search`, behind its one error boundary).

Fields added to ``search_index.json``'s lexical definition only when the index is built
with a vector size: ``digest_vector`` (``Collection(Edm.Single)``, searchable, not
retrievable, ``dimensions`` N, profile ``memnet-vectors``: HNSW, cosine), ``vector_model``
(filterable: a dense search only sees vectors of its own model) and ``vector_hash`` (what
text the vector was embedded from). The JSON file stays the lexical index alone, so an
index built without vectors is today's index, byte for byte.

Vectors go out at unit length (cosine ignores length; unit vectors also keep a later
switch to the cheaper ``dotProduct`` metric possible without re-embedding). The service's
``@search.score`` for cosine is ``1 / (1 + cosine_distance)`` with ``cosine_distance =
1 - cosine`` (range 1/3 .. 1, "Relevance in vector search", learn.microsoft.com);
:func:`cosine` turns it back into the cosine in [-1, 1] the embedded index reports, so a
fused score means the same on both.

Tested at the HTTP-transport level only (tests/contract/test_azure_search_vectors.py):
Azure AI Search has no emulator and cannot be reached from the test environment.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

PROFILE = "memnet-vectors"
ALGORITHM = "memnet-hnsw"
VECTOR_FIELD = "digest_vector"
LOOKUP_PAGE = 1000  # keys per stale-vector lookup (one search.in, one result page)
_NOT_FOUND = 404  # a merge of a key the index does not hold


def vector_definition(dimensions: int) -> dict[str, Any]:
    """The fields and ``vectorSearch`` section a vector index adds to the lexical one."""
    hidden = {"filterable": False, "sortable": False, "facetable": False}
    return {
        "fields": [
            {
                "name": VECTOR_FIELD,
                "type": "Collection(Edm.Single)",
                "searchable": True,
                "retrievable": False,
                **hidden,
                "dimensions": dimensions,
                "vectorSearchProfile": PROFILE,
            },
            {
                "name": "vector_model",
                "type": "Edm.String",
                "searchable": False,
                "filterable": True,
                "sortable": False,
                "facetable": False,
                "retrievable": True,
            },
            {"name": "vector_hash", "type": "Edm.String", "searchable": False, "retrievable": True}
            | hidden,
        ],
        "vectorSearch": {
            "algorithms": [
                {"name": ALGORITHM, "kind": "hnsw", "hnswParameters": {"metric": "cosine"}}
            ],
            "profiles": [{"name": PROFILE, "algorithm": ALGORITHM}],
        },
    }


def with_vectors(definition: dict[str, Any], dimensions: int | None) -> dict[str, Any]:
    """The lexical definition, plus the vector part when a size is given."""
    if dimensions is None:
        return definition
    extra = vector_definition(dimensions)
    return {
        **definition,
        "fields": [*definition["fields"], *extra["fields"]],
        "vectorSearch": extra["vectorSearch"],
    }


def unit(vector: Sequence[float], dimensions: int | None = None) -> list[float]:
    """A vector as sent: unit length. A zero or non-finite vector is refused (as the
    embedded index does), and so is one of another size than the index's."""
    values = [float(x) for x in vector]
    if not values or not all(math.isfinite(x) for x in values):
        raise ValueError("a vector must be a non-zero list of finite numbers")
    largest = max(abs(x) for x in values)
    if largest == 0.0:
        raise ValueError("a vector must be a non-zero list of finite numbers")
    values = [x / largest for x in values]  # scaled first: 1e200 squared does not overflow
    norm = math.sqrt(math.fsum(x * x for x in values))
    if dimensions is not None and len(values) != dimensions:
        raise ValueError(f"a vector of {len(values)} numbers; the index holds {dimensions}")
    return [x / norm for x in values]


def merge_document(key: str, model: str, text_hash: str, vector: list[float]) -> dict[str, Any]:
    return {"id": key, VECTOR_FIELD: vector, "vector_model": model, "vector_hash": text_hash}


def stored(results: Sequence[Any]) -> tuple[int, list[Any]]:
    """(documents merged, failures other than "not in the index"): a merge of a key the
    index does not hold answers 404 for that item, and that event is skipped."""
    failed = [r for r in results if not r.succeeded and r.status_code != _NOT_FOUND]
    return sum(1 for r in results if r.succeeded), failed


def stale(
    model: str,
    wanted: Sequence[tuple[str, str]],
    keys: Sequence[str],
    found: dict[str, tuple[Any, Any]],
) -> list[str]:
    """The event ids of ``wanted`` (in its order) with no vector of this model and text:
    ``found`` maps a key the lookup returned to its stored (vector_model, vector_hash)."""
    return [
        event_id
        for (event_id, text_hash), key in zip(wanted, keys, strict=True)
        if found.get(key) != (model, text_hash)
    ]


def cosine(score: float) -> float:
    """The cosine behind a cosine-metric ``@search.score`` (``1 / (2 - cosine)``)."""
    if score <= 0.0:
        return -1.0
    return max(-1.0, min(1.0, 2.0 - 1.0 / score))
