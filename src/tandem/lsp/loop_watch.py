"""Watching the event loop for anything that holds it: a handler, a callback or a regex that keeps every
other request waiting.

A heartbeat runs on the loop every `tick_s`. Between two beats the loop thread either ran callbacks, slept
in the selector until the beat was due, slept somewhere else (a blocking read, `time.sleep`, the GIL held
by another thread), or waited for a CPU while the machine was busy. Only the last is not the loop's fault,
and Linux counts it per thread (`/proc/self/task/<tid>/schedstat`, the second figure: time spent runnable
but not running). So a gap counts as blocked for `wall - waited_for_cpu - tick_s`; past `limit_s` it is
reported as a `Block`. A loaded machine stretches the wall time but not the blocked time, which is what
keeps the check from failing tests on a busy machine. (Without schedstat the waited time is taken as 0.)

A sampler thread looks at the heartbeat every `tick_s / 2`; when the beat is late by more than `limit_s`
it keeps the loop thread's stack at that moment, so the report names what held the loop.

`tandem serve` starts a watch when `TANDEM_LOOP_BLOCK_MS` is set (the tests set it to 100): each block is
logged at error level by the `tandem.loop` logger, and also written to the file named by
`TANDEM_LOOP_BLOCK_REPORT` when that is set (the end-to-end tests fail on any line there). The in-process
tests use the same watch through an event loop of their own (tests/loop_watch_fixture.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import pathlib
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from tandem.completion.machine.files import read_file

log = logging.getLogger("tandem.loop")

ENV_LIMIT_MS = "TANDEM_LOOP_BLOCK_MS"
ENV_REPORT = "TANDEM_LOOP_BLOCK_REPORT"
# Frames of the loop thread's stack kept in a report (innermost last).
STACK_FRAMES = 24


@dataclass(frozen=True)
class Block:
    """One stretch in which the loop ran nothing else."""

    blocked_ms: float  # wall time minus time waiting for a CPU (and the beat's own interval)
    wall_ms: float
    waited_ms: float
    stack: str  # the loop thread's stack while it was blocked ("" if the sampler did not see it)

    def describe(self) -> str:
        # Each frame is two lines (where, and the line itself); the innermost are the ones that say why.
        lines = self.stack.splitlines()[-2 * STACK_FRAMES :]
        where = "\n" + "\n".join(lines) if lines else ""
        return (
            f"the event loop was held for {self.blocked_ms:.0f} ms ({self.wall_ms:.0f} ms of wall time, "
            f"{self.waited_ms:.0f} ms of it waiting for a CPU){where}"
        )


def _waited_for_cpu_s(native_id: int) -> float | None:
    """Seconds the thread has spent runnable but not running, or None where Linux does not say."""
    read = read_file(pathlib.Path(f"/proc/self/task/{native_id}/schedstat"), max_bytes=256)
    if read.data is None:
        return None
    try:
        return int(read.data.split()[1]) / 1e9
    except (IndexError, ValueError):
        return None


class LoopWatch:
    """Reports every `Block` longer than `limit_s` on `loop` to `on_block` (called on the loop thread)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        on_block: Callable[[Block], None],
        limit_s: float = 0.1,
        tick_s: float = 0.02,
    ) -> None:
        self.loop = loop
        self.on_block = on_block
        self.limit_s = limit_s
        self.tick_s = tick_s
        self._timer: asyncio.Handle | None = None
        self._last_beat = 0.0  # monotonic time of the last beat; 0: none since (re)start
        self._last_waited = 0.0
        self._native_id = 0
        self._ident = 0
        self._stack = ""
        self._stop = threading.Event()
        self._sampler: threading.Thread | None = None
        # The longest gap between beats seen, wall time and blocked time (for tests and benchmarks).
        self.longest_wall_s = 0.0
        self.longest_blocked_s = 0.0

    def start(self) -> None:
        """Begin watching (call on the loop's thread, or before the loop runs)."""
        self._stop.clear()
        self._last_beat = 0.0
        if self._timer is None:
            self._timer = self.loop.call_soon(self._beat)
        if self._sampler is None:
            self._sampler = threading.Thread(target=self._sample, name="tandem-loop-watch", daemon=True)
            self._sampler.start()

    def pause(self) -> None:
        """The loop stops running for a while (between `run_until_complete` calls): nothing is held."""
        self._last_beat = 0.0

    def resume(self) -> None:
        """The loop runs again: a gap counts from now (the first callback may hold it before any beat)."""
        if self._native_id:
            self._last_waited = _waited_for_cpu_s(self._native_id) or 0.0
        self._last_beat = time.monotonic()

    def stop(self) -> None:
        self._stop.set()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sampler is not None:
            self._sampler.join()
            self._sampler = None

    def _beat(self) -> None:
        now = time.monotonic()
        if not self._native_id:
            self._native_id, self._ident = threading.get_native_id(), threading.get_ident()
        waited = _waited_for_cpu_s(self._native_id) or 0.0
        if self._last_beat:
            wall = now - self._last_beat
            waited_between = max(waited - self._last_waited, 0.0)
            blocked = wall - waited_between - self.tick_s
            self.longest_wall_s = max(self.longest_wall_s, wall - self.tick_s)
            self.longest_blocked_s = max(self.longest_blocked_s, blocked)
            if blocked > self.limit_s:
                self.on_block(Block(blocked * 1e3, wall * 1e3, waited_between * 1e3, self._stack))
        self._stack = ""
        self._last_beat, self._last_waited = time.monotonic(), waited
        self._timer = self.loop.call_later(self.tick_s, self._beat)

    def _sample(self) -> None:
        while not self._stop.wait(self.tick_s / 2):
            last = self._last_beat
            if not last or self._stack or time.monotonic() - last < self.tick_s + self.limit_s:
                continue
            frame = sys._current_frames().get(self._ident)
            if frame is not None and self._last_beat == last:
                # The import machinery's own frames say nothing about who imported.
                frames = [f for f in traceback.extract_stack(frame) if not f.filename.startswith("<frozen")]
                self._stack = "".join(traceback.format_list(frames))


def watch_from_env(loop: asyncio.AbstractEventLoop, env: Mapping[str, str] = os.environ) -> LoopWatch | None:
    """The watch `tandem serve` runs when `TANDEM_LOOP_BLOCK_MS` is set (see the module docstring)."""
    raw = env.get(ENV_LIMIT_MS, "")
    if not raw:
        return None
    try:
        limit_ms = float(raw)
    except ValueError:
        log.warning("tandem: %s=%r is not a number of milliseconds: the loop is not watched", ENV_LIMIT_MS, raw)
        return None
    report = env.get(ENV_REPORT, "")
    if report:
        handler = logging.FileHandler(report, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(message)s\n---"))
        log.addHandler(handler)

    def on_block(block: Block) -> None:
        log.error("tandem: %s", block.describe())

    watch = LoopWatch(loop, on_block=on_block, limit_s=limit_ms / 1e3)
    watch.start()
    return watch
