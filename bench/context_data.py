"""Synthetic users for the context benchmark: N projects in a routing document, realistic
project documents for the projects the hints touch, and a fixed mix of hints.

Hint kinds (same counts for every N, fixed seed): ``explicit`` project_id, ``alias`` (an
alias or name of one project, plus one of its keywords), ``tie`` (a keyword several
projects share, plus topic words only one of the first ``max_semantic_candidates`` of them
has, so the semantic tie-break decides) and ``none`` (nothing the index knows).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from bench.harness import doc_url

PROFILE_ID = "bench-context-v1"
ADMIN_KEY = "dev-admin-key"
SEED = 20261122
CANDIDATES = 5  # max_semantic_candidates of bench/profiles/bench-context-v1.json
MIX = {"explicit": 4, "alias": 20, "tie": 10, "none": 6}  # 10 / 50 / 25 / 15 %


def _words(text: str) -> list[str]:
    return text.split()


CODENAMES = _words(
    "falcon orion cobalt juniper quartz maple ember lynx nimbus sierra tundra willow"
)
TEAMS = _words("atlas nova vega helix delta kestrel")
KEYWORDS = _words(
    "latency billing search onboarding mobile analytics payments migration dashboard "
    "compliance reporting caching"
)
TOPICS = _words(
    "kafka redis terraform grafana postgres kubernetes react swiftui spark airflow graphql "
    "webhooks ledger invoices quotas sharding tracing prometheus elasticsearch snowflake "
    "dbt flutter kotlin rust golang lambda cloudfront varnish nginx envoy istio vault okta "
    "stripe adyen segment amplitude looker tableau superset clickhouse cassandra dynamodb "
    "bigquery pubsub rabbitmq celery django fastapi nextjs vite webpack storybook cypress "
    "playwright sentry datadog pagerduty opsgenie argocd helm"
)
FILLER = [
    "The team meets weekly and keeps decisions in the shared design log.",
    "Scope was agreed with the stakeholders after the last planning review.",
    "Open risks are tracked in the risk register and reviewed every sprint.",
    "Rollout happens in stages behind feature flags, region by region.",
    "Documentation lives next to the code and is reviewed with each change.",
    "The service level objective is reviewed monthly against the error budget.",
]
UNRELATED = [
    "what is the weather like tomorrow morning",
    "draft a polite email to my landlord about the heating",
    "recommend a novel for a long train ride",
    "how many grams of flour for twelve pancakes",
    "translate good evening into portuguese",
    "suggest a name for a golden retriever puppy",
]


@dataclass
class World:
    """One synthetic user: the routing entries, project documents and hints."""

    projects: int
    entries: list[dict[str, Any]]
    documents: dict[str, dict[str, Any]] = field(default_factory=dict)
    hints: list[dict[str, Any]] = field(default_factory=list)  # kind, hint, expected


def world(projects: int) -> World:
    rng = random.Random(SEED)
    entries = [_entry(rng, i) for i in range(projects)]
    topics = {e["project_id"]: rng.sample(TOPICS, 3) for e in entries}
    made = World(projects, entries)
    for kind, count in MIX.items():
        for _ in range(count):
            made.hints.append(_HINTS[kind](rng, entries, topics))
    touched = {h["expected"] for h in made.hints} | {p for h in made.hints for p in h["reads"]}
    for entry in entries:
        if entry["project_id"] in touched or projects <= 10:
            made.documents[entry["project_id"]] = _project_doc(rng, entry, topics)
    return made


def _entry(rng: random.Random, i: int) -> dict[str, Any]:
    codename = rng.choice(CODENAMES)
    aliases = [f"{codename}{i}"] + ([f"{rng.choice(TEAMS)}-{i}"] if rng.random() < 0.5 else [])
    return {
        "project_id": f"p-{i}",
        "name": f"Project {codename.title()}-{i}",
        "aliases": aliases,
        "keywords": rng.sample(KEYWORDS, rng.choice((2, 3))),
    }


def _explicit(rng: random.Random, entries: list[dict[str, Any]], _: Any) -> dict[str, Any]:
    pid = rng.choice(entries)["project_id"]
    hint = {"project_id": pid, "text": "continue where we left off yesterday"}
    return {"kind": "explicit", "hint": hint, "expected": pid, "reads": []}


def _alias(rng: random.Random, entries: list[dict[str, Any]], _: Any) -> dict[str, Any]:
    entry = rng.choice(entries)
    name = rng.choice([entry["name"], *entry["aliases"]])
    text = f"help with {name}, the {rng.choice(entry['keywords'])} work"
    return {"kind": "alias", "hint": {"text": text}, "expected": entry["project_id"], "reads": []}


def _tie(
    rng: random.Random, entries: list[dict[str, Any]], topics: dict[str, list[str]]
) -> dict[str, Any]:
    """A shared keyword; the words after it fit one of the candidates the router reads."""
    while True:
        keyword = rng.choice(KEYWORDS)
        holders = sorted(e["project_id"] for e in entries if keyword in e["keywords"])
        candidates = holders[:CANDIDATES]  # the router's cap, in the same (sorted) order
        if len(candidates) < 2:
            continue
        target = rng.choice(candidates)
        others = {t for p in candidates if p != target for t in topics[p]}
        own = [t for t in topics[target] if t not in others]
        if own:
            text = f"{keyword} trouble in the {' and '.join(own[:2])} setup"
            hint = {"text": text}
            return {"kind": "tie", "hint": hint, "expected": target, "reads": candidates}


def _none(rng: random.Random, _: list[dict[str, Any]], __: Any) -> dict[str, Any]:
    return {"kind": "none", "hint": {"text": rng.choice(UNRELATED)}, "expected": None, "reads": []}


_HINTS = {"explicit": _explicit, "alias": _alias, "tie": _tie, "none": _none}


def _project_doc(
    rng: random.Random, entry: dict[str, Any], topics: dict[str, list[str]]
) -> dict[str, Any]:
    mine = topics[entry["project_id"]]
    summary = (
        f"{entry['name']} covers {', '.join(entry['keywords'])} for the product line. "
        f"It is built on {', '.join(mine)}. " + " ".join(rng.sample(FILLER, 4))
    )
    facets = {
        "stack": mine,
        "status": rng.choice(["discovery", "build", "beta", "general availability"]),
        "owner": f"{rng.choice(TEAMS)} team",
        "goals": " ".join(rng.sample(FILLER, 3)),
        "constraints": ["no customer data leaves the region", "changes ship behind flags"],
    }
    notes = [{"note": f"Decision {n}: {rng.choice(FILLER)}"} for n in range(3)]
    return {"summary": summary, "facets": facets, "recent_notes": notes}


# -- seeding ---------------------------------------------------------------------------


def user_static() -> dict[str, Any]:
    profile = {
        "display_name": "Bench User",
        "locale": "en-GB",
        "timezone": "Europe/London",
        "role": "Staff engineer",
        "organization": "Example Ltd",
    }
    instructions = ["Prefer concise answers with code first.", "Cite the project document."]
    return {"profile": profile, "user_instructions": instructions}


def user_dynamic() -> dict[str, Any]:
    evidence = {"conversation_id": "c-1", "message_ids": ["m-1"]}
    facts = [
        {
            "fact": f"Works mostly on {topic} services and reviews their incident reports.",
            "confidence": 0.9,
            "evidence": evidence,
            "last_verified_at": "2026-11-01T09:00:00Z",
        }
        for topic in ("postgres", "kafka", "kubernetes")
    ]
    preferences = [
        {"text": "Prefers Python examples with type hints."},
        {"text": "Wants trade-offs spelled out before a recommendation."},
        {"text": "Uses metric units.", "topic": "units"},
        {"text": "Likes short bullet lists over long prose.", "topic": "style"},
    ]
    return {
        "preferences": preferences,
        "durable_facts": facts,
        "pending_confirmations": [],
    }


def routing_content(made: World) -> dict[str, Any]:
    return {
        "preferences": [],
        "durable_facts": [],
        "pending_confirmations": [],
        "projects_index": made.entries,
    }


def seed(admin: Any, user: str, made: World) -> int:
    """Create the user's documents with ``admin`` (a client holding the admin key: PUT,
    create-only); the number created."""
    docs = {
        ("user", "user_static.json"): user_static(),
        ("user", "user_dynamic.json"): user_dynamic(),
        ("routing", "projects.json"): routing_content(made),
        **{("projects", f"{pid}.json"): doc for pid, doc in made.documents.items()},
    }
    for (namespace, path), content in docs.items():
        put(admin, doc_url(user, namespace, path), content)
    return len(docs)


def put(client: Any, url: str, content: dict[str, Any]) -> None:
    headers = {"If-None-Match": "*", "Idempotency-Key": uuid.uuid4().hex}
    reply = client.request("PUT", url, {"profile_id": PROFILE_ID, "content": content}, headers)
    if reply.status != 201:
        raise RuntimeError(f"PUT {url}: {reply.status} {getattr(reply, 'body', b'')[:300]!r}")
