"""Shared pytest set-up. Fixture modules (`fixtures_sim`, `loop_watch_fixture`) and helpers the tests import
by name (`hostile_git`, `e2e_support`, ...) live in this folder, which pytest puts on sys.path for this
conftest; the tier folders (unit/, contract/, e2e/, editors/, model/) hold the tests."""

from __future__ import annotations

import os

from hypothesis import settings

# Tests import tandem as it is installed (`pip install '.[test]'`, as CI does, or editable): the package is
# in src/tandem/ (a src layout), so nothing in the checkout's root can stand in for it.

pytest_plugins = ["fixtures_sim", "loop_watch_fixture"]

# Property-based tests: a bounded run by default (CI), a longer one with HYPOTHESIS_PROFILE=long.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
