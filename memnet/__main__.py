"""``python -m memnet``: the ``memnet`` command line (:mod:`memnet.cli`)."""

import sys

from memnet.cli import main

if __name__ == "__main__":
    sys.exit(main())
