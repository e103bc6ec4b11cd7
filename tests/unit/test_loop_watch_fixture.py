"""The tests' 100 ms rule itself: a test whose code holds the event loop fails, naming the line; one that
waits on the loop does not (tests/loop_watch_fixture.py, run here on a small test file of its own)."""

from __future__ import annotations

import pathlib

import pytest

pytest_plugins = ["pytester"]

INNER = '''
import asyncio
import time


async def test_holds_the_loop() -> None:
    time.sleep(0.3)  # sleep-ok: the hold (or the idle time) this test measures


async def test_waits_on_the_loop() -> None:
    await asyncio.sleep(0.3)  # sleep-ok: the hold (or the idle time) this test measures


def test_not_on_a_loop() -> None:
    time.sleep(0.3)  # sleep-ok: the hold (or the idle time) this test measures
'''


def test_a_test_that_holds_its_loop_fails_and_one_that_waits_does_not(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    fixture = pathlib.Path(__file__).parents[1] / "loop_watch_fixture.py"
    pytester.makepyfile(loop_watch_fixture=fixture.read_text())
    pytester.makeconftest('pytest_plugins = ["loop_watch_fixture"]\n')
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_holds_the_loop*", "*1 block(s) of the event loop over 100 ms*"]
    )
    assert "time.sleep(0.3)" in result.stdout.str()  # the line that held it
