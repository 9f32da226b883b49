"""The History page (docs/console.md "History"): the timeline of a user's changes,
each change's diff, the document as of a change or an instant, revert and undo behind a
confirmation, and what a caller who may not revert is told."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta
from typing import Any

from playwright.sync_api import Locator, Page, expect

from tests.conftest import AGENT_KEY
from tests.console.documents import DYNAMIC, TENANT, add, changes, doc_path, patch, read, replace
from tests.console.steps import axe, open_user, sign_in
from tests.served import ServedHost, request

PROJECT = "projects/alpha.json"


def preference(text: str) -> dict[str, str]:
    return {"text": text}


def three_changes(host: ServedHost, user: str) -> list[dict[str, Any]]:
    """Create with one preference, add a second, reword the first: newest first."""
    patch(host, user, DYNAMIC, [add("preferences", preference("Tea, not coffee"))])
    patch(host, user, DYNAMIC, [add("preferences", preference("Replies in French"))])
    patch(host, user, DYNAMIC, [replace("/preferences/0/text", "Green tea, not coffee")])
    return changes(host, user)


def change(page: Page, change_id: str) -> Locator:
    return page.locator(f"details.change[data-change='{change_id}']")


def open_change(page: Page, change_id: str) -> Locator:
    row = change(page, change_id)
    row.locator("summary").click()
    return row


def test_the_timeline_is_newest_first_with_diffs_and_versions(page: Page, host: ServedHost) -> None:
    user = "u-history-timeline"
    patch(host, user, DYNAMIC, [add("preferences", preference("Tea, not coffee"))])
    time.sleep(1.1)  # the point-in-time picker has second precision
    patch(host, user, PROJECT, [replace("/summary", "Alpha ships in May")])
    patch(host, user, DYNAMIC, [add("preferences", preference("Replies in French"))])
    patch(host, user, DYNAMIC, [replace("/preferences/0/text", "Green tea, not coffee")])
    every = sorted(
        changes(host, user) + changes(host, user, PROJECT),
        key=lambda c: c["timestamp"],
        reverse=True,
    )

    sign_in(page)
    open_user(page, TENANT, user, "history")
    rows = page.locator("details.change")
    expect(rows).to_have_count(4)
    assert rows.evaluate_all("rows => rows.map(r => r.dataset.change)") == [
        c["change_id"] for c in every
    ]
    expect(rows.first).to_contain_text("patched by dev-admin")

    added = open_change(page, every[1]["change_id"])  # "Replies in French" added
    expect(added.locator("li.diff-add")).to_contain_text("/content/preferences/1")
    expect(added.locator("li.diff-add")).to_contain_text("Replies in French")
    reworded = open_change(page, every[0]["change_id"])
    expect(reworded.locator("ul.diff li")).to_contain_text("Green tea, not coffee")

    added.get_by_role("button", name="View the document as of this change").click()
    version = added.locator(".as-of")
    expect(version).to_contain_text("Replies in French")
    expect(version).to_contain_text("Tea, not coffee")
    expect(version).not_to_contain_text("Green tea")

    first = datetime.fromisoformat(every[-1]["timestamp"].replace("Z", "+00:00"))
    instant = (first + timedelta(seconds=1)).replace(microsecond=0)  # before the second change
    local = page.evaluate(
        "iso => { const d = new Date(iso); return new Date(d - d.getTimezoneOffset() * 60000)"
        ".toISOString().slice(0, 19); }",
        instant.isoformat(),
    )
    picker = page.get_by_role("form", name="Read a document at a point in time")
    picker.get_by_label("Document").select_option(DYNAMIC)
    picker.get_by_label("Point in time").fill(local)
    picker.get_by_role("button", name="Read").click()
    at = page.locator(
        "section", has=page.get_by_role("heading", name="The document at a point in time")
    )
    expect(at.locator(".as-of")).to_contain_text(every[-1]["change_id"])
    expect(at.locator(".as-of")).not_to_contain_text("Replies in French")
    axe(page)

    page.get_by_role("form", name="Filter the timeline").get_by_label("Document").select_option(
        PROJECT
    )
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**doc=projects*")
    page.locator("main[data-ready='history']").wait_for()
    expect(page.locator("details.change")).to_have_count(1)


def test_revert_asks_first_and_cancel_writes_nothing(page: Page, host: ServedHost) -> None:
    user = "u-history-revert"
    made = three_changes(host, user)
    oldest = made[-1]["change_id"]

    sign_in(page)
    open_user(page, TENANT, user, "history", doc=DYNAMIC)
    row = open_change(page, oldest)
    row.get_by_label("Reason (optional)").fill("the French preference was a mistake")
    row.get_by_role("button", name="Revert to this version").click()
    dialog = page.get_by_role("dialog", name="Revert to this version?")
    expect(dialog).to_contain_text(oldest)
    axe(page)
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)
    assert changes(host, user)[0]["change_id"] == made[0]["change_id"]

    row.get_by_role("button", name="Revert to this version").click()
    page.get_by_role("dialog").get_by_role("button", name="Revert").click()
    expect(page.get_by_role("status").filter(has_text="Reverted")).to_be_visible()
    newest = changes(host, user)[0]
    assert newest["reason"] == "revert" and newest["reverted_to"] == oldest
    assert newest["evidence"]["revert"]["reason"] == "the French preference was a mistake"
    assert read(host, user, DYNAMIC)["document"]["content"]["preferences"] == [
        preference("Tea, not coffee")
    ]
    expect(page.locator("details.change").first).to_contain_text("revert")
    axe(page)


def test_a_revert_after_someone_else_wrote_is_refused_and_said(
    page: Page, host: ServedHost
) -> None:
    user = "u-history-stale"
    made = three_changes(host, user)

    sign_in(page)
    open_user(page, TENANT, user, "history", doc=DYNAMIC)
    row = open_change(page, made[-1]["change_id"])
    patch(host, user, DYNAMIC, [replace("/preferences/1/text", "Replies in Portuguese")])
    row.get_by_role("button", name="Revert to this version").click()
    page.get_by_role("dialog").get_by_role("button", name="Revert").click()
    expect(row.get_by_role("alert")).to_contain_text("ETAG_MISMATCH")
    expect(row).to_contain_text("The document changed since this page was read")
    assert changes(host, user)[0]["reason"] == "live_update"  # nothing written back


def test_undo_takes_back_one_change_and_a_conflict_is_said(page: Page, host: ServedHost) -> None:
    user = "u-history-undo"
    made = three_changes(host, user)
    added, created = made[1]["change_id"], made[2]["change_id"]

    sign_in(page)
    open_user(page, TENANT, user, "history", doc=DYNAMIC)
    row = open_change(page, added)
    row.get_by_role("button", name="Undo this change").click()
    page.get_by_role("dialog", name="Undo this change?").get_by_role("button", name="Undo").click()
    expect(page.get_by_role("status").filter(has_text="Undid")).to_be_visible()
    assert changes(host, user)[0]["undone"] == added
    assert read(host, user, DYNAMIC)["document"]["content"]["preferences"] == [
        preference("Green tea, not coffee")
    ]

    patch(host, user, DYNAMIC, [replace("/preferences/0/text", "Coffee after all")])
    reworded = made[0]["change_id"]  # its text was written over since: cannot be undone
    open_user(page, TENANT, user, "history", doc=DYNAMIC)
    row = open_change(page, reworded)
    row.get_by_role("button", name="Undo this change").click()
    page.get_by_role("dialog").get_by_role("button", name="Undo").click()
    expect(row.get_by_role("alert")).to_contain_text("UNDO_CONFLICT")
    expect(row).to_contain_text("A later change touched what it wrote")
    assert read(host, user, DYNAMIC)["document"]["content"]["preferences"][0]["text"] == (
        "Coffee after all"
    )
    assert created  # the create has no undo: only revert
    row = open_change(page, created)
    expect(row.get_by_role("button", name="Undo this change")).to_have_count(0)
    axe(page)


def test_a_caller_without_admin_is_told_revert_is_not_offered(page: Page, host: ServedHost) -> None:
    user = "u-history-agent"
    made = three_changes(host, user)

    sign_in(page, AGENT_KEY)
    open_user(page, TENANT, user, "history")
    note = page.get_by_role("note").filter(has_text="Revert and undo are not offered to you")
    expect(note).to_contain_text("admin")
    expect(note).to_contain_text("dev-agent")
    row = open_change(page, made[1]["change_id"])
    expect(row.locator("li.diff-add")).to_contain_text("Replies in French")
    expect(row.get_by_role("button", name="Revert to this version")).to_have_count(0)
    expect(row).to_contain_text("Revert and undo are not offered: they need the role admin")
    axe(page)
    status, _, body = request(
        host.port,
        "POST",
        doc_path(user, DYNAMIC, ":revert"),
        {"to_change_id": made[2]["change_id"]},
        AGENT_KEY,
        **{"If-Match": read(host, user, DYNAMIC)["etag"], "Idempotency-Key": "k-agent"},
    )
    assert status == 403 and body["error"]["code"] == "ROLE_FORBIDDEN"  # the server refuses too


LARGE, SPREAD = 1000, 8  # changes, over so many documents (issue 28: "1,000 history entries")


def many_changes(host: ServedHost, user: str, doc: str, count: int) -> None:
    """``count`` changes of one project document (each rewrites its summary)."""
    patch(host, user, doc, [replace("/summary", "Version 0")])
    etag = read(host, user, doc)["etag"]
    for n in range(1, count):
        status, etag, _ = request(
            host.port,
            "PATCH",
            doc_path(user, doc),
            {"ops": [replace("/summary", f"Version {n}")]},
            AGENT_KEY,
            **{"If-Match": etag, "Idempotency-Key": f"{doc}-{n}"},
        )
        assert status == 200


def test_a_long_history_pages_and_stays_fast(page: Page, host: ServedHost) -> None:
    user = "u-history-large"
    docs = [f"projects/p{i}.json" for i in range(SPREAD)]
    started = time.monotonic()
    with ThreadPoolExecutor(SPREAD) as pool:
        list(pool.map(lambda doc: many_changes(host, user, doc, LARGE // SPREAD), docs))
    written = time.monotonic() - started
    every = sorted(
        (c for doc in docs for c in read(host, user, doc, ":history?limit=1000")["changes"]),
        key=lambda c: c["timestamp"],
        reverse=True,
    )
    assert len(every) == LARGE

    sign_in(page)
    started = time.monotonic()
    open_user(page, TENANT, user, "history")
    rows = page.locator("details.change")
    expect(rows).to_have_count(25)
    interactive = time.monotonic() - started
    pages = []
    for shown in (50, 75, 100):
        started = time.monotonic()
        page.get_by_role("button", name="Load more").click()
        expect(rows).to_have_count(shown)
        pages.append(time.monotonic() - started)
    shown_ids = rows.evaluate_all("rows => rows.map(r => r.dataset.change)")
    at = {c["change_id"]: c["timestamp"] for c in every}
    assert [at[i] for i in shown_ids] == [c["timestamp"] for c in every[:100]]  # newest first
    newest = open_change(page, shown_ids[0])
    expect(newest.locator("ul.diff li")).to_contain_text("Version")
    print(
        f"\n{LARGE} changes of {SPREAD} documents written in {written:.1f} s; first page"
        f" {interactive:.2f} s; next pages {', '.join(f'{p:.2f}' for p in pages)} s"
    )
    assert interactive < 5 and max(pages) < 2
