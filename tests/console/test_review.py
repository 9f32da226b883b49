"""The console's Review page (docs/console.md "Review"): the proposal queue with approve,
edit (checked against the schema in the page before anything is sent) and reject; parked
replay conflicts retried and discarded; each snapshot's replay status, its details and a
redrive; and the sections a caller's roles hide, said as hidden.

The data is real: proposals come from an agent's writes below the profile's durable
threshold; replays from uploaded snapshots, worked by the host's own replay worker. This
module runs its own host whose extractor is the OpenAI-compatible one against the fake
chat-completions server of ``tests/fake_openai.py``, scripted per snapshot (its
``project_hint``), so that a replay can be made to conflict: while the "model" answers, a
live writer replaces the notes the replay then appends to, and the patch is parked."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Page, Request, expect

from tests.conftest import ADMIN_KEY, AGENT_KEY, PRIVACY_KEY, REPO
from tests.console.conftest import SETTINGS, local_host
from tests.console.steps import api, axe, open_user, sign_in
from tests.fake_openai import Answer, serving
from tests.served import ServedHost, request

TENANT = "t1"
COMPLETION = json.loads((REPO / "tests" / "data" / "openai" / "good.json").read_text())
SAID = "We decided to ship the beta on Friday."
NOTE = "We decided to ship the beta on Friday"
HOSTILE = "<img src=x onerror=window.pwned=1><a href=javascript:window.pwned=2>x</a>"

Script = Callable[[dict[str, Any]], Any]  # the prompt's context -> the model's output
SCRIPTS: dict[str, list[Script]] = {}  # by project_hint: one per call, the last repeats


def scripted(body: dict[str, Any]) -> dict[str, Any]:
    """The fake model's answer: the next script of the snapshot's project_hint."""
    context = body["messages"][1]["content"].split("\n", 1)[0].removeprefix("Context: ")
    shown = json.loads(context)
    scripts = SCRIPTS[shown["project_hint"]]
    output = (scripts.pop(0) if len(scripts) > 1 else scripts[0])(shown)
    answer = json.loads(json.dumps(COMPLETION))
    answer["choices"][0]["message"]["content"] = (
        output if isinstance(output, str) else json.dumps(output)
    )
    return answer


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedHost]:
    """This module's host: the console's settings, with the scripted model as extractor
    and automatic retries of a parked patch far off (an admin decides them here)."""
    with serving("chat/completions") as fake:
        fake.queue(Answer(scripted))
        settings = {
            **SETTINGS,
            "MEMNET_EXTRACTOR": "openai",
            "MEMNET_OPENAI_BASE_URL": f"{fake.url}/v1",
            "MEMNET_OPENAI_MODEL": "gpt-4o-mini",
            "MEMNET_EXTRACTOR_MAX_RETRIES": "0",
            "MEMNET_EXTRACTOR_TIMEOUT_SECONDS": "20",
            "MEMNET_REPLAY_RETRY_BASE_SECONDS": "3600",
        }
        with local_host(tmp_path_factory, "review", settings) as served:
            yield served


@pytest.fixture(scope="module")
def base_url(host: ServedHost) -> str:
    return f"http://127.0.0.1:{host.port}"


# -- making data through the API -------------------------------------------------------------


def user_url(user: str) -> str:
    return f"/v1/tenants/{TENANT}/users/{user}"


def dynamic_url(user: str) -> str:
    return f"{user_url(user)}/documents/user/user_dynamic.json"


def project_url(user: str, project: str) -> str:
    return f"{user_url(user)}/documents/projects/{project}.json"


def patch(host: ServedHost, url: str, ops: list[Any], key: str = AGENT_KEY, **body: Any) -> Any:
    """One write: a create when the document is missing, else an update of its version."""
    status, etag, _ = request(host.port, "GET", url, key=ADMIN_KEY)
    precondition = {"If-Match": etag} if status == 200 else {"If-None-Match": "*"}
    headers = {**precondition, "Idempotency-Key": uuid.uuid4().hex}
    return api(host, "PATCH", url, {"ops": ops, **body}, key, **headers)


def propose(host: ServedHost, user: str, fact: str) -> None:
    """An agent's durable fact below the profile's threshold: a proposal, not a fact."""
    value = {
        "fact": fact,
        "confidence": 0.75,
        "evidence": {"conversation_id": "c1", "message_ids": ["m1"]},
        "last_verified_at": "2026-11-24T10:00:00Z",
    }
    answer = patch(
        host,
        dynamic_url(user),
        [{"op": "add", "path": "/content/durable_facts/-", "value": value}],
        confidence=0.75,
        evidence={"conversation_id": "c1", "message_ids": ["m1"]},
    )
    assert answer["redirected_ops"], answer


def content(host: ServedHost, url: str) -> Any:
    return api(host, "GET", url)["document"]["content"]


def facts(host: ServedHost, user: str) -> list[str]:
    return [f["fact"] for f in content(host, dynamic_url(user))["durable_facts"]]


def pending(host: ServedHost, user: str) -> list[str]:
    found = content(host, dynamic_url(user))["pending_confirmations"]
    return [p["candidate"]["fact"] for p in found]


def note_patch(project: str) -> Script:
    """The model's answer: one note for the project, citing the user's message."""

    def output(shown: dict[str, Any]) -> dict[str, Any]:
        value = {"note": NOTE, "at": shown["now"]}
        return {
            "digests": [],
            "patches": [
                {
                    "target_binding_id": "project_doc",
                    "target_path": f"{project}.json",
                    "ops": [{"op": "add", "path": "/content/recent_notes/-", "value": value}],
                    "confidence": 0.9,
                    "evidence": {"message_ids": ["m1"]},
                }
            ],
        }

    return output


def conflicting(host: ServedHost, user: str, project: str) -> Script:
    """As :func:`note_patch`, but a live writer replaces the notes while the model answers:
    the replay's append then conflicts and is parked."""

    def output(shown: dict[str, Any]) -> dict[str, Any]:
        live = [{"op": "replace", "path": "/content/recent_notes", "value": [{"note": "Live"}]}]
        patch(host, project_url(user, project), live, ADMIN_KEY)
        return note_patch(project)(shown)

    return output


