"""One connection of the local host: each request read within the host's limits, handed
to the function its route names, and answered in JSON, the host's own refusals included
(in the error shape, with an ``x-request-id``)."""

from __future__ import annotations

import io
import logging
import re
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from funchost.mcp import MCP_PATH, refusal
from funchost.reading import (
    BadFraming,
    BodyTooLarge,
    DeadlineSocketIO,
    framing_of,
    linger,
    read_body,
)
from funchost.responses import RawResponse, json_error
from funchost.route_templates import error_body, new_request_id

if TYPE_CHECKING:
    from funchost.dispatch import FunctionHost
    from funchost.settings import HostLimits

logger = logging.getLogger("funchost")

_METHOD = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
_ERROR_CODES = {HTTPStatus.REQUEST_ENTITY_TOO_LARGE: "PAYLOAD_TOO_LARGE"}  # as memnet.domain.errors
_LINGER_SECONDS = 1.0  # after a refusal, the longest the host reads on to close cleanly


class Host(ThreadingHTTPServer):
    """What a connection reads of the server that accepted it (funchost.server.Server
    sets each): the app's functions, the limits, and the slots for invocations."""

    function_host: FunctionHost
    limits: HostLimits
    invocations: threading.BoundedSemaphore


class RequestHandler(BaseHTTPRequestHandler):
    """Reads each request within the host's limits and hands it to the function its route
    names; every answer is JSON, the host's own refusals in the error shape."""

    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.1"  # a refused request line still gets headers
    # Headers and body leave in one segment (buffered writer, flushed per request) with
    # Nagle off: otherwise the body waits ~40 ms for the client's delayed ACK of the headers.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16
    server: Host

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # replaced by a reader whose reads keep the request's deadline
        self.reader = DeadlineSocketIO(self.connection, self.server.limits.idle_timeout_seconds)
        self.rfile = self.buffered = io.BufferedReader(self.reader)
        self.refused = False
        self.started = time.perf_counter()

    def handle_one_request(self) -> None:
        self.close_connection = True
        self.command = self.path = self.requestline = ""
        self.request_version = self.default_request_version
        if not self._await_request():
            return
        self.started = time.perf_counter()
        body = self._read_in_time()
        if body is not None:
            self._answer(body)

    def _await_request(self) -> bool:
        """Whether a request begins within the idle timeout (False: the client left)."""
        try:
            return bool(self.buffered.peek(1))
        except OSError:  # TimeoutError included
            return False

    def _read_in_time(self) -> bytes | None:
        """The request, read by the read deadline (408 if not); None once refused."""
        self.reader.start(self.server.limits.read_timeout_seconds)
        try:
            return self._read_request()
        except TimeoutError:
            self._refuse(HTTPStatus.REQUEST_TIMEOUT, "Request not received in time.")
            return None
        finally:
            self.reader.stop()

    def _read_request(self) -> bytes | None:
        """The request line, headers and body; None when the host refused the request."""
        if not self._read_head():
            return None
        try:
            return self._read_body()
        except BadFraming as error:
            self._refuse(HTTPStatus.BAD_REQUEST, str(error))
        except BodyTooLarge as error:
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, str(error), limit=error.limit)
        return None

    def _read_head(self) -> bool:
        """As BaseHTTPRequestHandler reads it, but no HTTP/0.9 (no status line, no headers)."""
        self.raw_requestline = self.rfile.readline(65537)
        if len(self.raw_requestline) > 65536:
            self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
            return False
        if len(self.raw_requestline.split()) == 2:
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, "HTTP/0.9 is not supported")
            return False
        if not self.parse_request():
            return False
        if not _METHOD.fullmatch(self.command):
            self.send_error(HTTPStatus.BAD_REQUEST, "Invalid method.")
            return False
        return self._take_target()

    def _take_target(self) -> bool:
        """The target exactly as sent, which must be a path (origin-form, RFC 9112 3.2.1),
        or a URL whose path and query are taken (absolute-form, which a server must
        accept, 3.2.2; Kestrel does): ``parse_request`` turns a leading ``//`` into ``/``,
        a spelling the app then could not see, and a target without its ``/`` would
        otherwise route as if it had one."""
        self.path = self.requestline.split()[1]
        if self.path[:8].lower().startswith(("http://", "https://")):
            url = urlsplit(self.path)
            self.path = (url.path or "/") + (f"?{url.query}" if url.query else "")
        if not self.path.startswith("/"):
            self.send_error(
                HTTPStatus.BAD_REQUEST, "The request target must be a path beginning with '/'."
            )
            return False
        return True

    def _read_body(self) -> bytes:
        limit = self.server.limits.max_body_bytes
        framing = framing_of(self.headers, limit)
        if self._expects_continue():
            super().handle_expect_100()
            self.wfile.flush()  # the writer is buffered: the client waits for this line
        return read_body(self.buffered, framing, limit)

    def handle_expect_100(self) -> bool:
        return True  # "100 Continue" waits until the declared size is known to fit

    def _expects_continue(self) -> bool:
        expect = self.headers.get("Expect", "").lower() == "100-continue"
        return expect and self.request_version >= "HTTP/1.1"

    def _answer(self, body: bytes) -> None:
        headers = list(self.headers.items())
        with self.server.invocations:
            response = self.server.function_host.dispatch(
                self.command, self.path, headers, body, self._base_url()
            )
        self._write(response)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """BaseHTTPRequestHandler's own refusals (request line, 414, 431) in the error shape."""
        self._refuse(HTTPStatus(code), message or HTTPStatus(code).phrase)

    def _refuse(self, status: HTTPStatus, message: str, **details: object) -> None:
        """Answer a request the host refuses itself, in the error shape, and close."""
        self.reader.stop()  # writing is bounded by the idle timeout, not the read deadline
        request_id = new_request_id()
        code = _ERROR_CODES.get(status, status.name)
        response = json_error(status, error_body(code, message, request_id, details), request_id)
        if self.path.partition("?")[0] == MCP_PATH:  # an MCP client reads JSON-RPC errors
            response = refusal(status, message, request_id)
        response.headers.append(("Connection", "close"))
        self.refused = True
        self._write(response)

    def _base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{self.headers.get('Host') or f'{host!s}:{port}'}"

    def _write(self, response: RawResponse) -> None:
        elapsed_ms = (time.perf_counter() - self.started) * 1000
        rid = response.header("x-request-id") or "-"
        logger.info("%s %s %d %.1fms %s", self.command, self.path, response.status, elapsed_ms, rid)
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD" and response.status not in (204, 304):
            self.wfile.write(response.body)
        self.wfile.flush()

    def finish(self) -> None:
        super().finish()
        if self.refused:  # the rest of the request may still be on its way
            linger(self.connection, _LINGER_SECONDS)

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        pass  # `_write` logs every answer, with its request id

    def log_message(self, format: str, *args: object) -> None:
        logger.debug(format, *args)
