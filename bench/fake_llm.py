"""A fake OpenAI-compatible chat-completions server for the replay benchmark.

``POST /v1/chat/completions`` waits a fixed ``delay`` (the model's time), then answers a
valid structured completion for the starter profile ``project-copilot-v1``: one digest,
a patch of ``user_dynamic`` (a preference and a durable fact, confidence 0.9) and, when
the prompt shows a ``project_doc`` target, a patch appending a note to it. The answer
is built from the prompt (its target documents and transcript messages), in the shape
of ``tests/data/openai/good.json``: each value quotes the user message it cites, as a
model that reads right would, so the starter's poisoning guard lets it apply
(docs/security.md) and a run with the guard on writes what a run without it writes.
Every call is logged with its wall-clock start and end (``time.time()``) and the token
the transcript carries (``[bench:<token>]``), so the benchmark can tell the extractor's
time from the pipeline's.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = re.compile(r"\[bench:([A-Za-z0-9._-]+)\]")
TARGET = re.compile(r"^--- target_binding_id=(\S+) target_path=(\S+) ", re.MULTILINE)


@dataclass(frozen=True)
class Call:
    token: str | None
    start: float  # time.time() when the request was read
    end: float  # time.time() when the answer was written
    status: int


class FakeLLM(ThreadingHTTPServer):
    """Serve with :meth:`start`; ``calls`` is the log (append-only, under ``lock``)."""

    daemon_threads = True

    def __init__(self, delay: float = 2.0) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.delay = delay
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def start(self) -> FakeLLM:
        self._thread = threading.Thread(target=self.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def server_env(self, model: str = "fake-2s") -> dict[str, str]:
        """The memnet settings that point the chat extractor here."""
        return {
            "MEMNET_EXTRACTOR": "openai",
            "MEMNET_OPENAI_BASE_URL": self.base_url,
            "MEMNET_OPENAI_MODEL": model,
            "MEMNET_OPENAI_API_KEY": "bench-fake-key",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }

    def log(self, call: Call) -> None:
        with self.lock:
            self.calls.append(call)


class _Handler(BaseHTTPRequestHandler):
    server: FakeLLM
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body leave at once: no delayed-ACK stall

    def do_POST(self) -> None:
        start = time.time()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if self.path.split("?")[0] != "/v1/chat/completions":
            self._send(404, {"error": {"message": "not found"}})
            return
        prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
        found = TOKEN.search(prompt)
        time.sleep(self.server.delay)
        self._send(200, completion(prompt, body.get("model", "fake")))
        self.server.log(Call(found.group(1) if found else None, start, time.time(), 200))

    def _send(self, status: int, body: Any) -> None:
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def completion(prompt: str, model: str) -> dict[str, Any]:
    """A chat completion whose content is the replay output for ``prompt``."""
    content = json.dumps(replay_output(prompt))
    return {
        "id": f"chatcmpl-bench-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4},
    }


def replay_output(prompt: str) -> dict[str, Any]:
    """One digest and a patch or two, addressed to the targets and messages the prompt
    shows (the contract refuses any other)."""
    messages = _messages(prompt)
    first = messages[0] if messages else _Message("m1", "user", "", "2026-11-24T10:00:00Z")
    last = messages[-1] if messages else first
    found = TOKEN.search(prompt)
    token = found.group(1) if found else "none"
    at = last.timestamp
    targets = dict(TARGET.findall(prompt))  # binding -> path
    patches: list[dict[str, Any]] = []
    remembered = _said(messages, "remember that") or first
    preferred = _said(messages, "i prefer") or first
    decided = _said(messages, "we decided") or last
    if "user_dynamic" in targets:
        fact = {
            "fact": remembered.text or f"The user's bench conversation {token} happened.",
            "confidence": 0.9,
            "evidence": {"message_ids": [remembered.id]},
            "last_verified_at": at,
        }
        preference = {"text": preferred.text or f"Prefers the {token} style.", "topic": "style"}
        patches.append(
            {
                "target_binding_id": "user_dynamic",
                "target_path": targets["user_dynamic"],
                "ops": [
                    {"op": "add", "path": "/content/durable_facts/-", "value": fact},
                    {"op": "add", "path": "/content/preferences/-", "value": preference},
                ],
                "confidence": 0.9,
                "evidence": {"message_ids": list(dict.fromkeys([remembered.id, preferred.id]))},
            }
        )
    project = targets.get("project_doc")
    project_ids = [project.removesuffix(".json")] if project else []
    if project:
        patches.append(
            {
                "target_binding_id": "project_doc",
                "target_path": project,
                "ops": [
                    {
                        "op": "add",
                        "path": "/content/recent_notes/-",
                        "value": {"note": decided.text or f"Decided {token}.", "at": at},
                    }
                ],
                "confidence": 0.85,
                "evidence": {"message_ids": [decided.id]},
            }
        )
    digest = {
        "digest": f"Bench conversation {token}: a preference, a fact and a decision.",
        "keywords": ["bench", "conversation"],
        "project_ids": project_ids,
        "message_ids": [first.id, last.id],
    }
    return {"digests": [digest], "patches": patches}


@dataclass(frozen=True)
class _Message:
    id: str
    role: str
    text: str
    timestamp: str


def _messages(prompt: str) -> list[_Message]:
    """The transcript's messages (one JSON object per line)."""
    found = []
    for line in prompt.splitlines():
        if not line.startswith('{"id"'):
            continue
        try:
            message = json.loads(line)
        except ValueError:
            continue
        stamp = str(message.get("timestamp") or "2026-11-24T10:00:00Z")
        found.append(_Message(str(message["id"]), str(message.get("role")), message["text"], stamp))
    return found


def _said(messages: list[_Message], words: str) -> _Message | None:
    """The first user message holding ``words`` (case-folded)."""
    return next((m for m in messages if m.role == "user" and words in m.text.casefold()), None)