def upload(host: ServedHost, user: str, conversation: str, project: str, *scripts: Script) -> None:
    """A snapshot whose replay the scripts answer (by its project hint)."""
    SCRIPTS[project] = list(scripts)
    transcript = {
        "messages": [
            {"id": "m1", "role": "user", "text": SAID, "timestamp": "2026-11-24T10:00:00Z"}
        ],
        "project_hint": project,
    }
    url = f"{user_url(user)}/snapshots/{conversation}/s1"
    api(host, "PUT", url, transcript, AGENT_KEY)


def replay(host: ServedHost, user: str, conversation: str) -> Any:
    return api(host, "GET", f"{user_url(user)}/snapshots/{conversation}/s1/replay")


def settled(host: ServedHost, user: str, conversation: str, *statuses: str) -> Any:
    """The replay once its status is one of ``statuses`` (the host's worker runs it)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = replay(host, user, conversation)
        if found["status"] in statuses:
            return found
        time.sleep(0.2)
    pytest.fail(f"replay {conversation} is {found['status']}, not {statuses}")


def posts(page: Page) -> list[str]:
    """The URLs of the POSTs the page sends from now on."""
    sent: list[str] = []

    def keep(sent_request: Request) -> None:
        if sent_request.method == "POST":
            sent.append(sent_request.url)

    page.on("request", keep)
    return sent


def confirm(page: Page, action: str) -> None:
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name=action, exact=True).click()
    expect(dialog).to_have_count(0)


def section(page: Page, name: str) -> Any:
    return page.get_by_role("region", name=name)


# -- proposals -------------------------------------------------------------------------------


def test_proposals_are_approved_and_rejected_after_asking(host: ServedHost, page: Page) -> None:
    user = "u-review-decide"
    propose(host, user, "Works from Lisbon")
    propose(host, user, "Owns a boat")
    sign_in(page, ADMIN_KEY)
    open_user(page, TENANT, user, "review")
    queue = section(page, "Proposals")
    expect(queue.get_by_role("article")).to_have_count(2)
    expect(queue).to_contain_text("Works from Lisbon")
    expect(queue).to_contain_text("dev-agent")
    axe(page)

    lisbon = queue.get_by_role("article").filter(has_text="Works from Lisbon")
    lisbon.get_by_label("Note for the record (optional)").fill("Confirmed with the user")
    lisbon.get_by_role("button", name="Approve").click()
    axe(page)  # the confirmation dialog
    confirm(page, "Approve")
    expect(queue.get_by_role("status").first).to_contain_text("Proposal approved by dev-admin")
    expect(queue.get_by_role("article")).to_have_count(1)
    assert facts(host, user) == ["Works from Lisbon"]
    assert pending(host, user) == ["Owns a boat"]

    boat = queue.get_by_role("article").filter(has_text="Owns a boat")
    boat.get_by_role("button", name="Reject").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    assert pending(host, user) == ["Owns a boat"]  # cancelled: nothing sent
    boat.get_by_role("button", name="Reject").click()
    confirm(page, "Reject")
    expect(queue).to_contain_text("Proposal rejected by dev-admin")
    expect(queue).to_contain_text("No proposals wait for review.")
    assert pending(host, user) == [] and facts(host, user) == ["Works from Lisbon"]
    history = api(host, "GET", dynamic_url(user) + ":history")
    origins = [change.get("origin") or {} for change in history["changes"]]
    reviews = [origin["review"] for origin in origins if "review" in origin]
    assert {r["status"] for r in reviews} == {"approved", "rejected"}
    assert "Confirmed with the user" in {r.get("note") for r in reviews}


def proposal_card(host: ServedHost, page: Page, user: str, fact: str) -> Any:
    """One proposal of ``user``'s, made through the API, as the Review page shows it."""
    propose(host, user, fact)
    sign_in(page, ADMIN_KEY)
    open_user(page, TENANT, user, "review")
    return section(page, "Proposals").get_by_role("article")


