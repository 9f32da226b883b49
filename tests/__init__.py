"""The test suite. Importing it removes two costs that only a test run pays, where every
test builds the service again from the same files (docs/testing.md, "Where the time
goes"):

- bytecode: Python caches it again where the environment turned that off
  (``PYTHONDONTWRITEBYTECODE``, set on the shared test machine); without the cache each
  xdist worker, and each ``memnet`` subprocess a test starts, recompiles the repository
  and re-rewrites every test module's asserts (about 10 s of CPU per worker).
  ``__pycache__`` is ignored by git.
- the meta-schema check of a profile schema (``Draft202012Validator.check_schema``),
  which ``bootstrap.build`` runs on every schema under ``profiles/schemas`` (about 0.15 s
  a build, half the CPU of the API tier): a schema body that passed once in this process
  is not checked again. A body never seen, or one that failed, is checked as before, so a
  bad schema is still refused with the same error.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from jsonschema import Draft202012Validator

sys.dont_write_bytecode = False

_check_schema = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]
_PASSED: set[str] = set()


def _check_schema_once(cls: type, schema: Any, *args: Any, **kwargs: Any) -> None:
    try:
        key = json.dumps([cls.__qualname__, schema, args, kwargs], sort_keys=True)
    except (TypeError, ValueError):  # not plain JSON: checked every time
        _check_schema(cls, schema, *args, **kwargs)
        return
    if key not in _PASSED:
        _check_schema(cls, schema, *args, **kwargs)
        _PASSED.add(key)


Draft202012Validator.check_schema = classmethod(_check_schema_once)  # type: ignore[method-assign,assignment]
