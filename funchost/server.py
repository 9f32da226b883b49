"""A small multi-threaded HTTP host for the app's own Azure Functions (v2 model): a thread
per connection, each request read within the limits of `HostLimits` and answered in JSON."""

from __future__ import annotations

import logging
import socket
import sys
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Self

import azure.functions as func

from funchost import settings
from funchost.background import BackgroundRunner, QueueSource
from funchost.blobs import blob_poller_for
from funchost.dispatch import FunctionHost
from funchost.handler import Host, RequestHandler
from funchost.queues import PortQueueSource
from funchost.route_templates import error_body, new_request_id
from funchost.settings import HostLimits, invocation_threads

if TYPE_CHECKING:
    from _socket import _RetAddress
    from socketserver import _RequestType

    from memnet.ports import BlobStore, MessageQueue

logger = logging.getLogger("funchost")


class Server(Host):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], host: FunctionHost, limits: HostLimits) -> None:
        self.function_host = host
        self.limits = limits
        # Like the Functions Python worker, which runs synchronous invocations in a thread
        # pool: at most this many at once; connections beyond it wait for a slot.
        self.invocations = threading.BoundedSemaphore(invocation_threads())
        self.connections = threading.BoundedSemaphore(limits.max_connections)
        super().__init__(address, RequestHandler)

    def process_request(self, request: _RequestType, client_address: _RetAddress) -> None:
        """A thread per connection, at most `max_connections` at once: one more is answered
        503 by the accepting thread, which never waits on it, and closed."""
        if not self.connections.acquire(blocking=False):
            limit = self.limits.max_connections
            logger.warning("refused %s: %d connections open", client_address, limit)
            _send_busy(request, limit)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.connections.release()
            raise

    def process_request_thread(self, request: _RequestType, client_address: _RetAddress) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.connections.release()

    def handle_error(self, request: _RequestType, client_address: _RetAddress) -> None:
        """A client that resets or stalls is no error of the host's: no traceback for it."""
        error = sys.exc_info()[1]
        if isinstance(error, OSError):
            logger.debug("connection from %s ended: %r", client_address, error)
        else:
            logger.exception("error serving %s", client_address)


def _send_busy(request: _RequestType, limit: int) -> None:
    request_id = new_request_id()
    body = error_body(
        "TOO_MANY_CONNECTIONS", "Too many open connections.", request_id, {"limit": limit}
    )
    head = (
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n"
        f"x-request-id: {request_id}\r\nRetry-After: 1\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    if isinstance(request, socket.socket):  # always, over TCP
        try:
            request.setblocking(False)
            request.send(head.encode("ascii") + body)
        except OSError:
            pass  # the client is gone or not reading: closing is all that is left


@dataclass
class RunningServer:
    """A host serving on a background thread; `stop()` shuts it down."""

    server: Server
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
    max_body_bytes: int | None = None,
    limits: HostLimits | None = None,
    blobs: BlobStore | None = None,
    blob_container: str | None = None,
    blob_poll_seconds: float | None = None,
) -> RunningServer:
    """Serve `app` on a daemon thread (port 0 picks a free port); for tests and embedding.

    Queue functions run given a `queue_source`, or `queues`: a MessageQueue polled with
    the retry and poison settings of host.json (`PortQueueSource.from_host_json`).
    Blob functions of `blob_container` run given `blobs`, the store of that container,
    polled every `blob_poll_seconds` (default `FUNCHOST_BLOB_POLL_SECONDS`; 0: never).
    `limits` default to the `FUNCHOST_*` settings; `max_body_bytes` replaces theirs."""
    if queue_source is None and queues is not None:
        queue_source = PortQueueSource.from_host_json(queues)
    limits = limits or HostLimits.from_env()
    if max_body_bytes is not None:
        limits = replace(limits, max_body_bytes=max_body_bytes)
    server = Server((host, port), FunctionHost(app, route_prefix), limits)
    index = server.function_host.index
    interval = settings.blob_poll_seconds() if blob_poll_seconds is None else blob_poll_seconds
    poller = blob_poller_for(index.blob_functions, blobs, blob_container, interval)
    background = BackgroundRunner(index, queue_source, run_timers, blob_poller=poller)
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
    max_body_bytes: int | None = None,
    blobs: BlobStore | None = None,
    blob_container: str | None = None,
) -> None:
    """Serve `app` in the calling thread until interrupted (the CLI entry point); a body
    over `max_body_bytes` (default: `FUNCHOST_MAX_BODY_BYTES`) is refused unread. Blob
    functions of `blob_container` run over `blobs` as in :func:`start_in_thread`."""
    running = start_in_thread(
        app,
        host,
        port,
        route_prefix=route_prefix,
        queue_source=queue_source,
        queues=queues,
        max_body_bytes=max_body_bytes,
        blobs=blobs,
        blob_container=blob_container,
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
