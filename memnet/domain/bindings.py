"""Bindings: one document a profile governs (spec 8.2; docs/profiles.md).

Below the rule parsers and :mod:`memnet.domain.profiles` (docs/architecture.md, "The
layers"): a binding holds its parsed ``item_identity`` (:mod:`memnet.domain.upsert`),
and nothing here imports the profile that holds the binding.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memnet.domain import pointers, upsert
from memnet.domain.pointers import Segments
from memnet.domain.upsert import IdentityRule

_PATH_VARIABLE = re.compile(r"\{([a-z_]+)\}")
_VAR_VALUE = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"


@dataclass(frozen=True)
class Binding:
    """One document a profile governs: where it lives, its schema and its limits."""

    binding_id: str
    namespace: str
    schema_id: str
    schema_version: str
    max_chars: int
    read_priority: int
    write_mode: str
    path: str | None = None
    path_template: str | None = None
    array_limits: Mapping[Segments, int] = field(default_factory=dict)
    initial_content: Mapping[str, Any] = field(default_factory=dict)
    in_context: bool = True
    read_as: str = "latest"  # an older version read migrated in memory, or "stored"
    ttl_seconds: int | None = None  # expires this long after its last write
    lookup_fields: Mapping[str, Segments] = field(default_factory=dict)
    item_identity: Mapping[Segments, IdentityRule] = field(default_factory=dict)
    scope: str = "user"  # "tenant": one document the tenant's users share
    write_roles: frozenset[str] | None = None  # None: the scope's default (write_roles_of)

    def path_for(self, variables: Mapping[str, str]) -> str | None:
        """The concrete path: fixed, or the template filled from ``variables``."""
        if self.path is not None:
            return self.path
        names = _PATH_VARIABLE.findall(self.path_template or "")
        if not all(name in variables for name in names):
            return None
        return _PATH_VARIABLE.sub(lambda m: variables[m.group(1)], self.path_template or "")

    def uses_variable(self, name: str) -> bool:
        return name in _PATH_VARIABLE.findall(self.path_template or "")

    def match(self, namespace: str, path: str) -> dict[str, str] | None:
        """Return the template variables if this binding covers ``namespace/path``."""
        if namespace != self.namespace:
            return None
        if self.path is not None:
            return {} if path == self.path else None
        found = _template_regex(self.path_template or "").fullmatch(path)
        return None if found is None else found.groupdict()

    @property
    def writable(self) -> bool:
        return self.write_mode != "read_only"

    @property
    def shared(self) -> bool:
        return self.scope == "tenant"

    @property
    def patch_roles(self) -> frozenset[str]:
        """Roles that may patch its documents: ``write_roles``, else ``write`` for a
        user's own documents and ``admin`` for the tenant's shared ones."""
        if self.write_roles is not None:
            return self.write_roles
        return frozenset({"admin"} if self.shared else {"write"})


def _template_regex(template: str) -> re.Pattern[str]:
    parts = _PATH_VARIABLE.split(template)
    regex = "".join(
        f"(?P<{part}>{_VAR_VALUE})" if i % 2 else re.escape(part) for i, part in enumerate(parts)
    )
    return re.compile(regex)


def parse_binding(raw: Mapping[str, Any]) -> Binding:
    """One entry of a profile's ``document_bindings`` (already meta-schema valid)."""
    limits = {pointers.parse(p): n for p, n in raw.get("array_limits", {}).items()}
    lookups = {name: pointers.parse(p) for name, p in raw.get("lookup_fields", {}).items()}
    identity = upsert.parse_rules(raw.get("item_identity", {}))
    parsed = ("array_limits", "lookup_fields", "item_identity", "write_roles")
    fields = {k: v for k, v in raw.items() if k not in parsed}
    roles = frozenset(raw["write_roles"]) if "write_roles" in raw else None
    return Binding(
        **fields,
        array_limits=limits,
        lookup_fields=lookups,
        item_identity=identity,
        write_roles=roles,
    )


def new_envelope(
    binding: Binding, doc_id: str, timestamp: str, actor: str, change_id: str
) -> dict[str, Any]:
    """A fresh document of ``binding``: the envelope (:mod:`memnet.domain.envelope`)
    around the binding's initial content. Here, not in the envelope module, so that the
    envelope imports nothing of the domain and every rule parser may import it."""
    return {
        "doc_id": doc_id,
        "schema_id": binding.schema_id,
        "schema_version": binding.schema_version,
        "created_at": timestamp,
        "updated_at": timestamp,
        "updated_by": actor,
        "change_id": change_id,
        "content": copy.deepcopy(dict(binding.initial_content)),
    }
