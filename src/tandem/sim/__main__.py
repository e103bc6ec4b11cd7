"""`python -P -m tandem.sim [options]`: the same as `tandem sim`."""

from __future__ import annotations

import sys

from tandem.sim.runner import main

if __name__ == "__main__":
    sys.exit(main())
