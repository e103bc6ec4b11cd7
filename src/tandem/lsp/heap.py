"""Giving the C heap's free pages back to the system, once a minute.

glibc returns freed memory to the system only from the top of its heap. A server that makes a model
request per keystroke allocates and frees prompts, request bodies and response buffers all day, among
objects that live on (cache entries, document lines), so the free space ends up between live chunks and
stays resident. In the 100,000-key soak with a mispredicting model (bench/bench_soak.py) glibc's free
space grew from 3 MB to 18 MB in 20 minutes while the memory in use grew by 7 MB. `malloc_trim(0)` hands
the free pages in the middle of the heap back (madvise); it runs on the event loop every `TRIM_EVERY_S`.
On a C library without `malloc_trim` (musl, macOS) this does nothing.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import sys
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_EVERY_S = 60.0


def malloc_trim() -> Callable[[], int] | None:
    """glibc's `malloc_trim(0)` as a function returning 1 when it gave memory back; None without it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: int(trim(0))


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
