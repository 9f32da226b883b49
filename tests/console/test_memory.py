"""The Memory page (docs/console.md "Memory"): a user's documents binding by binding,
readably and as JSON, with sizes against the profile's limits, freshness, and why a
value is there."""

from __future__ import annotations

import json

from playwright.sync_api import Page, expect

from tests.conftest import PRIVACY_KEY
from tests.console.documents import DYNAMIC, TENANT, add, patch, read, replace
from tests.console.steps import axe, open_user, sign_in
from tests.served import ServedHost

FACT = {
    "fact": "Works in Lisbon",
    "confidence": 0.9,
    "evidence": {"conversation_id": "conv-7", "message_ids": ["m1", "m2"]},
    "last_verified_at": "2024-01-02T03:04:05Z",  # over the profile's 365 days: stale
}


def test_memory_shows_each_document_readably_as_json_with_its_size_and_why(
    page: Page, host: ServedHost
) -> None:
    user = "u-memory-readable"
    patch(host, user, DYNAMIC, [add("preferences", {"text": "Prefers short answers"})])
    evidence = {"conversation_id": "conv-7", "message_ids": ["m1", "m2"]}
    patch(host, user, DYNAMIC, [add("durable_facts", FACT)], confidence=0.9, evidence=evidence)
    patch(host, user, "projects/alpha.json", [replace("/summary", "Alpha ships in May")])
    stored = read(host, user, DYNAMIC)["document"]
    size = len(json.dumps(stored, ensure_ascii=False, separators=(",", ":")))

    sign_in(page)
    open_user(page, TENANT, user, "memory")
    main = page.locator("main")
    expect(main.get_by_role("heading", name="user_static")).to_be_visible()
    expect(main.get_by_text("None yet: nothing has been written")).to_be_visible()
    dynamic = main.get_by_role("article", name=DYNAMIC)
    expect(dynamic.get_by_role("heading", name="durable_facts")).to_be_visible()
    expect(dynamic.get_by_text("Works in Lisbon")).to_be_visible()
    expect(dynamic.get_by_text("Prefers short answers")).to_be_visible()
    expect(dynamic).to_contain_text(f"{size:,} of 18,000 characters")
    expect(dynamic).to_contain_text("/durable_facts 1 of 160")
    expect(dynamic).to_contain_text(stored["change_id"])
    expect(dynamic.locator(".stale")).to_have_count(1)
    expect(dynamic.locator(".stale")).to_contain_text("not verified within")
    project = main.get_by_role("article", name="projects/alpha.json")
    expect(project.get_by_text("Alpha ships in May")).to_be_visible()

    dynamic.get_by_text("As JSON").click()
    expect(dynamic.locator("pre.json")).to_contain_text('"fact": "Works in Lisbon"')

    dynamic.get_by_role("button", name="Why /durable_facts/0", exact=True).click()
    answer = dynamic.locator(".why-answer")
    expect(answer).to_contain_text("dev-admin")
    expect(answer).to_contain_text("conv-7")
    expect(answer).to_contain_text("origin")
    axe(page)


def test_a_caller_without_the_read_role_is_told_the_memory_is_hidden(page: Page) -> None:
    sign_in(page, PRIVACY_KEY)
    open_user(page, TENANT, "u-memory-hidden", "memory")
    expect(page.locator("main")).to_contain_text("Hidden from you")
    expect(page.locator("main")).to_contain_text("ROLE_FORBIDDEN")
    axe(page)


HOSTILE = [
    '<img src=x onerror="window.pwned=1">',
    "javascript:window.pwned=1",
    "\u202eevil\u202c <b>bold</b>",
]


def test_hostile_values_and_names_are_shown_as_text_on_memory_and_history(
    page: Page, host: ServedHost
) -> None:
    user = "u-memory-hostile"
    patch(host, user, DYNAMIC, [add("preferences", {"text": value}) for value in HOSTILE])
    facets = {'<img src=x onerror="window.pwned=1">': "javascript:window.pwned=1"}
    patch(host, user, "projects/alpha.json", [replace("/facets", facets)])

    sign_in(page)
    for page_id in ("memory", "history"):
        open_user(page, TENANT, user, page_id)
        main = page.locator("main")
        if page_id == "history":
            expect(main.locator("details.change")).to_have_count(2)
            for row in main.locator("details.change summary").all():
                row.click()
            expect(main.locator("ul.diff li")).to_have_count(4)
        else:
            main.get_by_role("button", name="Why /preferences/0", exact=True).click()
            expect(main.locator(".why-answer")).to_contain_text("dev-admin")
        for value in HOSTILE:  # the diff shows items as JSON: quotes escaped
            shown = json.dumps(value, ensure_ascii=False)[1:-1] if page_id == "history" else value
            expect(main.get_by_text(shown).first).to_be_attached()
        expect(main.locator("img, script, iframe, a[href^='javascript'], b")).to_have_count(0)
        assert page.evaluate("() => window.pwned") is None
        axe(page)
