"""Hostile memory in every page (docs/console.md "Untrusted content"): markup, script,
``javascript:`` links, event handlers, a right-to-left override and a 1 MB string, written
through the API where agents and replay write them, then shown on Memory, History,
Review and Events with every view opened. Nothing may run, load, link or escape its
place: no element made from a value, no request to another origin, no dialog, and a
1 MB value clipped until asked for, then shown whole as text."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.conftest import ADMIN_KEY, AGENT_KEY, starter_profiles
from tests.console.conftest import SETTINGS
from tests.console.documents import DYNAMIC, TENANT, add, patch
from tests.console.steps import api, axe, open_user, sign_in
from tests.served import ServedHost

MEGABYTE = "A" * 999_990 + "END-OF-1MB"
RTL = "\u202eexe.txt\u202c"
HOSTILE = [
    "<img src=x onerror=\"window.__pwned='img'\">",
    "<script>window.__pwned='script'</script>",
    "javascript:window.__pwned='link'",
    "<a href=\"javascript:window.__pwned='a'\">click me</a>",
    "<svg onload=\"window.__pwned='svg'\"></svg>",
    '<iframe src="https://example.com/"></iframe>',
    "<style>main{display:none}</style>",
    "{{constructor.constructor('window.__pwned=1')()}}",
    f"invoice {RTL} attached",
]
USER = "u-hostile"
INERT = """() => {
  const main = document.querySelector("main");
  const made = main.querySelectorAll(
    "img, script, iframe, object, embed, svg, style, link, video, audio, form[action]");
  const links = [...document.querySelectorAll("a[href]")].map((a) => a.getAttribute("href"))
    .filter((href) => !href.startsWith("#/") && !href.startsWith("blob:"));
  const handlers = [...main.querySelectorAll("*")].filter((element) =>
    [...element.attributes].some((a) =>
      a.name.startsWith("on") || ["style", "src"].includes(a.name)));
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  let overrides = 0, unisolated = 0;
  while (walker.nextNode()) {
    if (!walker.currentNode.data.includes("\\u202e")) continue;
    overrides += 1;
    if (!walker.currentNode.parentElement.closest("bdi, textarea")) unisolated += 1;
  }
  return {made: made.length, links, handlers: handlers.length, overrides, unisolated,
          pwned: window.__pwned ?? null};
}"""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    """A host whose starter profile admits a preference of 1 MB (the shipped one stops at
    500 characters), so the largest value a profile could allow is shown too."""
    folder = tmp_path_factory.mktemp("hostile")
    profiles = starter_profiles(folder / "profiles", _roomy)
    schema = profiles / "schemas" / "memory.user.dynamic" / "1.0.0.json"
    raw = json.loads(schema.read_text(encoding="utf-8"))
    raw["properties"]["preferences"]["items"]["properties"]["text"]["maxLength"] = 2_000_000
    schema.write_text(json.dumps(raw), encoding="utf-8")
    settings = {
        **SETTINGS,
        "MEMNET_PROFILES_DIR": str(profiles),
        "MEMNET_MAX_BODY_BYTES": str(4 * 1024 * 1024),
    }
    served = ServedHost(folder / "host.log", ["--data-dir", str(folder / "data")], settings)
    served.args.extend(["--settings", "none.json"])
    served.start()
    _seed(served)
    yield served
    served.stop()


@pytest.fixture(scope="module")
def base_url(host: ServedHost) -> str:
    return f"http://127.0.0.1:{host.port}"


def _roomy(raw: dict[str, Any]) -> None:
    for binding in raw["document_bindings"]:
        if binding["binding_id"] == "user_dynamic":
            binding["max_chars"] = 3_000_000


def _seed(host: ServedHost) -> None:
    """Hostile values as a person, an agent and replay's proposals would leave them."""
    patch(host, USER, DYNAMIC, [add("preferences", {"text": v, "topic": v[:90]}) for v in HOSTILE])
    patch(host, USER, DYNAMIC, [add("preferences", {"text": MEGABYTE})])
    fact = {
        "fact": HOSTILE[0],
        "confidence": 0.75,
        "evidence": {"conversation_id": "c-hostile", "message_ids": ["m1"]},
        "last_verified_at": "2026-11-24T10:00:00Z",
    }
    patch(
        host,
        USER,
        DYNAMIC,
        [add("durable_facts", fact)],
        confidence=0.75,
        evidence={"conversation_id": "c-hostile", "message_ids": ["m1"]},
    )
    events = f"/v1/tenants/{TENANT}/users/{USER}/events"
    for value in HOSTILE:
        body = {"timestamp": "2026-03-01T10:00:00Z", "source_type": "chat", "digest": value}
        headers = {"Idempotency-Key": uuid.uuid4().hex}
        api(host, "POST", events, body, AGENT_KEY, **headers)


