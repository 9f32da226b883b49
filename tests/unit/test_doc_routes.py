"""Every route the README and docs/ name is spelled as the server serves it: under
``/v1/`` (host.json's route prefix is ``""``, and every route is versioned), the MCP
endpoint, or the console's files (``/console/``). docs/deploy.md once named
``/health/details`` and ``/admin/reindex``. (docs/related/ quotes the other systems' own
routes, and is left out.)"""

from __future__ import annotations

import re
from pathlib import Path

from tests.unit.test_docstring_references import FENCE, HEADING, anchor

REPO = Path(__file__).resolve().parents[2]
ROUTE = re.compile(r"`(?:GET|POST|PUT|PATCH|DELETE|HEAD) (/[^`\s]*)")


def test_every_route_the_docs_name_is_a_served_path() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = [(p.name, m.group(1)) for p in pages for m in ROUTE.finditer(p.read_text())]
    assert len(named) > 20  # the pattern still finds the routes
    served = ("/v1/", "/runtime/", "/console/")
    wrong = [(page, path) for page, path in named if not path.startswith(served)]
    assert wrong == []


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_link_of_the_docs_stays_in_the_repository_and_resolves() -> None:
    """A relative link names a file of this repository (the related guides once pointed
    into a folder beside it), and its ``#anchor`` a heading of that page (citations in
    prose: tests/unit/test_docstring_references.py)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken, outside = [], []
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, fragment = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            if not resolved.is_relative_to(REPO):
                outside.append((page.name, target))
            elif not resolved.exists() or not has_anchor(resolved, fragment):
                broken.append((page.name, target))
    assert (broken, outside) == ([], [])


def has_anchor(page: Path, fragment: str) -> bool:
    """No fragment, a page that is not Markdown, or one of the page's headings' anchors."""
    if not fragment or page.suffix != ".md":
        return True
    text = FENCE.sub("", page.read_text())
    return fragment in {anchor(h) for h in HEADING.findall(text)}
