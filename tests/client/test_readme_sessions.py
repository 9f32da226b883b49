"""The README's sessions, run as written against the real local server, so a newcomer's
first copy-paste works: the two Python sessions (the client, an MCP client) and the
shell sessions that need more than one call to show their point (adding a project with
an admin PUT; forgetting a conversation and a user), with bash and curl; and the
rendered context it shows, which the first session's writes produce."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from memnet_client import MemnetClient

from memnet.bootstrap import Services
from tests.conftest import ADMIN_KEY, AGENT_KEY, REPO

README_URL = "http://127.0.0.1:7071"
README = REPO / "README.md"
AGENT = {"Authorization": f"Bearer {AGENT_KEY}"}


def readme_section(heading: str) -> str:
    """The README's text under ``heading``, up to the next heading of its level."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]


def readme_blocks(heading: str, language: str) -> list[str]:
    """The ```language blocks under ``heading``, in order."""
    found = re.findall(rf"```{language}\n(.*?)```", readme_section(heading), re.DOTALL)
    assert found, f"no {language} block under {heading}"
    return found


def readme_block(heading: str) -> str:
    """The first ```python block under ``heading``."""
    return readme_blocks(heading, "python")[0]


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
    assert proposal["candidate"]["fact"] == "Lives in Lisbon."
    assert "Prefers tabs over spaces." in capsys.readouterr().out
    with MemnetClient(http_server, api_key=ADMIN_KEY, tenant="acme", user="alice") as admin:
        admin.review_proposal(proposal["proposal_id"], "approve")  # as the README says
    assert [f["fact"] for f in document(http_server)["durable_facts"]] == ["Lives in Lisbon."]


def curl_bodies(heading: str) -> list[dict[str, Any]]:
    """The JSON bodies (``-d '...'``) of the ```bash blocks of the section ``heading``."""
    blocks = "".join(readme_blocks(heading, "bash"))
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


PYTHON_SESSIONS = ["## A first session in Python", "## A first session with an MCP client"]


@pytest.mark.parametrize("heading", PYTHON_SESSIONS)
def test_a_python_session_says_how_to_install_what_it_imports(heading: str):
    """Every module a session imports is the standard library's or is named in its
    section beside a ``pip install`` (the MCP session once did not say ``mcp``)."""
    section = readme_section(heading)
    tree = ast.parse(readme_block(heading))
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    packages = {name.split(".")[0] for name in imported} - set(sys.stdlib_module_names)
    assert packages and "pip install" in section
    unnamed = {p for p in packages if f"`{p}`" not in section and f"install {p}" not in section}
    assert unnamed <= {"memnet_client"}  # `pip install ./clients/python`, named as the client
    if "memnet_client" in packages:
        assert "pip install ./clients/python" in section


# -- the shell sessions ----------------------------------------------------------------


@pytest.fixture
def served_with_workers(services: Services) -> Iterator[str]:
    """The local host as ``scripts/serve`` runs it: HTTP and the queue workers (replay,
    forget), over the test's services (forget's grace period 0)."""
    import function_app
    from funchost import start_in_thread

    running = start_in_thread(
        function_app.app, route_prefix="", queues=services.queue, run_timers=False
    )
    yield running.url
    running.stop()


def run_bash(blocks: list[str], server: str) -> str:
    """The blocks as one bash script (each may use what an earlier one set), against
    ``server``; its output."""
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    script = "\n".join(blocks).replace(README_URL, server)
    done = subprocess.run(
        ["bash", "-eu", "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def replies(out: str) -> list[Any]:
    """The JSON bodies curl printed one after another (no newline between them)."""
    decoder, found, at = json.JSONDecoder(), [], 0
    while at < len(out):
        if out[at].isspace():
            at += 1
            continue
        value, at = decoder.raw_decode(out, at)
        found.append(value)
    return found


def test_the_first_shell_session_adds_a_project_with_an_admin_put(served_with_workers: str):
    out = replies(run_bash(readme_blocks("## A first session", "bash"), served_with_workers))
    [put] = [r for r in out if "document" in r and r["document"]["content"].get("projects_index")]
    assert put["document"]["content"]["projects_index"][0]["project_id"] == "project-alpha"
    assemblies = [r for r in out if "selected_project_id" in r]
    assert assemblies[0]["selected_project_id"] is None  # before the PUT
    assert assemblies[-1]["selected_project_id"] == "project-alpha"
    assert "project-alpha.json" in [d["path"] for d in assemblies[-1]["documents"]]


@pytest.mark.slow
def test_the_forgetting_session_needs_nothing_set_up_before(served_with_workers: str):
    """Bob's conversation is made by the session itself, then forgotten; Alice is
    forgotten with her audit trail kept by a hold."""
    out = replies(
        run_bash(readme_blocks("## Forgetting and retention", "bash"), served_with_workers)
    )
    done = [r for r in out if r.get("status") == "done"]
    [conversation] = [r for r in done if r.get("conversation_id") == "conv-7"]
    assert conversation["deleted"] == {"events": 1, "replays": 1, "snapshots": 1}
    assert conversation["retracted"][0]["removed"] == ["/content/pending_confirmations/0"]
    [alice] = [r for r in done if r.get("user_id") == "alice"]
    assert alice["kept"]["audit"]["hold_reason"] == "Case 2026-114"
    assert alice["verification"]["blobs_remaining"] == 0
