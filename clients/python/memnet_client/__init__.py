"""mem.net client: typed calls, automatic idempotency keys, bounded retries, and
``update()``, the read-change-write loop that never loses an update."""

from memnet_client.auth import AccessTokenLike, TokenCredential
from memnet_client.client import MemnetClient
from memnet_client.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    MemnetError,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    PreconditionRequired,
    RateLimited,
    ServerError,
    ServiceUnavailable,
    TransportError,
    Unauthorized,
    Unprocessable,
    UnsupportedMediaType,
    UpdateConflict,
)
from memnet_client.models import (
    Change,
    Context,
    ContextDocument,
    Document,
    Event,
    EventWrite,
    History,
    Job,
    Replay,
    SearchHit,
    SearchResults,
    WriteResult,
)
from memnet_client.retries import RetryPolicy

__all__ = [
    "MemnetClient",
    "RetryPolicy",
    "TokenCredential",
    "AccessTokenLike",
    # results
    "Document",
    "WriteResult",
    "History",
    "Change",
    "Context",
    "ContextDocument",
    "Event",
    "EventWrite",
    "SearchHit",
    "SearchResults",
    "Replay",
    "Job",
    # errors
    "MemnetError",
    "TransportError",
    "ApiError",
    "BadRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "Conflict",
    "PreconditionFailed",
    "PreconditionRequired",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "Unprocessable",
    "RateLimited",
    "ServerError",
    "ServiceUnavailable",
    "UpdateConflict",
]