def test_an_edit_is_checked_against_the_schema_before_it_is_sent(
    host: ServedHost, page: Page
) -> None:
    user = "u-review-edit"
    card = proposal_card(host, page, user, "Likes tea")
    card.get_by_role("button", name="Edit").click()
    editor = card.get_by_label("Edited candidate (JSON) for /durable_facts/-")
    expect(editor).to_be_focused()
    sent = posts(page)

    editor.fill("{not json")
    card.get_by_role("button", name="Check and send edit").click()
    expect(card.get_by_role("alert")).to_contain_text("Not JSON")

    editor.fill(json.dumps({"fact": "", "confidence": 2, "colour": "blue"}))
    card.get_by_role("button", name="Check and send edit").click()
    alert = card.get_by_role("alert")
    expect(alert).to_contain_text("Not sent: the edit does not match the schema")
    for said in ("evidence", "last_verified_at", "too short", "colour"):
        expect(alert).to_contain_text(said)
    expect(editor).to_have_attribute("aria-invalid", "true")
    axe(page)
    page.wait_for_timeout(300)  # a request sent by mistake would have left by now
    assert sent == [] and pending(host, user) == ["Likes tea"]

    edited = {
        "fact": "Likes green tea",
        "confidence": 1,
        "evidence": {"conversation_id": "c1", "message_ids": ["m1"]},
        "last_verified_at": "2026-11-25T09:00:00Z",
    }
    editor.fill(json.dumps(edited))
    card.get_by_role("button", name="Check and send edit").click()
    confirm(page, "Send edit")
    expect(section(page, "Proposals")).to_contain_text("Proposal edited by dev-admin")
    assert len(sent) == 1 and sent[0].split("?")[0].endswith("/edit")
    [stored] = content(host, dynamic_url(user))["durable_facts"]
    assert stored["fact"] == "Likes green tea" and stored["confidence"] == 1
    assert stored["evidence"]["reviewed_by"] == "dev-admin"
    assert pending(host, user) == []


def test_an_edit_the_server_refuses_keeps_the_editor_and_says_why(
    host: ServedHost, page: Page
) -> None:
    user = "u-review-refused"
    card = proposal_card(host, page, user, "Walks to work")
    [waiting] = api(host, "GET", f"{user_url(user)}/proposals")["proposals"]
    api(host, "POST", f"{user_url(user)}/proposals/{waiting['proposal_id']}/approve")
    card.get_by_role("button", name="Edit").click()
    editor = card.get_by_label("Edited candidate (JSON) for /durable_facts/-")
    edited = editor.input_value().replace("Walks to work", "Cycles to work")
    editor.fill(edited)
    card.get_by_role("button", name="Check and send edit").click()
    confirm(page, "Send edit")
    expect(card.get_by_role("alert")).to_contain_text("PROPOSAL_ALREADY_REVIEWED")
    expect(editor).to_have_value(edited)  # what the person typed is kept
    assert facts(host, user) == ["Walks to work"]
    axe(page)


# -- parked replay conflicts -----------------------------------------------------------------


