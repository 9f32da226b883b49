"""A local fake OpenAI-compatible server for the model adapters' contract tests
(tests/contract/test_openai_extractor.py, test_openai_embedder.py): stdlib
``ThreadingHTTPServer`` on 127.0.0.1 answering one operation, under its OpenAI path
(``/v1/<operation>``) and its Azure OpenAI path
(``/openai/deployments/<deployment>/<operation>?api-version=...``), with queued answers,
recording every request. The real ``openai`` SDK does the HTTP, retries and timeouts."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Answer:
    """A body (or a function of the request's body that makes one), or raw bytes."""

    body: Any = None
    status: int = 200
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    content_type: str = "application/json"


@dataclass
class Received:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: Any


class FakeOpenAIServer(ThreadingHTTPServer):
    """Answers each POST of its operation with the next queued :class:`Answer` (the last
    one repeats) and records it; other paths get 404."""

    daemon_threads = True

    def __init__(self, operation: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.paths = re.compile(
            f"/v1/{re.escape(operation)}|/openai/deployments/[^/]+/{re.escape(operation)}"
        )
        self.answers: list[Answer] = []
        self.received: list[Received] = []
        self.released = threading.Event()  # ends a slow answer's sleep at teardown

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def queue(self, *answers: Answer) -> None:
        self.answers.extend(answers)

    def next_answer(self) -> Answer:
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out closed the socket the slow answer writes to


class _Handler(BaseHTTPRequestHandler):
    server: FakeOpenAIServer

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if not self.server.paths.fullmatch(url.path):
            self._send(Answer({"error": {"message": "not found"}}, 404))
            return
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.received.append(Received(url.path, parse_qs(url.query), headers, body))
        answer = self.server.next_answer()
        self.server.released.wait(answer.delay)
        self._send(answer, body)

    def _send(self, answer: Answer, request: Any = None) -> None:
        payload = answer.raw
        if payload is None:
            made = answer.body(request) if callable(answer.body) else answer.body
            payload = json.dumps(made).encode()  # NaN and Infinity pass as bare words
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in answer.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serving(operation: str) -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer(operation)
    thread = threading.Thread(target=fake.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.released.set()
        fake.shutdown()
        fake.server_close()
        thread.join(5)
