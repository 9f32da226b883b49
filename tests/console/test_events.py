"""The Events page (docs/console.md "Events"): the listing paged with "Load more", a
search with filters, one conversation's events, an event's record, hostile digests shown
as text, and a caller who may not read events told so."""

from __future__ import annotations

import re
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from playwright.sync_api import Page, expect

from tests.conftest import AGENT_KEY, PRIVACY_KEY
from tests.console.steps import api, axe, open_user, sign_in
from tests.served import ServedHost

TENANT = "t1"
HOSTILE = '<img src=x onerror="document.title=1"> <a href="javascript:alert(1)">x</a> \u202egnp.exe'


def events_path(user: str) -> str:
    return f"/v1/tenants/{TENANT}/users/{user}/events"


def record(host: ServedHost, user: str, digest: str, **fields: Any) -> dict[str, Any]:
    """One event written as an agent would (dev-agent may name any service)."""
    body = {"timestamp": "2026-03-01T10:00:00Z", "source_type": "chat", "digest": digest, **fields}
    answer = api(
        host, "POST", events_path(user), body, AGENT_KEY, **{"Idempotency-Key": uuid.uuid4().hex}
    )
    return dict(answer["event"])


def shown(page: Page) -> Any:
    return page.locator("main ol.pager-list > li")


def test_the_listing_pages_250_events_with_load_more(page: Page, host: ServedHost) -> None:
    user = "u-events-paging"
    with ThreadPoolExecutor(4) as writers:  # ids are time-sortable: each thread writes in order
        list(
            writers.map(
                lambda k: [
                    record(
                        host,
                        user,
                        f"event number {n:03d}",
                        evidence={"conversation_id": f"c{n % 3}"},
                    )
                    for n in range(k, 250, 4)
                ],
                range(4),
            )
        )
    record(host, user, HOSTILE)
    sign_in(page, AGENT_KEY)
    open_user(page, TENANT, user, "events")
    status = page.get_by_role("status").filter(has_text="shown")
    expect(status).to_have_text("50 shown")
    expect(shown(page)).to_have_count(50)
    more = page.get_by_role("button", name="Load more")
    for count in (100, 150, 200, 250):
        more.click()
        expect(status).to_have_text(f"{count} shown")
    more.click()
    expect(status).to_have_text("251 shown, all")
    expect(more).to_be_hidden()
    digests = shown(page).locator(".event-digest").all_inner_texts()
    assert sorted(digests[:250]) == [f"event number {n:03d}" for n in range(250)]
    # Hostile content is text: no element, no link, no script ran.
    expect(shown(page).last).to_contain_text('<img src=x onerror="document.title=1">')
    assert page.locator("main img, main a[href^='javascript']").count() == 0
    assert page.title() != "1"
    # An event's stored record, on demand.
    first = shown(page).first
    first.get_by_role("button", name="Details").click()
    expect(first.get_by_role("button", name="Details")).to_have_attribute("aria-expanded", "true")
    expect(first.locator("pre.json")).to_contain_text('"recorded_by": "dev-agent"')
    # A search pages too: each "Load more" asks for more of the best (up to 100).
    open_user(page, TENANT, user, "events", q="number", limit="20")
    expect(status).to_have_text("20 shown")
    page.get_by_role("button", name="Load more").click()
    expect(status).to_have_text("40 shown")
    found = shown(page).locator(".event-digest").all_inner_texts()
    assert len(set(found)) == 40 and all(d.startswith("event number") for d in found)


def test_a_search_with_filters_finds_the_right_events(page: Page, host: ServedHost) -> None:
    user = "u-events-search"
    record(host, user, "Solr cluster sizing decided", service_id="svc-a", keywords=["infra"])
    record(
        host,
        user,
        "Solr cluster moved to spring",
        service_id="svc-b",
        timestamp="2026-04-02T09:00:00Z",
        keywords=["infra"],
    )
    record(
        host, user, "Solr upgrade postponed", service_id="svc-b", timestamp="2026-05-02T09:00:00Z"
    )
    record(host, user, "Lunch preferences noted", service_id="svc-b")
    sign_in(page, AGENT_KEY)
    open_user(page, TENANT, user, "events")
    page.get_by_label("Search text").fill("solr cluster")
    page.get_by_label("Services (comma-separated)").fill("svc-b")
    page.get_by_label("From (local time)").fill("2026-04-01T00:00:00")
    page.get_by_role("button", name="Find").click()
    page.locator("main[data-ready='events']").wait_for()
    expect(page.get_by_role("heading", name="Search results")).to_be_visible()
    expect(page.get_by_role("status").filter(has_text="shown")).to_have_text("2 shown, all")
    expect(shown(page).first).to_contain_text("Solr cluster moved to spring")
    expect(shown(page).first).to_contain_text("svc-b")
    expect(shown(page).first).to_contain_text(re.compile(r"score \d\.\d{3}"))
    expect(shown(page).nth(1)).to_contain_text("Solr upgrade postponed")
    assert "q=solr+cluster" in page.url and "service=svc-b" in page.url
    axe(page)
    # Keywords narrow it further; the route keeps the filters for a reload.
    page.get_by_label("Keywords (comma-separated)").fill("infra")
    page.get_by_role("button", name="Find").click()
    page.locator("main[data-ready='events']").wait_for()
    expect(page.get_by_role("status").filter(has_text="shown")).to_have_text("1 shown, all")
    page.reload()
    page.locator("main[data-ready='events']").wait_for()
    expect(shown(page)).to_have_count(1)
    expect(page.get_by_label("Keywords (comma-separated)")).to_have_value("infra")


def test_one_conversations_events_are_listed(page: Page, host: ServedHost) -> None:
    user = "u-events-conversation"
    record(host, user, "from the first", evidence={"conversation_id": "conv-1"})
    record(host, user, "from the tenth", evidence={"conversation_id": "conv-10"})
    record(
        host,
        user,
        "also from the first",
        snapshot_uri=f"blob://tenants/{TENANT}/users/{user}/snapshots/conv-1/s1.json",
    )
    sign_in(page, AGENT_KEY)
    open_user(page, TENANT, user, "events")
    expect(shown(page)).to_have_count(3)
    shown(page).first.get_by_role("button", name="Only this conversation").click()
    page.locator("main[data-ready='events']").wait_for()
    expect(page.get_by_label("Conversation (listing only)")).to_have_value("conv-1")
    expect(shown(page)).to_have_count(2)
    expect(page.locator("main ol.pager-list")).not_to_contain_text("from the tenth")
    # Search has no conversation filter: the page says so rather than ignoring it.
    page.get_by_label("Search text").fill("first")
    page.get_by_role("button", name="Find").click()
    page.locator("main[data-ready='events']").wait_for()
    expect(page.get_by_role("alert")).to_contain_text("Search cannot filter by conversation")


def test_a_caller_who_may_not_read_events_is_told_they_are_hidden(page: Page) -> None:
    sign_in(page, PRIVACY_KEY)
    open_user(page, TENANT, "u-events-hidden", "events")
    note = page.get_by_role("note")
    expect(note).to_contain_text("Hidden from you")
    expect(note).to_contain_text("ROLE_FORBIDDEN")
    axe(page)
