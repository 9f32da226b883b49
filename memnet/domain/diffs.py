"""The difference between two versions of a document as RFC 6902 operations (issue 27
item 2; docs/decisions.md "Diff of two versions").

The operations cover the ``content`` only, with paths as a PATCH writes them
(``/content/...``): content is what a caller changed; the envelope's metadata
(``change_id``, ``updated_at``, ``updated_by``, ...) differs between any two versions and
says nothing a version's own fields do not. Applying the operations to the older
version (:func:`memnet.domain.patching.apply_ops`) gives the newer one's content.

``jsonpatch.make_patch`` computes them. JSON's ``1``, ``1.0`` and ``true`` are three
values although Python's ``==`` calls them equal: the library compares types as well
as values (1.47; the property test in tests/property/test_diffs.py holds it to that),
and :func:`content_ops` checks its answer anyway (compared as canonical JSON), so that a library
that got it wrong would fail loudly rather than answer a diff that does not apply.
"""

from __future__ import annotations

import jsonpatch

from memnet.domain.envelope import Json, canonical
from memnet.domain.patching import apply_ops, parse_ops


def content_ops(older: Json, newer: Json) -> list[Json]:
    """The operations that turn ``older``'s content into ``newer``'s (documents or
    envelopes: only ``content`` is read)."""
    before, after = {"content": older.get("content")}, {"content": newer.get("content")}
    expected = canonical(after)
    ops: list[Json] = jsonpatch.make_patch(before, after).patch
    if canonical(apply_ops(before, parse_ops(ops))) != expected:
        raise AssertionError("the computed diff does not turn one version into the other")
    return ops
