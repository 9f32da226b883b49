"""One wrapper for every HTTP handler: request id, services, caller, error rendering,
one log line.

The entry point (``function_app.py``) hands each route its request and where the services
come from (:func:`memnet.bootstrap.services`); the wrapper builds the handler's
:class:`RequestContext` (the services, the authenticated caller, the request id), so a
handler reaches for no global. Any :class:`MemnetError` becomes the spec 10.7 payload;
anything else becomes a 500 carrying only the request id (the traceback goes to the log,
never to the caller).
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from memnet.api.access import caller_of
from memnet.api.errors import error_response
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.unambiguous import refuse_ambiguous
from memnet.container import Services
from memnet.domain.callers import Caller
from memnet.domain.errors import MemnetError, Unavailable
from memnet.ports import StorageError
from memnet.services import telemetry

log = logging.getLogger("memnet.api")


@dataclass(frozen=True)
class RequestContext:
    """What a handler works with besides the request itself."""

    services: Services
    caller: Caller
    request_id: str


ServicesSource = Callable[[], Services]
"""Where the services come from: called once per request, inside the error mapping (a
build that failed is a ``503 NOT_READY`` like any other error)."""
Handler = Callable[[ApiRequest, RequestContext], ApiResponse]
PublicHandler = Callable[[ApiRequest, ServicesSource], ApiResponse]
Endpoint = Callable[[ApiRequest, ServicesSource], ApiResponse]
Answer = Callable[[ApiRequest, ServicesSource, str], ApiResponse]


_UNAVAILABLE = Unavailable("Storage is unavailable; retry with the same Idempotency-Key.")


def new_request_id() -> str:
    return f"req_{secrets.token_hex(12)}"


def _internal(request_id: str) -> ApiResponse:
    return error_response(MemnetError("Internal error; quote the request id."), request_id)


def endpoint(
    *, write: bool | None = None, metered: bool = True, userless: bool = False
) -> Callable[[Handler], Endpoint]:
    """Wrap ``handler(request, context)``: the caller authenticated first (401 before
    anything else), as :func:`memnet.api.access.caller_of` with ``write``, ``metered``
    and ``userless``."""

    def wrap(handler: Handler) -> Endpoint:
        def answer(request: ApiRequest, source: ServicesSource, request_id: str) -> ApiResponse:
            services = source()
            caller = caller_of(request, services, write=write, metered=metered, userless=userless)
            return handler(request, RequestContext(services, caller, request_id))

        return _served(handler, answer)

    return wrap


def public(handler: PublicHandler) -> Endpoint:
    """Wrap an unauthenticated ``handler(request, source)`` (health, the OpenAPI document),
    which fetches the services only if it needs them."""

    def answer(request: ApiRequest, source: ServicesSource, request_id: str) -> ApiResponse:
        return handler(request, source)

    return _served(handler, answer)


def _served(handler: Handler | PublicHandler, answer: Answer) -> Endpoint:
    """``answer`` with a request id, error mapping, a span, a metric and one log line."""
    name = handler.__name__  # the endpoint attribute of spans and metrics

    @functools.wraps(handler)
    def run(request: ApiRequest, source: ServicesSource) -> ApiResponse:
        request_id, started = new_request_id(), time.perf_counter()
        with telemetry.request_span(name, request.method, request_id) as span:
            response = _answer(answer, request, source, request_id)
            millis = (time.perf_counter() - started) * 1000
            if span is not None:
                span.set_attribute("http.response.status_code", response.status)
            telemetry.request_finished(name, request.method, response.status, millis)
            log.info(
                "request_id=%s %s %s -> %d in %.1f ms",
                request_id,
                request.method,
                request.path,
                response.status,
                millis,
                extra={"memnet.request_id": request_id},  # an attribute of the exported log
            )
        return response

    return run


def _answer(
    answer: Answer, request: ApiRequest, source: ServicesSource, request_id: str
) -> ApiResponse:
    """The handler's response, or the error payload of what it raised. A request whose
    target or encoding could mean two things is refused before the handler runs."""
    try:
        refuse_ambiguous(request)
        response = answer(request, source, request_id)
    except MemnetError as error:
        response = error_response(error, request_id)
    except StorageError:
        log.warning("request_id=%s storage unavailable", request_id, exc_info=True)
        response = error_response(_UNAVAILABLE, request_id)
    except Exception:
        log.exception("request_id=%s unhandled error", request_id)
        response = _internal(request_id)
    response.headers["x-request-id"] = request_id
    response.headers.setdefault("X-Content-Type-Options", "nosniff")  # never sniffed as a page
    return response
