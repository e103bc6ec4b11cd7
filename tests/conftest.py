"""Shared pytest set-up. Fixture modules live beside the tests and are loaded here by name."""

from __future__ import annotations

import os

from hypothesis import settings

# Tests import tandem as it is installed (`pip install '.[test]'`, as CI does, or editable). The checkout's
# root is deliberately not put on sys.path: its `tandem/` folder holds only the command, and would hide the
# installed package's mapped parts (tandem.sim, tandem.lsp, ...) behind it.

pytest_plugins = ["fixtures_sim", "loop_watch_fixture"]

# Property-based tests: a bounded run by default (CI), a longer one with HYPOTHESIS_PROFILE=long.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
