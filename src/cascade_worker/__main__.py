"""`python -m cascade_worker`: the same as `cascade worker` (what the local launcher runs)."""

import sys

from .cli import main

raise SystemExit(main(sys.argv[1:]))
