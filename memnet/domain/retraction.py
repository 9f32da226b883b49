"""Retracting what one conversation taught (forget conversation), generically: no
section is named here (docs/architecture.md, "Profiles are data").

An *item* is any object in a document's content with an ``evidence`` member, an object
or a list of objects. Evidence *points at* the conversation when its
``conversation_id`` is the conversation's, or its ``snapshot_uri`` names a snapshot of
it (``blob://tenants/{t}/users/{u}/snapshots/{c}/...``, compared segment by segment).
An item whose every piece of evidence points there is removed: the nearest array
element holding it (the item itself when it is one), or the member holding it when no
array does. An item with other evidence keeps it, without the pointer. Pure: returns
the JSON Patch ops, and the pointers of what it removed and what it kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Path = tuple[str | int, ...]
Matcher = Callable[[dict[str, Any]], bool]


@dataclass
class Retraction:
    ops: list[dict[str, Any]] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # items whose pointer was taken out


def points_at(tenant_id: str, user_id: str, conversation_id: str) -> Matcher:
    """Whether one piece of evidence points at the conversation."""
    snapshot = ["tenants", tenant_id, "users", user_id, "snapshots", conversation_id]

    def matches(evidence: dict[str, Any]) -> bool:
        if evidence.get("conversation_id") == conversation_id:
            return True
        uri = evidence.get("snapshot_uri")
        if not isinstance(uri, str) or not uri.startswith("blob://"):
            return False
        return uri.removeprefix("blob://").split("/")[:6] == snapshot

    return matches


def retract(content: Any, matches: Matcher, base: str = "/content") -> Retraction:
    """The ops that retract the conversation from ``content`` (pointers under ``base``)."""
    removals: list[Path] = []
    replacements: list[tuple[Path, list[Any]]] = []
    _walk(content, (), None, matches, removals, replacements)
    removals = _outermost(removals)
    replacements = [(p, e) for p, e in replacements if not _under_any(p, removals)]
    result = Retraction()
    for path, evidence in replacements:
        result.ops.append(
            {"op": "replace", "path": pointer(base, (*path, "evidence")), "value": evidence}
        )
        result.kept.append(pointer(base, path))
    # Later array elements first, so every index stays valid as earlier ones go.
    for path in sorted(removals, key=_sort_key, reverse=True):
        result.ops.append({"op": "remove", "path": pointer(base, path)})
    result.removed = sorted(pointer(base, p) for p in removals)
    return result


def _walk(
    node: Any,
    path: Path,
    element: Path | None,
    matches: Matcher,
    removals: list[Path],
    replacements: list[tuple[Path, list[Any]]],
) -> None:
    if isinstance(node, list):
        for index, child in enumerate(node):
            _walk(child, (*path, index), (*path, index), matches, removals, replacements)
        return
    if not isinstance(node, dict):
        return
    if "evidence" in node and path:
        verdict = _judge(node["evidence"], matches)
        if verdict == "remove":
            removals.append(element if element is not None else path)
            return
        if isinstance(verdict, list):
            replacements.append((path, verdict))
    for key, child in node.items():
        if key != "evidence":
            _walk(child, (*path, key), element, matches, removals, replacements)


def _judge(evidence: Any, matches: Matcher) -> str | list[Any] | None:
    """ "remove", the evidence list without the pointers, or None (untouched)."""
    if isinstance(evidence, dict):
        return "remove" if matches(evidence) else None
    if not isinstance(evidence, list):
        return None
    rest = [e for e in evidence if not (isinstance(e, dict) and matches(e))]
    if len(rest) == len(evidence):
        return None
    return rest if rest else "remove"


def _outermost(paths: list[Path]) -> list[Path]:
    unique = sorted(set(paths), key=len)
    kept: list[Path] = []
    for path in unique:
        if not _under_any(path, kept):
            kept.append(path)
    return kept


def _under_any(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or inside one (whole segments compared)."""
    return any(path[: len(root)] == root for root in roots)


def _sort_key(path: Path) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, s) if isinstance(s, int) else (1, s) for s in path)


def pointer(base: str, path: Path) -> str:
    escaped = (str(s).replace("~", "~0").replace("/", "~1") for s in path)
    return base + "".join("/" + s for s in escaped)