@pytest.fixture
def watched(page: Page, base_url: str) -> Iterator[dict[str, list[str]]]:
    """Every request the page makes to another origin, and every dialog it opens."""
    seen: dict[str, list[str]] = {"foreign": [], "dialogs": []}
    page.on(
        "request",
        lambda r: None if r.url.startswith((base_url, "blob:")) else seen["foreign"].append(r.url),
    )
    page.on("dialog", lambda d: (seen["dialogs"].append(d.message), d.dismiss()))
    yield seen
    assert seen == {"foreign": [], "dialogs": []}


def assert_inert(page: Page) -> None:
    found = page.evaluate(INERT)
    assert found["made"] == 0 and found["links"] == [] and found["handlers"] == 0, found
    assert found["pwned"] is None and found["unisolated"] == 0, found


def open_all(page: Page, names: tuple[str, ...], most: int = 12) -> None:
    """Open each closed view of the page (``<summary>``) and press each reading button
    named in ``names``, as a curious reviewer would."""
    for _ in range(most):
        closed = page.locator("main details:not([open]) > summary")
        if not closed.count():
            break
        closed.first.click()
    for name in names:
        buttons = page.locator("main").get_by_role("button", name=name, exact=True)
        for button in buttons.all()[:most]:
            if button.is_visible() and button.is_enabled():
                button.click()
    page.wait_for_load_state("networkidle")


def test_hostile_values_stay_text_on_every_page(
    page: Page, host: ServedHost, watched: dict[str, list[str]]
) -> None:
    sign_in(page, ADMIN_KEY)
    for page_id, names in (
        ("memory", ("Why?",)),
        ("history", ()),
        ("review", ()),
        ("events", ("Details",)),
    ):
        open_user(page, TENANT, USER, page_id)
        open_all(page, names)
        assert_inert(page)
        axe(page)
    open_user(page, TENANT, USER, "events")
    expect(page.locator("main")).to_contain_text("window.__pwned='script'")
    open_user(page, TENANT, USER, "memory")
    expect(page.locator("main")).to_contain_text(RTL)
    assert page.evaluate(INERT)["overrides"] > 0


def test_a_megabyte_value_is_clipped_until_asked_for_then_shown_whole(
    page: Page, host: ServedHost, watched: dict[str, list[str]]
) -> None:
    sign_in(page, ADMIN_KEY)
    open_user(page, TENANT, USER, "memory")
    main = page.locator("main")
    assert page.evaluate("() => document.querySelector('main').textContent.length") < 200_000
    expect(main).not_to_contain_text("END-OF-1MB")
    main.get_by_role("button", name="show all 1,000,000 characters").first.click()
    expect(main).to_contain_text("END-OF-1MB")
    holder = main.locator("bdi", has_text="END-OF-1MB").first
    assert len(holder.text_content() or "") == len(MEGABYTE)
    page.get_by_role("link", name="History").click()  # the page still answers
    page.locator("main[data-ready='history']").wait_for()
    assert_inert(page)
