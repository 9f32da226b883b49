"""The README's two Python sessions (the client, an MCP client), run as written against
the real local server, so a newcomer's first copy-paste works; and the rendered context
it shows, which the first session's writes produce."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
import pytest
from memnet_client import MemnetClient

from tests.conftest import AGENT_KEY, REPO

README_URL = "http://127.0.0.1:7071"
README = REPO / "README.md"
AGENT = {"Authorization": f"Bearer {AGENT_KEY}"}


def readme_block(heading: str) -> str:
    """The first ```python block under ``heading``."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n{heading}\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, f"no python block under {heading}"
    return match.group(1)


def run(block: str, server: str) -> None:
    assert README_URL in block
    exec(compile(block.replace(README_URL, server), "README.md", "exec"), {})


def document(server: str) -> dict[str, Any]:
    with MemnetClient(server, api_key=AGENT_KEY, tenant="acme", user="alice") as memnet:
        return dict(memnet.get_document("user", "user_dynamic.json").content)


def test_the_python_session(http_server: str, services: object, capsys: pytest.CaptureFixture):
    run(readme_block("## A first session in Python"), http_server)
    assert {"text": "Concise answers."} in document(http_server)["preferences"]
    assert "200 ms latency budget" in capsys.readouterr().out


def test_the_mcp_session(http_server: str, services: object, capsys: pytest.CaptureFixture):
    run(readme_block("## A first session with an MCP client"), http_server)
    content = document(http_server)
    assert content["durable_facts"] == []  # proposed, not written
    [proposal] = content["pending_confirmations"]
    assert proposal["candidate"] == {"fact": "Lives in Lisbon."}
    assert "Prefers tabs over spaces." in capsys.readouterr().out


def curl_bodies(heading: str) -> list[dict[str, Any]]:
    """The JSON bodies (``-d '...'``) of the ```bash blocks of the section ``heading``."""
    section = README.read_text(encoding="utf-8").split(f"\n{heading}\n", 1)[1].split("\n## ")[0]
    blocks = "".join(re.findall(r"```bash\n(.*?)```", section, re.DOTALL))
    return [json.loads(body) for body in re.findall(r"-d '(\{.*?\})'", blocks, re.DOTALL)]


def test_the_rendered_context_is_what_the_first_session_writes(http_server: str, services: object):
    """The README's two writes, then its assembly: the text it prints, header date aside."""
    bodies = curl_bodies("## A first session")
    shown = re.search(
        r"```text\n(### memory .*?)```", README.read_text(encoding="utf-8"), re.DOTALL
    )
    assert shown, "no rendered example in the README"
    with httpx.Client(base_url=http_server, headers=AGENT) as http:
        url = "/v1/tenants/acme/users/alice/documents/user/user_dynamic.json"
        created = http.patch(
            url, json=bodies[0], headers={"If-None-Match": "*", "Idempotency-Key": "r1"}
        )
        assert created.status_code == 201, created.text
        etag = created.json()["etag"]
        fact = http.patch(url, json=bodies[1], headers={"If-Match": etag, "Idempotency-Key": "r2"})
        assert fact.status_code == 200, fact.text
        assemble = next(b for b in bodies if "conversation_hint" in b)
        reply = http.post("/v1/tenants/acme/users/alice/context:assemble", json=assemble)
    rendered = reply.json()["rendered"]
    dated = re.compile(r"(, updated )\d{4}-\d{2}-\d{2}")
    assert dated.sub(r"\1<date>", rendered) == dated.sub(r"\1<date>", shown.group(1).rstrip("\n"))
