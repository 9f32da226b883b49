"""Docstrings and comments point at real code: every ``memnet.x.y`` / ``funchost.x.y`` /
``scripts.x.y`` they name, and every Sphinx role (``:func:`name```) they use, resolves to
a module or an attribute that exists (issue 9: docstrings cited modules that no longer existed).

And the repository is self-contained (issue 32): code, tests and docs cite no file outside
it, and every ``docs/…`` page they cite exists, with the section they name."""

from __future__ import annotations

import ast
import builtins
import importlib
import io
import re
import tokenize
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memnet.services import telemetry

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(f for d in ("memnet", "funchost", "scripts") for f in ROOT.joinpath(d).rglob("*.py"))
DOTTED = re.compile(r"(?<![\w/.-])((?:memnet|funchost|scripts)(?:\.[A-Za-z_]\w*)+)")
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc|obj):`~?([\w.]+)`")
_MISSING = object()


def module_of(path: Path) -> ModuleType:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return importlib.import_module(name)


def resolve(dotted: str, start: Any) -> bool:
    """Whether ``dotted`` names something: modules first, then attributes."""
    parts, found = dotted.split("."), start
    for i in range(len(parts), 0, -1):
        if start is None:
            try:
                found = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                continue
            rest = parts[i:]
        else:
            rest = parts
        for part in rest:
            found = getattr(found, part, _MISSING)
            if found is _MISSING:
                break
        else:
            return True
        if start is not None:
            return False
    return False


def resolvable(name: str, module: ModuleType) -> bool:
    """An absolute name, or one relative to ``module``: its package (``.x``), its own
    names, a member of one of its classes (``:meth:`read``` in a class docstring), or a
    builtin."""
    if name.split(".")[0] in ("memnet", "funchost", "scripts"):
        return resolve(name, None)
    if name.startswith("."):
        package = module.__name__.rsplit(".", 1)[0]
        return resolve(package + name, None)
    classes = [v for v in vars(module).values() if isinstance(v, type)]
    scopes: list[Any] = [module, builtins, *classes]
    return any(resolve(name, scope) for scope in scopes)


# Telemetry names share the "memnet." prefix but name instruments and attributes, not code.
TELEMETRY_NAMES = frozenset(
    [*telemetry.METRICS, telemetry.REQUEST_ID_ATTRIBUTE, telemetry.ENDPOINT_ATTRIBUTE]
)


def references(path: Path) -> list[tuple[str, str]]:
    text = path.read_text()
    found = [("absolute", m) for m in DOTTED.findall(text) if m not in TELEMETRY_NAMES]
    found += [("role", m) for m in ROLE.findall(text)]
    return sorted(set(found))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_reference_in_a_docstring_names_real_code(path: Path):
    module = module_of(path)
    broken = []
    for kind, name in references(path):
        ok = resolvable(name, module)
        if not ok:
            broken.append(f"{kind} {name}")
    assert broken == []


def test_a_stale_reference_is_caught():
    assert not resolve("memnet.api.render", None)
    assert not resolve("memnet.domain.policy.no_such_rule", None)
    assert resolve("memnet.domain.policy.plan_ops", None)
    assert resolve("memnet.ports.Condition.create_only", None)


# -- a self-contained repository ---------------------------------------------------------

TEXT_ROOTS = ("memnet", "funchost", "scripts", "tests", "docs", "bench", "clients", "bicep")


def repository_texts() -> list[Path]:
    """README.md, function_app.py and every file under the code, test and docs folders
    (this file spells the patterns it looks for, so it is left out)."""
    found = [ROOT / "README.md", ROOT / "function_app.py"]
    for folder in TEXT_ROOTS:
        found += [p for p in ROOT.joinpath(folder).rglob("*") if p.is_file()]
    own = Path(__file__).resolve()
    return sorted(p for p in found if "__pycache__" not in p.parts and p != own)


# The notes the project was started from (ARCHITECTURE.md, CONVENTIONS.md, by any name),
# the shared folder beside the repository that held them and the spec, the spec and the
# related systems' own documents by file name, and the machine's working folders.
OUTSIDE = re.compile(
    r"\b(?:ARCHITECTURE|CONVENTIONS)\b"
    r"|(?:\.\./)+shared\b|\bshared/(?:spec|conformance|hooks)\b"
    r"|memnet-spec\.md|-memory-(?:spec|architecture)\.md"
    r"|/work/|\bnotes/[\w.-]+\.md"
)
# A relative path that climbs (``../x``), not an elided URL (``.../events``, ``…/x``).
CLIMBS = re.compile(r"(?<![.…\w])\.\./")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
CODE_SPAN = re.compile(r"``[^`]*``|`[^`\n]*`")
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")  # checked by tests/unit/test_doc_routes.py


def prose(path: Path, text: str) -> list[str]:
    """What reads as prose: a Python file's comments and docstrings (its string literals
    are data: tests send ``../x`` on purpose), a page's text; code spans and link targets
    left out."""
    if path.suffix == ".md":
        return [LINK_TARGET.sub("]", CODE_SPAN.sub("", FENCE.sub("", text)))]
    if path.suffix != ".py":
        return []
    found = [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type == tokenize.COMMENT
    ]
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, kinds) and (doc := ast.get_docstring(node, clean=False)):
            found.append(doc)
    return [CODE_SPAN.sub("", part) for part in found]


