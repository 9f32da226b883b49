"""One wrapper for every HTTP handler: request id, error rendering, one log line.

Any :class:`MemnetError` becomes the spec 10.7 payload; anything else becomes a 500
carrying only the request id (the traceback goes to the log, never to the caller).
"""

from __future__ import annotations

import functools
import logging
import secrets
import time
from collections.abc import Callable

from memnet.api.errors import error_response
from memnet.api.http import ApiRequest, ApiResponse
from memnet.api.unambiguous import refuse_ambiguous
from memnet.domain.errors import MemnetError, Unavailable
from memnet.ports import StorageError
from memnet.services import telemetry

log = logging.getLogger("memnet.api")
Handler = Callable[[ApiRequest, str], ApiResponse]


_UNAVAILABLE = Unavailable("Storage is unavailable; retry with the same Idempotency-Key.")


def new_request_id() -> str:
    return f"req_{secrets.token_hex(12)}"


def _internal(request_id: str) -> ApiResponse:
    return error_response(MemnetError("Internal error; quote the request id."), request_id)


def endpoint(handler: Handler) -> Callable[[ApiRequest], ApiResponse]:
    """Wrap ``handler(request, request_id)`` with error mapping and logging."""

    name = handler.__name__  # the endpoint attribute of spans and metrics

    @functools.wraps(handler)
    def run(request: ApiRequest) -> ApiResponse:
        request_id, started = new_request_id(), time.perf_counter()
        with telemetry.request_span(name, request.method, request_id) as span:
            response = _answer(handler, request, request_id)
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


def _answer(handler: Handler, request: ApiRequest, request_id: str) -> ApiResponse:
    """The handler's response, or the error payload of what it raised. A request whose
    target or encoding could mean two things is refused before the handler runs."""
    try:
        refuse_ambiguous(request)
        response = handler(request, request_id)
    except MemnetError as error:
        response = error_response(error, request_id)
    except StorageError:
        log.warning("request_id=%s storage unavailable", request_id, exc_info=True)
        response = error_response(_UNAVAILABLE, request_id)
    except Exception:
        log.exception("request_id=%s unhandled error", request_id)
        response = _internal(request_id)
    response.headers["x-request-id"] = request_id
    return response
