"""The test suite. Importing it turns Python's bytecode cache back on where the
environment turned it off (``PYTHONDONTWRITEBYTECODE``, set on the shared test machine):
without it each xdist worker, and each ``memnet`` subprocess a test starts, recompiles
the repository and re-rewrites every test module's asserts (about 10 s of CPU per
worker). ``__pycache__`` is ignored by git (docs/testing.md, "Where the time goes")."""

from __future__ import annotations

import sys

sys.dont_write_bytecode = False
