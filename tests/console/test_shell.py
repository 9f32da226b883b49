"""The console's shell: how it is served (policy, caching), signing in and out, and
choosing a user."""

from __future__ import annotations

import re
import urllib.error
import urllib.request

from playwright.sync_api import Page, Route, expect

from tests.conftest import ADMIN_KEY
from tests.console.steps import axe, sign_in


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as refused:
        return refused.code, dict(refused.headers), refused.read()


def test_the_page_is_served_with_a_strict_policy_and_never_cached(base_url: str) -> None:
    status, headers, body = fetch(f"{base_url}/console/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    policy = headers["Content-Security-Policy"]
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
        "form-action 'none'",
    ):
        assert directive in policy
    assert "unsafe" not in policy
    assert headers["X-Frame-Options"] == "DENY" and headers["Cache-Control"] == "no-cache"
    assert b"<script>" not in body and b"onclick" not in body.lower()


def test_assets_are_versioned_and_cached_for_a_year(base_url: str) -> None:
    _, _, page = fetch(f"{base_url}/console/")
    script = re.search(rb'src="(/console/a/[0-9a-f]{16}/app\.js)"', page)
    assert script is not None
    status, headers, body = fetch(base_url + script.group(1).decode())
    assert status == 200 and headers["Content-Type"].startswith("text/javascript")
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Content-Security-Policy" in headers and b"import" in body
    stale = re.sub(r"/a/[0-9a-f]{16}/", "/a/0000000000000000/", script.group(1).decode())
    assert fetch(base_url + stale)[0] == 404
    assert fetch(f"{base_url}/console/a/x/../../../function_app.py")[0] == 404
    assert fetch(f"{base_url}/console/anything")[0] == 404


def test_signing_in_keeps_the_key_out_of_the_url_and_out_of_storage_after_sign_out(
    page: Page,
) -> None:
    sign_in(page, ADMIN_KEY)
    expect(page.get_by_text("dev-admin")).to_be_visible()
    assert ADMIN_KEY not in page.url
    assert page.evaluate("() => localStorage.length") == 0
    axe(page)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.evaluate("() => sessionStorage.length") == 0


def test_a_wrong_key_is_refused_and_said_so(page: Page) -> None:
    page.goto("/console/")
    axe(page)
    page.get_by_label("API key").fill("not-a-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("UNAUTHENTICATED")
    expect(page.get_by_label("API key")).to_be_visible()


def test_choosing_a_user_opens_their_memory(page: Page) -> None:
    sign_in(page, ADMIN_KEY)
    axe(page)
    page.get_by_label("Tenant", exact=True).fill("t1")
    page.get_by_label("User", exact=True).fill("u-choose")
    page.get_by_role("button", name="Open").click()
    page.locator("main[data-ready='memory']").wait_for()
    assert page.url.endswith("#/t1/u-choose/memory")
    expect(page.get_by_role("link", name="History")).to_be_visible()


def test_a_link_naming_a_dot_segment_or_a_malformed_id_opens_no_page(page: Page) -> None:
    """``..`` as a user would make ``users/../hold`` the tenant's hold in an API path (a
    browser resolves dot segments, encoded or not): the shell refuses such a route, and
    the API helper refuses such a segment."""
    sign_in(page, ADMIN_KEY)
    for link in ("#/t1/../governance", "#/t1/%2E%2E/memory", "#/t1/%E0%A4/memory"):
        page.goto("/console/" + link)
        expect(page.get_by_role("alert")).to_contain_text("names no valid tenant and user")
        expect(page.get_by_role("heading", name="Whose memory?")).to_be_visible()
    script = page.locator("script[type=module]").get_attribute("src") or ""
    api_module = script.replace("app.js", "lib/api.js")
    refused = page.evaluate(
        """async (module) => {
            const { path } = await import(module);
            const codes = [];
            for (const bad of ["..", ".", ""]) {
                try { path("v1", "tenants", "t1", "users", bad, "hold"); codes.push("sent"); }
                catch (error) { codes.push(error.code); }
            }
            return codes;
        }""",
        api_module,
    )
    assert refused == ["INVALID_IDENTIFIER"] * 3


def test_a_page_still_loading_for_another_user_or_after_sign_out_is_never_shown(
    page: Page,
) -> None:
    """A slow answer for the screen left behind must not replace the one shown now."""
    sign_in(page, ADMIN_KEY)
    held: list[Route] = []
    page.route("**/users/u-slow-alice/**", lambda route: held.append(route))
    page.goto("/console/#/t1/u-slow-alice/events")
    page.wait_for_timeout(300)
    assert held, "the first user's page asked nothing"
    page.goto("/console/#/t1/u-quick-bob/events")
    page.locator("main[data-ready='events']").wait_for()
    for route in held:
        route.continue_()
    page.wait_for_timeout(500)
    expect(page.locator("main")).not_to_contain_text("u-slow-alice")
    assert page.url.endswith("#/t1/u-quick-bob/events")
    assert page.locator("main[data-ready='events']").count() == 1
    # Signing out while a page loads: the sign-in form stays.
    held.clear()
    page.goto("/console/#/t1/u-slow-alice/events")
    page.wait_for_timeout(300)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_label("API key")).to_be_visible()
    for route in held:
        route.continue_()
    page.wait_for_timeout(500)
    expect(page.get_by_label("API key")).to_be_visible()
    assert page.locator("main[data-ready]").count() == 0
