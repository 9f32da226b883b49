"""The difference between two versions of a document as RFC 6902 operations (issue 27
item 2; docs/decisions.md "Diff of two versions").

The operations cover the ``content`` only, with paths as a PATCH writes them
(``/content/...``): content is what a caller changed; the envelope's metadata
(``change_id``, ``updated_at``, ``updated_by``, ...) differs between any two versions and
says nothing a version's own fields do not. Applying the operations to the older
version (:func:`memnet.domain.patching.apply_ops`) gives the newer one's content.

``jsonpatch.make_patch`` computes them. JSON's ``1``, ``1.0`` and ``true`` are three
values although Python's ``==`` calls them equal: the library compares types as well
as values (1.47), which the property test in tests/property/test_diffs.py holds it to.
"""

from __future__ import annotations

import jsonpatch

from memnet.domain.envelope import Json


def content_ops(older: Json, newer: Json) -> list[Json]:
    """The operations that turn ``older``'s content into ``newer``'s (documents or
    envelopes: only ``content`` is read)."""
    before, after = {"content": older.get("content")}, {"content": newer.get("content")}
    ops: list[Json] = jsonpatch.make_patch(before, after).patch
    return ops
