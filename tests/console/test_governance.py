"""The Governance page (docs/console.md "Governance"): forgetting a conversation and a
user behind typed confirmation, the job followed to its receipt; legal holds set and
cleared, and what a hold keeps from a forget; an export followed, its files downloaded
and checked, then deleted; and what a caller's roles hide, said as hidden.

The page asks the API rather than guessing from roles: the user's forget job answers 404
for a user never forgotten, the holds 403 to a caller without ``admin``; the browser logs
each as a failed load (which the page fixture lets pass), and the tests check what the page
says of them."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, Route, expect

from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY
from tests.console.steps import api, axe, open_user, sign_in
from tests.served import ServedHost, request

TENANT = "t1"


def user_path(user: str, *rest: str) -> str:
    return "/".join([f"/v1/tenants/{TENANT}/users/{user}", *rest])


def record(host: ServedHost, user: str, digest: str, conversation: str) -> None:
    body = {
        "timestamp": "2026-03-01T10:00:00Z",
        "source_type": "chat",
        "digest": digest,
        "evidence": {"conversation_id": conversation},
    }
    key = {"Idempotency-Key": uuid.uuid4().hex}
    api(host, "POST", user_path(user, "events"), body, AGENT_KEY, **key)


def listed(host: ServedHost, user: str, conversation: str | None = None) -> list[Any]:
    """The digests the API lists for the user (one conversation's, or all)."""
    target = user_path(user, "events?limit=500")
    if conversation:
        target += f"&conversation_id={conversation}"
    return [e["digest"] for e in api(host, "GET", target, key=AGENT_KEY)["events"]]


def open_as(page: Page, key: str, user: str, **params: str) -> None:
    """Sign in with `key` (signing out whoever is in) and open the user's Governance."""
    if page.get_by_role("button", name="Sign out").count():
        page.get_by_role("button", name="Sign out").click()
    sign_in(page, key)
    open_user(page, TENANT, user, "governance", **params)


def confirm_typed(page: Page, action: str, typed: str) -> None:
    """The confirm button stays disabled until exactly `typed` is typed, then confirms."""
    dialog = page.get_by_role("dialog")
    button = dialog.get_by_role("button", name=action, exact=True)
    expect(button).to_be_disabled()
    box = dialog.get_by_label(f"Type {typed} to confirm")
    box.fill(typed[:-1])
    expect(button).to_be_disabled()
    box.fill(typed + " ")
    expect(button).to_be_disabled()
    box.fill(typed)
    expect(button).to_be_enabled()
    button.click()
    expect(dialog).to_have_count(0)


def test_forgetting_a_conversation_follows_the_job_to_its_receipt(
    page: Page, host: ServedHost
) -> None:
    user = "u-gov-conversation"
    for n in range(3):
        record(host, user, f"learned in c1 #{n}", "c1")
    record(host, user, "learned in c2", "c2")
    open_as(page, PRIVACY_KEY, user)
    expect(page.get_by_text("No forget job for this user.")).to_be_visible()
    page.get_by_label("Conversation id").fill("c1")
    page.get_by_role("button", name="Forget conversation…").click()
    confirm_typed(page, "Forget conversation", "c1")
    expect(page.get_by_text("Forget job: done")).to_be_visible()
    receipt = page.locator(".receipt")
    expect(receipt.get_by_role("heading")).to_contain_text("Receipt rcpt_")
    expect(receipt).to_contain_text("forget_conversation")
    deleted = receipt.get_by_role("table", name="Deleted, by kind")
    expect(deleted.get_by_role("row", name="events")).to_contain_text("3")
    assert "conversation=c1" in page.url
    axe(page)
    assert listed(host, user, "c1") == []
    assert listed(host, user) == ["learned in c2"]
    # The receipt the page showed is the API's.
    status = api(host, "GET", user_path(user, "forget/conversations/c1"), key=PRIVACY_KEY)
    expect(receipt.get_by_role("heading")).to_have_text(f"Receipt {status['receipt_id']}")


def test_forgetting_the_user_needs_their_id_typed_and_ends_verified(
    page: Page, host: ServedHost
) -> None:
    user = "u-gov-forget-user"
    record(host, user, "something to forget", "c1")
    open_as(page, PRIVACY_KEY, user)
    page.get_by_role("button", name="Forget this user…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(user)
    axe(page)
    confirm_typed(page, "Forget user", user)
    expect(page.get_by_text("Forget job: done")).to_be_visible()
    expect(page.get_by_role("list", name="Phases")).to_contain_text("deleting ✓")
    receipt = page.locator(".receipt")
    expect(receipt).to_contain_text("forget_user")
    expect(receipt).to_contain_text("blobs remaining 0")
    expect(receipt.get_by_role("row", name="events")).to_contain_text("1")
    assert listed(host, user) == []
    assert api(host, "GET", user_path(user, "forget"), key=ADMIN_KEY)["status"] == "done"
    # A reload shows the finished job and its receipt again.
    page.reload()
    page.locator("main[data-ready='governance']").wait_for()
    expect(page.locator(".receipt")).to_contain_text("forget_user")


def test_cancelling_the_typed_confirmation_forgets_nothing(page: Page, host: ServedHost) -> None:
    user = "u-gov-cancel"
    record(host, user, "kept", "c1")
    open_as(page, PRIVACY_KEY, user)
    page.get_by_role("button", name="Forget this user…").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("dialog")).to_have_count(0)
    expect(page.get_by_text("No forget job for this user.")).to_be_visible()
    assert listed(host, user) == ["kept"]


def test_a_legal_hold_keeps_data_from_a_forget_until_cleared(page: Page, host: ServedHost) -> None:
    user = "u-gov-hold"
    record(host, user, "held evidence", "c1")
    open_as(page, ADMIN_KEY, user)
    expect(page.get_by_text("This user has no hold of their own.")).to_be_visible()
    page.get_by_label("Reason").fill("Case 42 <b>urgent</b>")
    page.get_by_role("checkbox", name="events").check()
    page.get_by_role("button", name="Hold this user…").click()
    page.get_by_role("dialog").get_by_role("button", name="Set hold").click()
    expect(page.get_by_text("This user is under a legal hold.")).to_be_visible()
    holds = page.get_by_role("table", name=f"Legal holds of tenant {TENANT}")
    expect(holds.get_by_role("row", name=f"user {user}")).to_contain_text("Case 42 <b>urgent</b>")
    axe(page)
    hold = api(host, "GET", f"/v1/admin/tenants/{TENANT}/holds", key=ADMIN_KEY)["users"][user]
    assert hold["reason"] == "Case 42 <b>urgent</b>" and hold["kinds"] == ["events"]

    # The privacy officer forgets the conversation: the held events are kept, and the
    # job and its receipt say so and why.
    open_as(page, PRIVACY_KEY, user, conversation="c1")
    expect(page.get_by_text("No forget job for this conversation.")).to_be_visible()
    page.get_by_role("button", name="Forget conversation…").click()
    confirm_typed(page, "Forget conversation", "c1")
    expect(page.get_by_text("Forget job: done")).to_be_visible()
    kept = page.locator(".receipt").get_by_role("table", name="Kept, not deleted")
    expect(kept.get_by_role("row", name="events")).to_contain_text("legal hold")
    expect(kept.get_by_role("row", name="events")).to_contain_text("Case 42")
    assert listed(host, user, "c1") == ["held evidence"]

    # The admin clears it (asked first); nothing is deleted by that.
    open_as(page, ADMIN_KEY, user)
    page.get_by_role("button", name="Clear this user's hold…").click()
    page.get_by_role("dialog").get_by_role("button", name="Clear hold").click()
    expect(page.get_by_text("This user has no hold of their own.")).to_be_visible()
    assert api(host, "GET", f"/v1/admin/tenants/{TENANT}/holds", key=ADMIN_KEY)["users"] == {}
    assert listed(host, user) == ["held evidence"]


def test_an_export_is_followed_downloaded_and_deleted(page: Page, host: ServedHost) -> None:
    user = "u-gov-export"
    record(host, user, "exported digest <script>x</script>", "c1")
    open_as(page, AGENT_KEY, user)
    page.get_by_role("button", name="Export this user's memory").click()
    expect(page.get_by_text("Export: done")).to_be_visible()
    files = page.get_by_role("table", name="Files of this export")
    expect(files.get_by_role("row", name="memory.md")).to_be_visible()
    axe(page)
    export_id = page.get_by_label("Export id").input_value()
    assert export_id.startswith("exp_") and f"export={export_id}" in page.url

    with page.expect_download() as waiting:
        page.get_by_role("button", name="Download memory.md").click()
    memory = waiting.value
    assert memory.suggested_filename == "memory.md"
    content = Path(memory.path()).read_text(encoding="utf-8")
    assert "exported digest" in content
    with page.expect_download() as waiting:
        page.get_by_role("button", name="Download manifest.json").click()
    manifest = json.loads(Path(waiting.value.path()).read_text(encoding="utf-8"))
    assert manifest["export_id"] == export_id and manifest["user_id"] == user
    expect(page.get_by_text("Saved manifest.json.")).to_be_visible()
    assert page.evaluate("() => document.querySelectorAll('a[href^=\"blob:\"]').length") == 0

    page.get_by_role("button", name="Delete this export…").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete export").click()
    expect(page.get_by_text(f"Export {export_id} deleted.")).to_be_visible()
    status, _, answer = request(
        host.port, "GET", user_path(user, "exports", export_id), None, AGENT_KEY
    )
    assert status == 404 and answer["error"]["code"] == "EXPORT_NOT_FOUND"


def test_what_a_callers_roles_rule_out_is_said_to_be_hidden(page: Page) -> None:
    user = "u-gov-hidden"
    open_as(page, AGENT_KEY, user)  # read, write, debug: no forget, no admin
    forget = page.get_by_role("region", name="Forget", exact=True)
    expect(forget.get_by_role("note").first).to_contain_text("Hidden from you")
    expect(forget).to_contain_text("needs the 'forget' role")
    expect(forget.get_by_role("button", name="Forget this user…")).to_have_count(0)
    holds = page.get_by_role("region", name="Legal holds")
    expect(holds.get_by_role("note")).to_contain_text("ROLE_FORBIDDEN")
    expect(holds.get_by_role("button", name="Hold this user…")).to_have_count(0)
    expect(page.get_by_role("button", name="Export this user's memory")).to_be_visible()
    axe(page)

    open_as(page, PRIVACY_KEY, user)  # forget only
    expect(page.get_by_role("button", name="Forget this user…")).to_be_visible()
    expect(page.get_by_role("region", name="Legal holds").get_by_role("note")).to_contain_text(
        "Hidden from you"
    )
    export = page.get_by_role("region", name="Export", exact=True)
    expect(export.get_by_role("note")).to_contain_text("needs the 'read' role")


def test_only_object_urls_the_console_made_itself_become_links(page: Page) -> None:
    """The download exception of dom.js h() is narrow: a `blob:` URL the console made with
    ownObjectUrl is a link until revoked; any other `blob:`, `javascript:` or web URL is not."""
    sign_in(page, AGENT_KEY)
    found = re.search(r"/console/a/([0-9a-f]{16})/app\.js", page.content())
    assert found is not None
    result = page.evaluate(
        """async (version) => {
            const dom = await import(`/console/a/${version}/lib/dom.js`);
            const refused = (href) => {
                try { dom.h("a", {href}); return false; } catch { return true; }
            };
            const own = dom.ownObjectUrl(new Blob(["x"]));
            const linked = dom.h("a", {href: own, download: "x.txt"}).getAttribute("href") === own;
            const other = URL.createObjectURL(new Blob(["y"]));
            const refusedBefore = [other, "javascript:alert(1)", "https://example.com/",
                "blob:" + own].map(refused);
            dom.revokeObjectUrl(own);
            return {linked, refusedBefore, revoked: refused(own)};
        }""",
        found.group(1),
    )
    assert result == {"linked": True, "refusedBefore": [True, True, True, True], "revoked": True}


def test_a_running_job_neither_holds_the_page_nor_is_asked_about_after_leaving(
    page: Page, host: ServedHost
) -> None:
    """The page shows at once and fills the job in as it is followed; once the person has
    gone to another page, the job is not asked about again, and nothing of it lands
    there."""
    sign_in(page, ADMIN_KEY)
    held: list[Route] = []
    page.route("**/exports/exp_running", lambda route: held.append(route))
    open_user(page, TENANT, "u-gov-running", "governance", export="exp_running")
    assert len(held) == 1  # asked, not answered yet: the page did not wait for it
    page.get_by_role("link", name="Events").click()
    page.locator("main[data-ready='events']").wait_for()
    running = {"export_id": "exp_running", "status": "running", "progress": {"records": 1}}
    held[0].fulfill(status=200, content_type="application/json", body=json.dumps(running))
    page.wait_for_timeout(2_000)  # longer than the first poll's wait
    assert len(held) == 1
    expect(page.locator("main h1")).to_have_text("Events")
