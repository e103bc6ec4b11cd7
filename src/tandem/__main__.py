"""`python -P -m tandem`: the `tandem` command (editors that start an interpreter use `-P`, so that the
workspace folder is never put on `sys.path`)."""

from __future__ import annotations

from tandem.cli import main

raise SystemExit(main())
