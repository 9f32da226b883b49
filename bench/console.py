"""The console with a large user (issue 28): time to interactive of its pages in Debian's
Chromium (Playwright), against a real ``memnet serve`` on the embedded default.

    .venv/bin/python -m bench.console [--changes 1000] [--events 10000] [--loads 10]
                                      [--depth 20] [--write-docs]

One user gets one document written ``--changes`` times (a create, then PATCHes) and
``--events`` event digests (four clients). Then, ``--loads`` times per page, a fresh
browser context signs in and loads the page anew (modules, sign-in check, data):

- **ready**: from the navigation's start to the page's first list shown
  (``main[data-ready]`` with an item in it);
- **interactive**: until the main thread is next idle after that (the first idle
  callback, so a long task still running counts);
- **load more**: a click on "Load more" until the next page's items are in the list, the
  first click and the last of ``--depth``;
- **long tasks**: the main thread's tasks over 50 ms during the load (Long Tasks API);
- the DOM's size after the first page and after the clicks (a page that rendered every
  item at once would show it).

Raw JSON goes to bench/results/; ``--write-docs`` rewrites the console section of
docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playwright.sync_api import Browser, Page, sync_playwright

from bench import report
from bench.harness import REPO, Client, Server, create, machine, patch, run_load, start_server
from bench.harness import summarize as summarize_ms
from tests.conftest import ADMIN_KEY
from tests.console.conftest import CHROMIUM_ARGS
from tests.console.steps import sign_in

TENANT, USER = "bench", "console-large"
DOC = f"/v1/tenants/{TENANT}/users/{USER}/documents/user/user_dynamic.json"
EVENTS = f"/v1/tenants/{TENANT}/users/{USER}/events"
PAGES = {  # page id -> what it shows of a large user
    "memory": "the document of --changes changes",
    "history": "--changes changes, newest first, paged",
    "events": "--events events, paged",
}
OBSERVE = """
window.__longTasks = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.__longTasks += entry.duration;
}).observe({type: "longtask", buffered: true});
"""
LABELS = ("ready", "interactive", "load more", "load more (last click)", "long tasks")
TIMES = ("ready_ms", "interactive_ms", "load_more_ms", "load_more_deep_ms", "long_tasks_ms")
IDLE = "() => new Promise((done) => requestIdleCallback(() => done(performance.now())))"


def write_changes(client: Client, changes: int) -> None:
    etag = create(
        client, DOC, [{"op": "add", "path": "/content/preferences/-", "value": {"text": "v0"}}]
    )
    for n in range(1, changes):
        ops = [{"op": "replace", "path": "/content/preferences/0", "value": {"text": f"v{n}"}}]
        reply = patch(client, DOC, ops, etag)
        if reply.status != 200 or reply.etag is None:
            raise RuntimeError(f"PATCH {reply.status}: {reply.body[:300]!r}")
        etag = reply.etag


def write_events(port: int, events: int) -> float:
    def make(index: int) -> Any:
        client, n = Client(port, ADMIN_KEY), iter(range(index, 10**9, 4))

        def post() -> bool:
            i = next(n)
            body = {
                "service_id": "bench",
                "timestamp": "2026-03-01T10:00:00Z",
                "source_type": "chat",
                "keywords": [f"topic{i % 50}"],
                "digest": f"Conversation turn {i} about project planning and retrieval.",
            }
            key = {"Idempotency-Key": uuid.uuid4().hex}
            return client.request("POST", EVENTS, body, key).status == 201

        return post

    run = run_load(4, events, 3600, make, warmup=0)
    if run.errors:
        raise RuntimeError(f"{run.errors} event writes failed")
    return round(len(run.latencies_ms) / run.elapsed_s, 1)


def load_once(browser: Browser, base: str, page_id: str, depth: int) -> dict[str, float]:
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script(OBSERVE)
        page = context.new_page()
        sign_in(page, ADMIN_KEY)  # the key stays in the tab's session storage across loads
        page.goto("about:blank")
        page.goto(f"{base}/console/#/{TENANT}/{USER}/{page_id}")  # a whole new load
        page.locator(f"main[data-ready='{page_id}'] li").first.wait_for(timeout=60_000)
        ready = page.evaluate("() => performance.now()")  # since the navigation began
        idle = page.evaluate(IDLE)
        nodes = page.evaluate("() => document.getElementsByTagName('*').length")
        long_tasks = page.evaluate("() => window.__longTasks")
        clicks = [click_more(page) for _ in range(depth)]
        return {
            "ready_ms": ready,
            "interactive_ms": idle,
            "load_more_ms": clicks[0] if clicks else math.nan,
            "load_more_deep_ms": clicks[-1] if clicks else math.nan,
            "long_tasks_ms": long_tasks,
            "dom_nodes": nodes,
            "dom_nodes_deep": page.evaluate("() => document.getElementsByTagName('*').length"),
        }

    finally:
        context.close()


def click_more(page: Page) -> float:
    """A click on "Load more" until the next page's items are in the list (ms); NaN when
    there is no more to load."""
    more = page.get_by_role("button", name="Load more")
    if not (more.count() and more.first.is_visible()):
        return math.nan
    items = page.locator("main li").count()
    begun = time.perf_counter()
    more.first.click()
    page.wait_for_function(f"() => document.querySelectorAll('main li').length > {items}")
    return (time.perf_counter() - begun) * 1000


def measure_pages(base: str, loads: int, depth: int) -> dict[str, Any]:
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is missing: scripts/setup installs it")
    results: dict[str, Any] = {}
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for page_id in PAGES:
                load_once(browser, base, page_id, 1)  # untimed: the server's caches warm
                runs = [load_once(browser, base, page_id, depth) for _ in range(loads)]
                results[page_id] = {
                    key: summarize_ms([r[key] for r in runs if r[key] == r[key]], 1.0)
                    for key in TIMES
                } | {key: max(r[key] for r in runs) for key in ("dom_nodes", "dom_nodes_deep")}
        finally:
            browser.close()
    return results


def measure(args: argparse.Namespace) -> dict[str, Any]:
    server: Server = start_server()
    try:
        client = Client(server.port, ADMIN_KEY)
        began = time.perf_counter()
        write_changes(client, args.changes)
        seeded = {"changes_s": round(time.perf_counter() - began, 1)}
        seeded["events_per_s"] = write_events(server.port, args.events)
        base = f"http://127.0.0.1:{server.port}"
        return {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "command": f"python -m bench.console --changes {args.changes} --events "
            f"{args.events} --loads {args.loads} --depth {args.depth}",
            "machine": machine(),
            "changes": args.changes,
            "events": args.events,
            "loads": args.loads,
            "seeding": seeded,
            "depth": args.depth,
            "pages": measure_pages(base, args.loads, args.depth),
        }
    finally:
        server.stop()


def markdown(results: dict[str, Any]) -> list[str]:
    head = [
        "## The console with a large user (issue 28)",
        f"- Date: {results['date']}; command: `{results['command']}`",
        report.machine_line(results["machine"]),
        f"- One user with a document of {results['changes']:,} changes and "
        f"{results['events']:,} events, embedded backend, `memnet serve` on 127.0.0.1; "
        "Debian's Chromium, headless, driven by Playwright; each page opened "
        f"{results['loads']} times in a fresh context after one untimed load.",
        "- *ready*: navigation to the first list shown; *interactive*: until the main "
        "thread's first idle moment after that; *load more*: a click until the next "
        "page is in the list (the first click, and the last of "
        f"{results['depth']}); *long tasks*: main-thread tasks over 50 ms during the load.",
    ]
    rows = []
    for page_id in PAGES:
        page = results["pages"][page_id]
        for key, label in zip(TIMES, LABELS, strict=True):
            if page[key]["count"]:
                rows.append([page_id, label, *report.ms_cells(page[key])])
        nodes = f"{page['dom_nodes']:,} / {page['dom_nodes_deep']:,}"
        rows.append([page_id, "DOM elements: first page / after the clicks", nodes, "", ""])
    table = report.table(["page", "measure", "p50 ms", "p95 ms", "p99 ms"], rows, 2)
    shown = "; ".join(f"{k}: {v}" for k, v in PAGES.items())
    return [*head, f"- Pages: {shown}.", "", table]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=10)
    parser.add_argument("--depth", type=int, default=20, help='"Load more" clicks per load')
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args()
    results = measure(args)
    print(json.dumps(results, indent=2))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"console-{stamp}.json").write_text(json.dumps(results, indent=2) + "\n")
    if args.write_docs:
        body = "\n".join(markdown(results))
        report.write_section(REPO / "docs" / "performance.md", "console", body)


if __name__ == "__main__":
    main()
