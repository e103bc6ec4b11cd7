"""Shared pytest set-up. Fixture modules live beside the tests and are loaded here by name."""

from __future__ import annotations

import os
import pathlib
import sys

from hypothesis import settings

# Tests import the packages from the checkout even when the distribution is not installed editable.
ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["fixtures_sim"]

# Property-based tests: a bounded run by default (CI), a longer one with HYPOTHESIS_PROFILE=long.
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True)
settings.register_profile("long", max_examples=5000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
