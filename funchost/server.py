"""A small multi-threaded HTTP host for the app's own Azure Functions (v2 model)."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Self
from urllib.parse import parse_qsl

import azure.functions as func

from funchost.background import BackgroundRunner, QueueSource
from funchost.index import FunctionIndex, functions_of, invoke
from funchost.queues import PortQueueSource
from funchost.routing import (
    Resolution,
    Router,
    error_body,
    new_request_id,
    not_routed_body,
    read_route_prefix,
)

if TYPE_CHECKING:
    from memnet.ports import MessageQueue

logger = logging.getLogger("funchost")

_TEXTUAL_SUFFIXES = ("json", "xml", "javascript")


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


class FunctionHost:
    """Turns one HTTP request into one function call; no sockets involved."""

    def __init__(self, app: func.FunctionApp, route_prefix: str | None = None) -> None:
        self.index: FunctionIndex = functions_of(app)
        self.prefix = (read_route_prefix() if route_prefix is None else route_prefix).strip("/")
        self.router = Router(self.index.http_routes, self.prefix)

    def dispatch(
        self, method: str, target: str, headers: list[tuple[str, str]], body: bytes, base_url: str
    ) -> RawResponse:
        path, _, query = target.partition("?")
        resolution = self.router.resolve(method, path)
        route = resolution.route
        if route is None:
            return _not_routed(resolution, method, path)
        request = func.HttpRequest(
            method.upper(),
            base_url + target,
            headers=_merge_headers(headers),
            params=_query_params(query),
            route_params=resolution.params,
            body=body,
        )
        try:
            return _from_http_response(invoke(route.function, route.arg_name, request))
        except Exception:
            request_id = new_request_id()
            logger.exception("function %s failed (request_id=%s)", route.name, request_id)
            return _json_error(
                500, error_body("INTERNAL", "internal error", request_id), request_id
            )


def _merge_headers(headers: list[tuple[str, str]]) -> dict[str, str]:
    merged: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        merged[key] = f"{merged[key]}, {value}" if key in merged else value
    return merged


def _query_params(query: str) -> dict[str, str]:
    params: dict[str, str] = {}
    for name, value in parse_qsl(query, keep_blank_values=True):
        params[name] = f"{params[name]},{value}" if name in params else value
    return params


def _not_routed(resolution: Resolution, method: str, path: str) -> RawResponse:
    request_id = new_request_id()
    body = not_routed_body(resolution, method, path, request_id)
    response = _json_error(resolution.status, body, request_id)
    if resolution.status == 405:
        response.headers.append(("Allow", ", ".join(resolution.allowed)))
    return response


def _json_error(status: int, body: bytes, request_id: str) -> RawResponse:
    headers = [("Content-Type", "application/json; charset=utf-8"), ("x-request-id", request_id)]
    return RawResponse(status, headers, body)


def _from_http_response(response: object) -> RawResponse:
    if not isinstance(response, func.HttpResponse):
        raise TypeError(f"HTTP function returned {type(response).__name__}, not HttpResponse")
    headers = [(k, v) for k, v in response.headers.items() if k.lower() != "content-length"]
    if not any(k.lower() == "content-type" for k, _ in headers):
        headers.append(("Content-Type", _content_type(response.mimetype, response.charset)))
    return RawResponse(int(response.status_code), headers, response.get_body())


def _content_type(mimetype: str, charset: str) -> str:
    if mimetype.startswith("text/") or mimetype.endswith(_TEXTUAL_SUFFIXES):
        return f"{mimetype}; charset={charset}"
    return mimetype


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], host: FunctionHost) -> None:
        self.function_host = host
        # Like the Functions Python worker, which runs synchronous invocations in a thread
        # pool: at most this many at once; connections beyond it wait for a slot.
        self.invocations = threading.BoundedSemaphore(invocation_threads())
        super().__init__(address, _Handler)


def invocation_threads(env: Mapping[str, str] | None = None) -> int:
    """The Functions Python worker's pool size: ``PYTHON_THREADPOOL_THREAD_COUNT`` if set,
    else ``ThreadPoolExecutor``'s default, ``min(32, cpus + 4)``."""
    value = (os.environ if env is None else env).get("PYTHON_THREADPOOL_THREAD_COUNT", "")
    if value.strip():
        if not value.strip().isdigit() or int(value) < 1:
            raise ValueError(
                f"PYTHON_THREADPOOL_THREAD_COUNT must be a positive integer: {value!r}"
            )
        return int(value)
    return min(32, (os.cpu_count() or 1) + 4)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # idle keep-alive connections are closed after this many seconds
    # Headers and body leave in one segment (buffered writer, flushed per request by
    # BaseHTTPRequestHandler) with Nagle off: otherwise the body waits ~40 ms for the
    # client's delayed ACK of the headers.
    disable_nagle_algorithm = True
    wbufsize = 1 << 16
    server: _Server

    def _handle(self) -> None:
        started = time.perf_counter()
        try:
            body = self._read_body()
        except ValueError as exc:
            self.close_connection = True
            request_id = new_request_id()
            response = _json_error(400, error_body("BAD_REQUEST", str(exc), request_id), request_id)
        else:
            with self.server.invocations:
                response = self.server.function_host.dispatch(
                    self.command, self.path, list(self.headers.items()), body, self._base_url()
                )
        elapsed_ms = (time.perf_counter() - started) * 1000
        rid = response.header("x-request-id") or "-"
        logger.info("%s %s %d %.1fms %s", self.command, self.path, response.status, elapsed_ms, rid)
        self._write(response)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return self._read_chunked()
        length_text = self.headers.get("Content-Length", "0").strip() or "0"
        if not length_text.isdigit():
            raise ValueError(f"invalid Content-Length: {length_text!r}")
        return self._read_exactly(int(length_text))

    def _read_chunked(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            size_line = self.rfile.readline(1024).split(b";", 1)[0].strip()
            try:
                size = int(size_line, 16)
            except ValueError:
                raise ValueError("invalid chunked encoding") from None
            if size == 0:
                while self.rfile.readline(1024).strip():
                    pass  # trailers
                return b"".join(chunks)
            chunks.append(self._read_exactly(size))
            self.rfile.readline(1024)

    def _read_exactly(self, size: int) -> bytes:
        data = self.rfile.read(size)
        if len(data) != size:
            raise ValueError("request body shorter than declared")
        return data

    def _base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{self.headers.get('Host') or f'{host!s}:{port}'}"

    def _write(self, response: RawResponse) -> None:
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if self.command != "HEAD" and response.status not in (204, 304):
            self.wfile.write(response.body)

    def log_message(self, format: str, *args: object) -> None:
        logger.debug(format, *args)


@dataclass
class RunningServer:
    """A host serving on a background thread; `stop()` shuts it down."""

    server: _Server
    thread: threading.Thread
    background: BackgroundRunner

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self.server.server_address[0])
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}"

    def stop(self) -> None:
        self.background.stop()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_in_thread(
    app: func.FunctionApp,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    route_prefix: str | None = None,
    queue_source: QueueSource | None = None,
    run_timers: bool = True,
    queues: MessageQueue | None = None,
) -> RunningServer:
    """Serve `app` on a daemon thread (port 0 picks a free port); for tests and embedding.

    Queue functions run given a `queue_source`, or `queues`: a MessageQueue polled with
    the retry and poison settings of host.json (`PortQueueSource.from_host_json`)."""
    if queue_source is None and queues is not None:
        queue_source = PortQueueSource.from_host_json(queues)
    server = _Server((host, port), FunctionHost(app, route_prefix))
    background = BackgroundRunner(server.function_host.index, queue_source, run_timers)
    thread = threading.Thread(target=server.serve_forever, name="funchost-http", daemon=True)
    thread.start()
    background.start()
    return RunningServer(server, thread, background)


def serve_forever(
    app: func.FunctionApp,
    host: str = "127.0.0.1",
    port: int = 7071,
    *,
    route_prefix: str | None = None,
    queue_source: QueueSource | None = None,
    queues: MessageQueue | None = None,
) -> None:
    """Serve `app` in the calling thread until interrupted (the CLI entry point)."""
    running = start_in_thread(
        app, host, port, route_prefix=route_prefix, queue_source=queue_source, queues=queues
    )
    function_host = running.server.function_host
    base = f"{running.url}/{function_host.prefix}".rstrip("/")
    for route in function_host.index.http_routes:
        logger.info("%s: [%s] %s/%s", route.name, ",".join(route.methods), base, route.route)
    logger.info("listening on %s", running.url)
    try:
        running.thread.join()
    except KeyboardInterrupt:
        logger.info("shutting down")
    finally:
        running.stop()