def test_parked_conflicts_are_retried_and_discarded(host: ServedHost, page: Page) -> None:
    user = "u-review-parked"
    for conversation, project in (("c-retry", "retried"), ("c-discard", "dropped")):
        summary = [{"op": "replace", "path": "/content/summary", "value": "s"}]
        patch(host, project_url(user, project), summary, ADMIN_KEY)
        upload(host, user, conversation, project, conflicting(host, user, project))
        parked = settled(host, user, conversation, "unresolved")
        assert parked["unresolved"][0]["state"] == "retrying"
    sign_in(page, ADMIN_KEY)
    open_user(page, TENANT, user, "review")
    parked_section = section(page, "Parked replay conflicts")
    expect(parked_section.get_by_role("article")).to_have_count(2)
    expect(parked_section).to_contain_text("/recent_notes")
    axe(page)

    retried = parked_section.get_by_role("article").filter(has_text="c-retry")
    retried.get_by_role("button", name="Retry patch 0").click()
    confirm(page, "Retry")
    expect(parked_section).to_contain_text("Patch 0 retried: the replay is now applied")
    assert replay(host, user, "c-retry")["status"] == "applied"
    notes = content(host, project_url(user, "retried"))["recent_notes"]
    assert [n["note"] for n in notes] == ["Live", NOTE]

    dropped = parked_section.get_by_role("article").filter(has_text="c-discard")
    dropped.get_by_role("button", name="Discard patch 0").click()
    confirm(page, "Discard")
    expect(parked_section).to_contain_text("Patch 0 discarded: the replay is now partially_applied")
    expect(parked_section).to_contain_text("No replay has a parked patch.")
    found = replay(host, user, "c-discard")
    assert found["status"] == "partially_applied"
    assert found["unresolved"][0]["discarded_by"] == "dev-admin"
    notes = content(host, project_url(user, "dropped"))["recent_notes"]
    assert [n["note"] for n in notes] == ["Live"]
    axe(page)


# -- replay status per snapshot --------------------------------------------------------------


def test_snapshot_replay_statuses_are_listed_with_details_and_a_failed_one_redriven(
    host: ServedHost, page: Page
) -> None:
    user = "u-review-snapshots"
    upload(host, user, "c-good", "good", note_patch("good"))
    upload(host, user, "c-bad", "bad", lambda shown: "I am free text.", note_patch("bad"))
    settled(host, user, "c-good", "applied")
    assert settled(host, user, "c-bad", "failed")["error"]
    sign_in(page, ADMIN_KEY)
    open_user(page, TENANT, user, "review")
    listed = section(page, "Snapshots and their replays")
    good = listed.get_by_role("listitem").filter(has_text="c-good/s1")
    bad = listed.get_by_role("listitem").filter(has_text="c-bad/s1")
    expect(good).to_contain_text("applied")
    expect(bad).to_contain_text("failed")
    expect(listed).to_contain_text("2 shown, all")

    good.get_by_role("button", name="Replay details of c-good/s1").click()
    changes = good.get_by_role("table")
    expect(changes).to_contain_text("projects/good.json")
    expect(good).to_contain_text("1 changes, 0 rejected, 0 parked")
    axe(page)

    bad.get_by_role("button", name="Replay details of c-bad/s1").click()
    expect(bad).to_contain_text("EXTRACTOR_FAILED: the answer is not JSON")
    bad.get_by_role("button", name="Redrive replay").click()
    confirm(page, "Redrive")
    expect(listed).to_contain_text("queued again")
    settled(host, user, "c-bad", "applied")
    page.reload()
    page.locator("main[data-ready='review']").wait_for()
    again = section(page, "Snapshots and their replays").get_by_role("listitem")
    expect(again.filter(has_text="c-bad/s1")).to_contain_text("applied")
    axe(page)


# -- what the caller's roles hide --------------------------------------------------------------


def test_sections_a_caller_may_not_see_are_said_to_be_hidden(host: ServedHost, page: Page) -> None:
    user = "u-review-hidden"
    propose(host, user, "Reads at night")
    propose(host, user, HOSTILE)
    sign_in(page, AGENT_KEY)  # read, write, debug: reads the queue, decides nothing
    open_user(page, TENANT, user, "review")
    queue = section(page, "Proposals")
    expect(queue).to_contain_text("Reads at night")
    expect(queue).to_contain_text("Deciding is hidden from you")
    expect(queue.get_by_role("button", name="Approve")).to_have_count(0)
    expect(queue.get_by_role("button", name="Edit")).to_have_count(0)
    expect(queue).to_contain_text(HOSTILE)  # shown as text: no element, no handler ran
    assert page.locator("main img, main a[href^='javascript']").count() == 0
    assert page.evaluate("() => window.pwned") is None
    parked = section(page, "Parked replay conflicts")
    expect(parked).to_contain_text("Hidden from you")
    expect(parked).to_contain_text("needs the admin role")
    snaps = section(page, "Snapshots and their replays")
    expect(snaps).to_contain_text("Hidden from you")
    expect(snaps).to_contain_text("snapshots or admin role")
    axe(page)


def test_a_caller_without_a_reading_role_sees_the_queue_hidden(
    host: ServedHost, page: Page
) -> None:
    sign_in(page, PRIVACY_KEY)  # forget only
    open_user(page, TENANT, "u-review-hidden-queue", "review")
    queue = section(page, "Proposals")
    expect(queue).to_contain_text("The proposal queue is hidden from you")
    expect(queue).to_contain_text("ROLE_FORBIDDEN")
    axe(page)
