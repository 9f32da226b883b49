"""``:why`` by property (memnet.domain.attribution): after a random sequence of changes
to two arrays (adds at an index or appended, removals, replacements, writes inside an
item, moves and copies within and between the arrays, an upsert that writes an item
again), the attribution of every item left names exactly the changes that produced it:
the one that added it (or the create's content), and those that later changed it,
moved it, copied it or wrote it again, newest first. The expectation is kept by a
shadow of each array, built forward beside the real content, with each item's lineage.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from memnet.domain.attribution import (
    COPIED,
    MODIFIED,
    MOVED,
    ORIGIN,
    ROLES,
    UPSERTED,
    Attribution,
    attribute,
)
from memnet.domain.audit_records import AuditRecord, fold
from memnet.domain.envelope import Json

ARRAYS = ("a", "b")
Lineage = list[tuple[int, str]]  # (change number, role), oldest first


def record(n: int, ops: list[Json], base: Json | None = None, upserts: Any = None) -> AuditRecord:
    return AuditRecord.from_json(
        {
            "change_id": f"chg_{n + 1:012x}{'0' * 16}",
            "prev_change_id": f"chg_{n:012x}{'0' * 16}" if n else None,
            "operation": "create" if base else "patch",
            "tenant_id": "t1",
            "user_id": "u1",
            "namespace": "user",
            "path": "d.json",
            "binding_id": "b",
            "profile_id": "p",
            "actor": f"actor-{n}",
            "timestamp": "2026-11-29T07:00:00.000Z",
            "reason": "live_update",
            "pre_etag": None,
            "ops": ops,
            "ops_sha256": "0" * 64,
            "base": base,
            **({"upserts": upserts} if upserts else {}),
        }
    )


class World:
    """The content, and a shadow holding each item's lineage at the same place."""

    def __init__(self) -> None:
        self.content: dict[str, list[Any]] = {"a": [{"id": 0}, {"id": 1}], "b": []}
        self.shadow: dict[str, list[Lineage]] = {"a": [[(0, ORIGIN)], [(0, ORIGIN)]], "b": []}
        self.minted = 2

    def new_item(self) -> dict[str, int]:
        self.minted += 1
        return {"id": self.minted}

    def step(self, data: st.DataObject, n: int) -> tuple[list[Json], list[Json]]:
        """One random op applied here; its JSON form, and the upsert report it makes."""
        kinds = ["add", "append", "replace_array"]
        if any(self.content.values()):
            kinds += ["remove", "replace", "modify", "move", "copy", "upsert"]
        kind = data.draw(st.sampled_from(kinds))
        here = data.draw(st.sampled_from([x for x in ARRAYS if self.content[x]] or ["a"]))
        there = data.draw(st.sampled_from(ARRAYS))
        items, lines = self.content[here], self.shadow[here]
        i = data.draw(st.integers(0, max(len(items) - 1, 0)))
        if kind in ("add", "append"):
            at = len(items) if kind == "append" else data.draw(st.integers(0, len(items)))
            value = self.new_item()
            items.insert(at, value)
            lines.insert(at, [(n, ORIGIN)])
            where = "-" if kind == "append" else str(at)
            return [{"op": "add", "path": f"/content/{here}/{where}", "value": value}], []
        if kind == "replace_array":
            values = [self.new_item() for _ in range(data.draw(st.integers(0, 2)))]
            self.content[here] = values
            self.shadow[here] = [[(n, ORIGIN)] for _ in values]
            return [{"op": "replace", "path": f"/content/{here}", "value": values}], []
        if kind == "remove":
            del items[i], lines[i]
            return [{"op": "remove", "path": f"/content/{here}/{i}"}], []
        if kind in ("replace", "upsert"):
            value = self.new_item() if kind == "replace" else {**items[i], "again": n}
            items[i] = value
            path = f"/content/{here}/{i}"
            if kind == "replace":
                lines[i] = [(n, ORIGIN)]
                return [{"op": "replace", "path": path, "value": value}], []
            lines[i].append((n, UPSERTED))
            report = [{"op_index": 0, "result": "replaced", "path": path}]
            return [{"op": "replace", "path": path, "value": value}], report
        if kind == "modify":
            items[i]["note"] = n
            lines[i].append((n, MODIFIED))
            return [{"op": "add", "path": f"/content/{here}/{i}/note", "value": n}], []
        value, line = items[i], lines[i]
        if kind == "move":
            del items[i], lines[i]
            moved: Lineage = [*line, (n, MOVED)]
        else:
            value, moved = copy.deepcopy(value), [*line, (n, COPIED)]
        target = self.content[there]
        at = data.draw(st.integers(0, len(target)))
        target.insert(at, value)
        self.shadow[there].insert(at, moved)
        where = data.draw(st.sampled_from(["-", str(at)] if at == len(target) - 1 else [str(at)]))
        op = {"op": kind, "from": f"/content/{here}/{i}", "path": f"/content/{there}/{where}"}
        return [op], []


def expected(line: Lineage) -> list[tuple[int, str]]:
    """The lineage as :func:`attribute` reports it: one role per change (the weightiest),
    newest first."""
    roles: dict[int, str] = {}
    for n, role in line:
        if n not in roles or ROLES.index(role) > ROLES.index(roles[n]):
            roles[n] = role
    return sorted(roles.items(), reverse=True)


def why(records: list[AuditRecord], document: Json, path: tuple[str, ...]) -> Attribution:
    positions = {r.change_id: i for i, r in enumerate(records)}

    def before(r: AuditRecord) -> Json | None:
        return fold(records[: positions[r.change_id]])

    return attribute(document, path, reversed(records), before)


@given(st.data())
def test_every_item_left_is_traced_to_the_changes_that_produced_it(data: st.DataObject) -> None:
    world = World()
    base = {"doc_id": "d", "content": copy.deepcopy(world.content)}
    records = [record(0, [], base)]
    for n in range(1, data.draw(st.integers(1, 12)) + 1):
        ops: list[Json] = []
        upserts: list[Json] = []
        for _ in range(data.draw(st.integers(1, 3))):
            op, report = world.step(data, n)
            upserts += [{**u, "op_index": len(ops)} for u in report]
            ops += copy.deepcopy(op)  # the world's values change on
        records.append(record(n, ops, upserts=upserts))
    document = fold(records)
    assert document is not None and document["content"] == world.content
    for name in ARRAYS:
        for i, line in enumerate(world.shadow[name]):
            found = why(records, document, ("content", name, str(i)))
            got = [(int(t.record.change_id[4:16], 16) - 1, t.role) for t in found.touches]
            assert got == expected(line), (name, i)
            assert found.found and found.touches[-1].role == ORIGIN
            assert found.walked == len(records) - got[-1][0]
