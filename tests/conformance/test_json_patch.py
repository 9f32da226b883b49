"""The external RFC 6902 suite (json-patch-tests, see SOURCE.md) through the real PATCH
function of ``function_app``, directly and over HTTP (the ``client`` fixture).

Mapping. mem.net applies ops to the whole envelope, writable rules are content-relative
pointers of at least one segment, and ``content`` must be an object. So each record's
``doc`` is stored one level down, as ``content = {"doc": <doc>}``, under a test profile
whose only writable rule is ``/doc``; every op's ``path`` and ``from`` get the prefix
``/content/doc``. This handles non-object docs (arrays, scalars) and root ops uniformly:

=========================  ==========================  =====================================
record / op member         sent to mem.net             compared / asserted
=========================  ==========================  =====================================
``doc``                    PUT (If-None-Match: *)      201; one document per record
                           content ``{"doc": doc}``
path ``/foo``              ``/content/doc/foo``
path ``""`` (root)         ``/content/doc``
path ``/`` (key ``""``)    ``/content/doc/``
``from``                   same rule as ``path``
path/from not a pointer    unchanged (still invalid:   e.g. ``"foo"``, ``null``, missing
                           never made valid by the
                           prefix)
other op members           unchanged (``spurious``,
                           ``xyz`` are ignored)
``expected``               PATCH with If-Match         200; ``document.content.doc``
                                                       json-equals ``expected``; GET returns
                                                       the same document and ETag
``error``                  PATCH with If-Match         400 or 422 with a patch-layer code
                                                       (INVALID_PATCH, PATCH_NOT_APPLICABLE,
                                                       PATCH_TEST_FAILED) in the spec 10.7
                                                       shape; GET returns the original ETag
                                                       and doc. Error text is not matched.
``disabled: true``         not run
comment only (no ``doc``)  not run
=========================  ==========================  =====================================

``json_equal`` is JSON equality: ``1 == 1.0`` but ``true != 1`` and ``false != 0``.
One document per record (``conformance/case-<n>.json``) on a fresh data directory.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.clients import ApiClient, Reply
from tests.conformance.conftest import CONFORMANCE_KEY, PROFILE_ID, SUITE_FILES, load_records
from tests.conftest import doc_url

# SOURCE.md: tests.json 62 result / 30 error / 3 disabled; spec_tests.json 12 / 4 / 1.
EXPECTED_COUNTS = {
    ("tests.json", "expected"): 62,
    ("tests.json", "error"): 30,
    ("tests.json", "disabled"): 3,
    ("spec_tests.json", "expected"): 12,
    ("spec_tests.json", "error"): 4,
    ("spec_tests.json", "disabled"): 1,
}
PATCH_ERROR_CODES = frozenset({"INVALID_PATCH", "PATCH_NOT_APPLICABLE", "PATCH_TEST_FAILED"})
PREFIX = "/content/doc"


def kind(record: dict[str, Any]) -> str:
    if record.get("disabled"):
        return "disabled"
    if "doc" not in record or "patch" not in record:
        return "comment"
    if "expected" in record:
        return "expected"
    if "error" in record:
        return "error"
    return "unknown"


def case_id(name: str, index: int, record: dict[str, Any]) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", str(record.get("comment", ""))).strip("-").lower()
    stem = "spec" if name == "spec_tests.json" else "tests"
    return f"{stem}-{index}" + (f"-{slug[:60]}" if slug else "")


RECORDS = load_records()
CASES = [
    pytest.param(name, index, record, id=case_id(name, index, record))
    for name, index, record in RECORDS
    if kind(record) in ("expected", "error")
] or [pytest.param(None, 0, {}, id="suite-missing")]


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values: numbers by value, but booleans are never numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return isinstance(a, str) and isinstance(b, str) and a == b


def map_pointer(value: Any) -> Any:
    """Prefix a valid pointer with ``/content/doc``; leave anything else as it is."""
    if isinstance(value, str) and (value == "" or value.startswith("/")):
        return PREFIX + value
    return value


def map_op(op: Any) -> Any:
    if not isinstance(op, dict):
        return op
    return {k: map_pointer(v) if k in ("path", "from") else v for k, v in op.items()}


def map_patch(patch: Any) -> Any:
    return [map_op(op) for op in patch] if isinstance(patch, list) else patch


def _write_headers(**extra: str) -> dict[str, str]:
    return {"Idempotency-Key": f"conf-{uuid.uuid4().hex}", **extra}


def _assert_error_shape(reply: Reply) -> None:
    assert reply.status in (400, 422), (reply.status, reply.data)
    error = (reply.data or {}).get("error")
    assert isinstance(error, dict), reply.data
    assert isinstance(error.get("code"), str) and isinstance(error.get("message"), str), error
    assert isinstance(error.get("request_id"), str) and isinstance(error.get("details"), dict)
    assert error["code"] in PATCH_ERROR_CODES, error


@pytest.mark.parametrize(("name", "index", "record"), CASES)
def test_record(
    suite_dir: Path, client: ApiClient, name: str, index: int, record: dict[str, Any]
) -> None:
    api = client.as_key(CONFORMANCE_KEY)
    url = doc_url(f"conformance/case-{index}.json")
    created = api.request(
        "PUT",
        url,
        {"profile_id": PROFILE_ID, "content": {"doc": record["doc"]}},
        _write_headers(**{"If-None-Match": "*"}),
    )
    assert created.status == 201, created.data
    etag = created.data["etag"]

    patched = api.request(
        "PATCH",
        url,
        {"profile_id": PROFILE_ID, "ops": map_patch(record["patch"])},
        _write_headers(**{"If-Match": etag}),
    )
    stored = api.request("GET", f"{url}?profile_id={PROFILE_ID}")
    assert stored.status == 200, stored.data

    if kind(record) == "expected":
        assert patched.status == 200, patched.data
        result = patched.data["document"]["content"]["doc"]
        assert json_equal(result, record["expected"]), (result, record["expected"])
        assert stored.data["etag"] == patched.data["etag"]
        assert stored.data["document"] == patched.data["document"]
        assert json_equal(stored.data["document"]["content"]["doc"], record["expected"])
    else:
        _assert_error_shape(patched)
        assert stored.data["etag"] == etag
        assert json_equal(stored.data["document"]["content"], {"doc": record["doc"]})


def test_every_enabled_case_runs(suite_dir: Path) -> None:
    """The suite cannot shrink silently: counts per file and kind match SOURCE.md, and
    every enabled record is a collected case."""
    counts = Counter((name, kind(record)) for name, _, record in RECORDS)
    assert {name for name, _, _ in RECORDS} == set(SUITE_FILES)
    assert dict(counts) == EXPECTED_COUNTS
    assert len(CASES) == 62 + 12 + 30 + 4
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (0, False, False),
        ([True], [1], False),
        ({"a": None}, {"a": False}, False),
        ({"a": [1, {"b": 2}]}, {"a": [1.0, {"b": 2}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ("1", 1, False),
    ],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal
    assert json_equal(b, a) is equal
