"""Shared pytest set-up. Fixture modules live beside the tests and are loaded here by name."""

from __future__ import annotations

import pathlib
import sys

# Tests import the packages from the checkout even when the distribution is not installed editable.
ROOT = pathlib.Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

pytest_plugins = ["fixtures_sim"]
