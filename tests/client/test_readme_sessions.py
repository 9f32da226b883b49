"""The README's two Python sessions (the client, an MCP client), run as written against
the real local server, so a newcomer's first copy-paste works."""

from __future__ import annotations

import re
from typing import Any

import pytest
from memnet_client import MemnetClient

from tests.conftest import ADMIN_KEY, AGENT_KEY, REPO

README_URL = "http://127.0.0.1:7071"


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
    assert "Concise answers." in document(http_server)["preferences"]
    assert "200 ms latency budget" in capsys.readouterr().out


def test_the_mcp_session(http_server: str, services: object, capsys: pytest.CaptureFixture):
    run(readme_block("## A first session with an MCP client"), http_server)
    content = document(http_server)
    assert content["durable_facts"] == []  # proposed, not written
    [proposal] = content["pending_confirmations"]
    assert proposal["candidate"]["fact"] == "Lives in Lisbon."
    assert "Prefers tabs over spaces." in capsys.readouterr().out
    with MemnetClient(http_server, api_key=ADMIN_KEY, tenant="acme", user="alice") as admin:
        admin.review_proposal(proposal["proposal_id"], "approve")  # as the README says
    assert [f["fact"] for f in document(http_server)["durable_facts"]] == ["Lives in Lisbon."]