def outside_citations(path: Path, text: str) -> list[str]:
    found = [m.group(0) for m in OUTSIDE.finditer(text)]
    if "../" not in text:  # no climb anywhere, so none in the prose (parsing it is the cost)
        return found
    return found + [m.group(0) for part in prose(path, text) for m in CLIMBS.finditer(part)]


def test_nothing_cites_a_file_outside_the_repository():
    cited = []
    for path in repository_texts():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        cited += [f"{path.relative_to(ROOT)}: {c}" for c in outside_citations(path, text)]
    assert cited == []


def test_an_outside_citation_is_caught():
    code = Path("memnet/x.py")
    doc = '"""Blobs (ARCHITECTURE.md 1; see ../shared/spec)."""\n# CONVENTIONS 3\n'
    found = ["ARCHITECTURE", "../shared", "CONVENTIONS", "../"]
    assert outside_citations(code, doc) == found
    data = '''"""Identifiers."""\nBAD = ["../x", ".../events"]\n'''
    assert outside_citations(code, data) == []
    page = "See [spec](../../spec.md) and `a/../b`; the spec lives in ../spec.md.\n"
    assert outside_citations(Path("docs/x.md"), page) == ["../"]


# ``docs/page.md``, optionally ``#anchor``, optionally followed by the section it names in
# quotes: ``docs/decisions.md, "Idempotency"`` or ``docs/operations.md ("Storage layout")``.
# The quoted name may run on to a second comment line.
DOCS_CITATION = re.compile(
    r"(?<![\w/.-])docs/((?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+))?"
    r"(?:,?\s+\(?\"([^\"\n]+(?:\n[^\"\n]+)?)\")?"
)
HEADING = re.compile(r"^#+\s+(.*)$", re.M)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def folded(text: str) -> str:
    return " ".join(re.sub(r"\n\s*(?:#|//)", " ", text).replace("`", "").split()).lower()


def unresolved(citation: re.Match[str]) -> str | None:
    """Why a ``docs/`` citation does not resolve, or None: the page must exist; an anchor
    must be one of its headings'; a quoted section must be (part of) a heading or a bold
    label (``**Blob semantics everywhere.**``) of the page."""
    page, fragment, section = citation.groups()
    target = ROOT / "docs" / page
    if not target.is_file():
        return "no such page"
    text = FENCE.sub("", target.read_text(encoding="utf-8"))
    headings = HEADING.findall(text)
    if fragment and fragment not in {anchor(h) for h in headings}:
        return f"no heading #{fragment}"
    named = section and folded(section)
    if named and not any(named in folded(h) for h in headings) and "**" + named not in folded(text):
        return f'no section "{named}"'
    return None


def test_every_docs_citation_names_an_existing_page_and_section():
    broken = []
    for path in repository_texts():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for citation in DOCS_CITATION.finditer(text):
            if why := unresolved(citation):
                broken.append(f"{path.relative_to(ROOT)}: {citation.group(0)!r}: {why}")
    assert broken == []


def test_a_stale_docs_citation_is_caught():
    def why(text: str) -> str | None:
        match = DOCS_CITATION.search(text)
        assert match is not None
        return unresolved(match)

    assert why('(docs/decisions.md, "Idempotency")') is None
    assert why('(docs/architecture.md, "Blob semantics\n# everywhere")') is None
    assert why("docs/api.md#identifiers") is None
    assert why("(docs/governance.md)") == "no such page"
    assert why('(docs/operations.md "Entra ID")') == 'no section "entra id"'
    assert why("docs/api.md#no-such-heading") == "no heading #no-such-heading"


# "spec 10.2", "spec 12, 15", "spec 9.2, 10.6", "spec section 8.2": sections of docs/spec.md
# (docs/architecture.md says so). N.M may also be item M of section N's numbered list
# ("spec 25.6": acceptance criterion 6).
SPEC_CITATION = re.compile(
    r"\b[Ss]pec(?:'s)?(?: section)? (\d+(?:\.\d+)?(?:(?:, | and |/)\d+(?:\.\d+)?)*)"
)


def spec_sections() -> set[str]:
    found, section = set(), ""
    for line in (ROOT / "docs" / "spec.md").read_text(encoding="utf-8").splitlines():
        if heading := re.match(r"#{2,3} (\d+(?:\.\d+)?)\.? ", line):
            section = heading.group(1)
            found.add(section)
        elif (item := re.match(r"(\d+)\. ", line)) and "." not in section:
            found.add(f"{section}.{item.group(1)}")
    return found


def test_every_spec_citation_names_a_section_of_docs_spec_md():
    sections, unknown = spec_sections(), []
    assert {"7.2", "10.7", "19.2", "24.5"} <= sections
    for path in repository_texts():
        if path.suffix not in (".py", ".md") or path.name == "spec.md":
            continue
        for citation in SPEC_CITATION.finditer(path.read_text(encoding="utf-8")):
            numbers = re.split(r", | and |/", citation.group(1))
            unknown += [f"{path.relative_to(ROOT)}: spec {n}" for n in numbers if n not in sections]
    assert unknown == []
