"""Benchmark: blob calls per API operation, counted at the storage endpoint (issue 29).

    python -m bench.blob_calls            # prints one JSON line and a Markdown table

A counting HTTP proxy stands between ``memnet serve`` (Azure Blob adapter) and Azurite:
every request the Azure SDK sends to Blob Storage passes through it and is recorded by
what Blob Storage would be asked (read, conditional or plain write, delete, list,
properties), so SDK retries and calls the app does not count itself are counted too.
The queue endpoint is not proxied (queue calls are not blob calls). Each operation runs
on a fresh user after a warm-up of the same kind, and is measured ``--repeat`` times; the
table shows the calls of one (they are the same each time unless said).
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bench.harness import HOST, Client, create, doc_url, machine, patch, start_server
from tests.azurite import connection_string, start_service

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


def kind_of(method: str, target: str, headers: http.client.HTTPMessage) -> str:
    """What Blob Storage is asked, from the method, the query and the conditions."""
    query = parse_qs(urlsplit(target).query)
    comp = query.get("comp", [""])[0]
    if comp == "list":
        return "list"
    if method == "GET":
        return "read_if_changed" if headers.get("If-None-Match") else "read"
    if method == "HEAD":
        return "properties"
    if method == "PUT" and not comp:
        if headers.get("If-None-Match") == "*":
            return "write_create"
        return "write_if_match" if headers.get("If-Match") else "write_plain"
    if method == "DELETE":
        return "delete"
    return f"{method.lower()}_{comp or 'other'}"


class CountingProxy(http.server.ThreadingHTTPServer):
    """Forwards every request to ``upstream_port`` and counts it by :func:`kind_of`."""

    daemon_threads = True

    def __init__(self, upstream_port: int) -> None:
        super().__init__((HOST, 0), _Forward)
        self.upstream_port = upstream_port
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def take(self) -> Counter[str]:
        with self.lock:
            found, self.calls = self.calls, Counter()
        return found


class _Forward(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: CountingProxy

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        with self.server.lock:
            self.server.calls[kind_of(self.command, self.path, self.headers)] += 1
        upstream = http.client.HTTPConnection(HOST, self.server.upstream_port, timeout=30)
        try:
            sent = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            upstream.request(self.command, self.path, body, sent)
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response_only(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_DELETE = do_HEAD = do_POST = _forward

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


@contextmanager
def proxied_server() -> Iterator[tuple[Client, CountingProxy]]:
    """``memnet serve`` on Azure storage whose blob endpoint is the counting proxy."""
    blob, queue = start_service("blob"), start_service("queue")
    proxy = CountingProxy(blob.port)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    endpoint = f"http://{HOST}:{proxy.port}/devstoreaccount1"
    env = {
        "MEMNET_STORAGE": "azure",
        "MEMNET_BLOB": connection_string(BlobEndpoint=endpoint),
        "MEMNET_QUEUE": connection_string(QueueEndpoint=queue.endpoint),
        "FUNCHOST_BLOB_POLL_SECONDS": "0",  # as on Azure: nothing lists the store
    }
    server = start_server(env)
    try:
        yield Client(server.port), proxy
    finally:
        server.stop()
        proxy.shutdown()
        queue.stop()
        blob.stop()


OPS = [{"op": "add", "path": "/content/preferences/-", "value": {"text": "Be brief."}}]


def _expect(reply: Any, *statuses: int) -> Any:
    if reply.status not in statuses:
        raise RuntimeError(f"unexpected {reply.status}: {reply.body[:300]!r}")
    return reply


Run = Callable[[], Any]  # one request of an operation


def operations(client: Client) -> dict[str, Callable[[], Run]]:
    """For each operation, what makes one ready on a user of its own (uncounted) and
    returns the request to count."""

    def fresh() -> tuple[str, str]:
        user = f"u{uuid.uuid4().hex[:10]}"
        return user, create(client, doc_url(user), OPS)

    def get() -> Run:
        user, _ = fresh()
        return lambda: _expect(client.request("GET", doc_url(user)), 200)

    def patch_existing() -> Run:
        user, etag = fresh()
        return lambda: _expect(patch(client, doc_url(user), OPS, etag), 200)

    def patch_create() -> Run:
        user = f"u{uuid.uuid4().hex[:10]}"
        return lambda: _expect(patch(client, doc_url(user), OPS, None), 201)

    def patch_retried() -> Run:
        user, etag = fresh()
        headers = {"If-Match": etag, "Idempotency-Key": uuid.uuid4().hex}
        body = {"ops": OPS}
        _expect(client.request("PATCH", doc_url(user), body, headers), 200)
        return lambda: _expect(client.request("PATCH", doc_url(user), body, headers), 200)

    def event() -> Run:
        user, _ = fresh()
        body = {
            "timestamp": "2026-11-20T09:30:00Z",
            "source_type": "chat",
            "digest": "Agreed on pgvector.",
            "keywords": ["pgvector"],
        }
        url = f"/v1/tenants/bench/users/{user}/events"
        key = {"Idempotency-Key": uuid.uuid4().hex}
        return lambda: _expect(client.request("POST", url, body, key), 201)

    def assemble() -> Run:
        user, _ = fresh()
        url = f"/v1/tenants/bench/users/{user}/context:assemble"
        body = {"conversation_hint": {"text": "brief"}, "max_docs": 4}
        return lambda: _expect(client.request("POST", url, body), 200)

    makers: dict[str, Callable[[], Run]] = {
        "GET document": get,
        "PATCH (If-Match, new key)": patch_existing,
        "PATCH (create, If-None-Match: *)": patch_create,
        "PATCH retried (same key, already applied)": patch_retried,
        "POST event": event,
        "context:assemble (1 document)": assemble,
    }
    return makers


def count(client: Client, proxy: CountingProxy, repeat: int) -> dict[str, list[dict[str, int]]]:
    found: dict[str, list[dict[str, int]]] = {}
    for name, make in operations(client).items():
        make()()  # warm-up: caches and first-use calls of this kind
        runs = []
        for _ in range(repeat):
            run = make()
            proxy.take()
            run()
            runs.append(dict(sorted(proxy.take().items())))
        found[name] = runs
    return found


def table(found: dict[str, list[dict[str, int]]]) -> str:
    lines = ["| operation | blob calls | of which |", "|---|---:|---|"]
    for name, runs in found.items():
        totals = sorted({sum(run.values()) for run in runs})
        shown = " or ".join(str(t) for t in totals)
        kinds = ", ".join(f"{kind} x{n}" for kind, n in runs[0].items())
        lines.append(f"| {name} | {shown} | {kinds} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="measured runs per operation")
    args = parser.parse_args(argv)
    with proxied_server() as (client, proxy):
        found = count(client, proxy, args.repeat)
    print(json.dumps({"bench": "blob_calls", "calls": found, "machine": machine()}))
    print(table(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
