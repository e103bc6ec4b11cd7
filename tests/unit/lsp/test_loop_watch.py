"""The event-loop watch (`tandem.lsp.loop_watch`) behind the tests' 100 ms rule: it reports a callback that
holds the loop by computing or by sleeping, names it, and does not report a loop slowed only by a busy
machine (its thread waiting for a CPU)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from tandem.lsp.loop_watch import Block, LoopWatch


def _run(work: Callable[[], None], *, then_idle_s: float = 0.15) -> tuple[list[Block], LoopWatch]:
    """Run `work` as one callback on a loop of its own (not the test's watched loop), watched at 100 ms."""
    loop = asyncio.SelectorEventLoop()
    blocks: list[Block] = []
    watch = LoopWatch(loop, on_block=blocks.append, limit_s=0.1)
    watch.start()

    async def main() -> None:
        await asyncio.sleep(0.05)  # sleep-ok: the hold (or the idle time) this test measures
        loop.call_soon(work)
        await asyncio.sleep(then_idle_s)  # sleep-ok: the hold (or the idle time) this test measures

    try:
        loop.run_until_complete(main())
    finally:
        watch.stop()
        loop.close()
    return blocks, watch


def _compute_for(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_a_callback_that_computes_for_300_ms_is_reported_and_named() -> None:
    def hold_the_loop_computing() -> None:
        _compute_for(0.3)

    blocks, _ = _run(hold_the_loop_computing)
    assert len(blocks) == 1 and blocks[0].blocked_ms >= 250
    assert "hold_the_loop_computing" in blocks[0].stack


def test_a_callback_that_sleeps_for_300_ms_is_reported() -> None:
    def hold_the_loop_sleeping() -> None:
        time.sleep(0.3)  # sleep-ok: the hold (or the idle time) this test measures

    blocks, _ = _run(hold_the_loop_sleeping)
    assert len(blocks) == 1 and blocks[0].blocked_ms >= 250
    assert "hold_the_loop_sleeping" in blocks[0].stack


def test_short_callbacks_are_not_reported() -> None:
    blocks, watch = _run(lambda: _compute_for(0.03))
    assert blocks == [] and watch.longest_blocked_s < 0.1


@pytest.fixture
def crowded_cpu() -> Iterator[None]:
    """This thread and eight busy processes on one CPU: the loop's thread waits for it most of the time."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    code = f"import os; os.sched_setaffinity(0, {{{cpu}}}); print(flush=True)\nwhile True: pass"
    burners = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE) for _ in range(8)]
    try:
        for burner in burners:
            assert burner.stdout is not None and burner.stdout.readline()  # pinned and spinning
        os.sched_setaffinity(0, {cpu})
        yield
    finally:
        os.sched_setaffinity(0, before)
        for burner in burners:
            burner.kill()
            burner.wait()
            if burner.stdout is not None:
                burner.stdout.close()


@pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="Linux schedstat")
def test_a_loop_slowed_by_a_busy_machine_is_not_reported(crowded_cpu: None) -> None:
    # 40 ms of computing per callback, 5 callbacks: on a CPU shared nine ways each takes far over 100 ms of
    # wall time, but the loop held nothing longer than 40 ms.
    def work() -> None:
        _compute_for(0.04)

    loop = asyncio.SelectorEventLoop()
    blocks: list[Block] = []
    watch = LoopWatch(loop, on_block=blocks.append, limit_s=0.1)
    watch.start()

    async def main() -> None:
        for _ in range(5):
            loop.call_soon(work)
            await asyncio.sleep(0)  # sleep-ok: the hold (or the idle time) this test measures
            await asyncio.sleep(0.02)  # sleep-ok: the hold (or the idle time) this test measures

    try:
        loop.run_until_complete(main())
    finally:
        watch.stop()
        loop.close()
    assert watch.longest_wall_s > 0.1  # the machine was busy enough to fool a wall clock
    assert blocks == [], [b.describe() for b in blocks]
