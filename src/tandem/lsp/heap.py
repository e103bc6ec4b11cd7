"""Giving the C heap's free pages back to the system, once a minute.

glibc returns freed memory to the system only from the top of its heap. A server that makes a model
request per keystroke allocates and frees prompts, request bodies and response buffers all day, among
objects that live on (cache entries, document lines), so the free space ends up between live chunks and
stays resident. In the 100,000-key soak with a mispredicting model (bench/bench_soak.py) glibc's free
space grew from 3 MB to 18 MB in 20 minutes while the memory in use grew by 7 MB. `malloc_trim(0)` hands
the free pages in the middle of the heap back (madvise); it runs on the event loop every `TRIM_EVERY_S`.
`trim_now` also runs once when the workspace scan ends, whose thread freed the walk's file texts.
On a C library without `malloc_trim` (musl, macOS) this does nothing.

`limit_arenas` caps glibc's malloc arenas at `ARENA_MAX` (`mallopt(M_ARENA_MAX)`), called once when
`tandem serve` starts, before any thread: by default each thread that allocates (the workspace scan, the
tokenizer, the executor's workers) gets an arena of its own reserved in 64 MB steps, whose free space
between live chunks stays resident. With 5,000 files indexed, 20 open and the completion cache full
(bench/bench_memory.py --server) the peak (VmHWM) was 184 MB with glibc's default, 181 MB with two arenas.

`fix_thresholds`, also called once at start, fixes two of glibc's thresholds that it otherwise moves as the
process runs: blocks of `MMAP_THRESHOLD` (64 KB) or more are mapped on their own and unmapped when freed
(by default the threshold starts at 128 KB and rises to the largest block freed, up to 32 MB, after which
large transient buffers come from the heap and leave holes in it), and free space of `TRIM_THRESHOLD`
(128 KB) at the top of the heap goes back at once. In bench/bench_memory.py --server the peak fell from
173.3 MB to 169.5 MB; the server's CPU per keystroke (bench/bench_latency.py --figures 2) did not move
beyond the bench's noise (3.63 and 3.77 ms before, 3.67 and 3.97 ms after).
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import sys
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

TRIM_EVERY_S = 60.0
ARENA_MAX = 2
M_ARENA_MAX = -8  # glibc's malloc.h
MMAP_THRESHOLD = 64 * 1024
TRIM_THRESHOLD = 128 * 1024
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None


def _mallopt(libc: Any, settings: list[tuple[int, int]]) -> bool:
    """`mallopt(param, value)` for each setting: True when glibc took them all; False elsewhere (no glibc,
    no mallopt)."""
    if libc is None:
        libc = _libc()
        if libc is None:
            return False
    try:
        mallopt = libc.mallopt
    except AttributeError:
        return False
    try:
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        mallopt.restype = ctypes.c_int
    except AttributeError:
        pass  # a stand-in without ctypes attributes (tests)
    return all([mallopt(param, value) == 1 for param, value in settings])


def limit_arenas(libc: Any = None, arenas: int = ARENA_MAX) -> bool:
    """`mallopt(M_ARENA_MAX, arenas)`: True when glibc took it; False elsewhere (no glibc, no mallopt).
    Call it before threads start: an arena a thread already has stays."""
    return _mallopt(libc, [(M_ARENA_MAX, arenas)])


def fix_thresholds(libc: Any = None, *, mmap_bytes: int = MMAP_THRESHOLD, trim_bytes: int = TRIM_THRESHOLD) -> bool:
    """`mallopt(M_MMAP_THRESHOLD, mmap_bytes)` and `mallopt(M_TRIM_THRESHOLD, trim_bytes)`: True when glibc
    took both; False elsewhere. Call it at start, before the heap grows."""
    return _mallopt(libc, [(M_MMAP_THRESHOLD, mmap_bytes), (M_TRIM_THRESHOLD, trim_bytes)])


def malloc_trim() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)` as a function returning 1 when it gave memory back; None without it."""
    libc = _libc()
    if libc is None:
        return None
    try:
        trim = libc.malloc_trim
    except AttributeError:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: int(trim(0))


def trim_now() -> bool:
    """`malloc_trim(0)` once (after a burst such as the workspace scan); False without glibc."""
    trim = malloc_trim()
    return trim is not None and trim() == 1


class HeapTrimmer:
    """Calls `malloc_trim(0)` every `every_s` seconds until cancelled; counts its calls and their time."""

    def __init__(self, *, every_s: float = TRIM_EVERY_S, on_trim: Callable[[], None] | None = None) -> None:
        self.every_s = every_s
        self.trims = 0
        self.seconds = 0.0
        self._on_trim = on_trim
        self._trim = malloc_trim()

    @property
    def available(self) -> bool:
        return self._trim is not None

    async def run(self) -> None:
        if self._trim is None:
            return
        while True:
            await asyncio.sleep(self.every_s)  # a timer, not a wait for an event: once a minute
            started = time.perf_counter()
            self._trim()
            self.seconds += time.perf_counter() - started
            self.trims += 1
            if self._on_trim is not None:
                self._on_trim()
