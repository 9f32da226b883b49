"""What the console's browser tests do again and again: sign in, open a page of a
user's memory, check accessibility, and call the API directly to make data."""

from __future__ import annotations

import json
from typing import Any

from playwright.sync_api import Page

from tests.conftest import ADMIN_KEY, REPO
from tests.served import ServedHost, request

AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"


def sign_in(page: Page, key: str = ADMIN_KEY) -> None:
    page.goto("/console/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_text("Signed in as").wait_for()


def open_user(page: Page, tenant: str, user: str, page_id: str = "memory", **params: str) -> None:
    """Go to a page of a user's memory and wait until it has rendered."""
    query = "&".join(f"{k}={v}" for k, v in params.items())
    page.goto(f"/console/#/{tenant}/{user}/{page_id}" + (f"?{query}" if query else ""))
    page.locator(f"main[data-ready='{page_id}']").wait_for()


def axe(page: Page) -> None:
    """axe-core's WCAG 2.1 A/AA rules over the page as it is now: no violation."""
    if not page.evaluate("() => Boolean(window.axe)"):
        page.evaluate(AXE.read_text(encoding="utf-8"))
    result = page.evaluate(
        "() => axe.run(document, {runOnly: {type: 'tag', values:"
        " ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice']}})"
    )
    violations = [
        {"id": v["id"], "help": v["help"], "nodes": [n["target"] for n in v["nodes"]][:5]}
        for v in result["violations"]
    ]
    assert not violations, json.dumps(violations, indent=1)


def api(
    host: ServedHost, method: str, path: str, body: Any = None, key: str = ADMIN_KEY, **headers: str
) -> Any:
    """The JSON body of a 2xx answer of the host (anything else fails the test)."""
    status, _, answer = request(host.port, method, path, body, key, **headers)
    assert 200 <= status < 300, (method, path, status, answer)
    return answer
