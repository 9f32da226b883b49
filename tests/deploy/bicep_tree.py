"""Bicep files read with tree-sitter-bicep: no Bicep compiler can be installed where
these tests run, so the grammar's parse tree is what the structural tests inspect.

Only what the tests need: declarations by kind and name, the body object of a resource
or module (through ``if`` and ``for``), object properties by key, and string values."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tree_sitter
import tree_sitter_bicep

ROOT = Path(__file__).resolve().parents[2]
BICEP = ROOT / "bicep"
MAIN = BICEP / "main.bicep"

Node = tree_sitter.Node


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bicep.language()))


@dataclass(frozen=True)
class BicepFile:
    path: Path
    root: Node

    def declarations(self, kind: str) -> dict[str, Node]:
        """Top-level declarations of ``kind`` (``parameter``, ``variable``, ``output``,
        ``module``, ``resource``) by their identifier."""
        found = {}
        for node in self.root.named_children:
            if node.type == f"{kind}_declaration":
                found[text(node.named_children[0])] = node
        return found

    def variable(self, name: str) -> Node:
        """The value of ``var name = ...``."""
        return self.declarations("variable")[name].named_children[-1]

    def resources_of_type(self, prefix: str) -> dict[str, Node]:
        """Resource declarations whose type string starts ``prefix``, by symbolic name."""
        return {
            name: node
            for name, node in self.declarations("resource").items()
            if string_value(node.named_children[1]).startswith(prefix)
        }

    def required_params(self) -> set[str]:
        """Parameters without a default (name, type, and nothing after)."""
        params = self.declarations("parameter")
        return {name for name, node in params.items() if len(node.named_children) == 2}


@cache
def parse(path: Path) -> BicepFile:
    return BicepFile(path, _parser().parse(path.read_bytes()).root_node)


def bicep_files() -> list[Path]:
    return sorted(BICEP.rglob("*.bicep"))


def text(node: Node) -> str:
    return (node.text or b"").decode()


def walk(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from walk(child)


def string_value(node: Node) -> str:
    """A string literal's content (interpolations kept as ``${...}`` text)."""
    if node.type != "string":
        raise ValueError(f"{node.type} at {node.start_point} is not a string")
    quoted = text(node)
    quote = "'''" if quoted.startswith("'''") else "'"
    return quoted[len(quote) : -len(quote)]


def body(node: Node) -> Node:
    """The object of a resource or module declaration, through ``if`` and ``for``."""
    for child in node.named_children:
        if child.type == "object":
            return child
        if child.type in ("if_statement", "for_statement"):
            return body(child)
    raise ValueError(f"no body object in {text(node)[:60]!r}")


def properties(obj: Node) -> dict[str, Node]:
    """An object literal's properties: key (identifier or quoted) to value node."""
    found = {}
    for prop in obj.named_children:
        if prop.type != "object_property":
            continue
        key, value = prop.named_children[0], prop.named_children[-1]
        found[string_value(key) if key.type == "string" else text(key)] = value
    return found


def path(obj: Node, *keys: str) -> Node:
    """``properties(properties(obj)[k1])[k2]...``."""
    for key in keys:
        obj = properties(obj)[key]
    return obj


def identifiers(node: Node) -> set[str]:
    return {text(n) for n in walk(node) if n.type == "identifier"}
