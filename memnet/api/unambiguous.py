"""What every request must say plainly before any handler reads it (docs/api.md,
"Request targets and encodings"): one spelling per resource, and no header that changes
what the body means unless the API understands it.

Routing on either host forgives spellings that a client may not mean: a trailing slash
is insignificant in ASP.NET Core routing and in funchost, so ``…/projects/x.json/`` and
``…/projects/x.json//`` would reach (and create) ``x.json``. Here the path as the client
sent it is checked, so a mistake is a 400 on both hosts rather than a write somewhere
the client did not name. ``Content-Encoding`` is refused rather than ignored: a gzip
body read as JSON fails confusingly, and one that happened to parse would be read wrong.
"""

from __future__ import annotations

from memnet.api.http import ApiRequest
from memnet.domain.errors import BadRequest, UnsupportedMediaType

_IDENTITY = ("", "identity")


def refuse_ambiguous(request: ApiRequest) -> None:
    """Raise 400 ``INVALID_PATH`` for an empty path segment (``//``) or a trailing slash
    where the route did not end in an empty catch-all (a namespace's listing,
    ``…/documents/{namespace}/``, is the one collection whose address ends in ``/``);
    415 ``UNSUPPORTED_MEDIA_TYPE`` for a ``Content-Encoding`` other than ``identity``."""
    _check_path(request)
    _check_content_coding(request)


def _check_path(request: ApiRequest) -> None:
    path = request.path
    if "//" in path:
        raise _bad_path("The path has an empty segment ('//'); send each segment once.")
    listing = "" in request.route_params.values()  # only a catch-all can match ""
    if path.endswith("/") and len(path) > 1 and not listing:
        raise _bad_path("The path ends in '/'; name the resource without it.")


def _bad_path(message: str) -> BadRequest:
    return BadRequest(message, code="INVALID_PATH", location=["path"])


def _check_content_coding(request: ApiRequest) -> None:
    coding = (request.header("content-encoding") or "").strip().lower()
    if coding not in _IDENTITY:
        raise UnsupportedMediaType(
            "Content-Encoding is not supported: send the body uncompressed.",
            content_encoding=coding[:100],
            location=["header", "Content-Encoding"],
        )
