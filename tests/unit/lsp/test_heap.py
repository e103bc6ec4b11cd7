"""The server's heap trimmer: glibc's free pages between live chunks go back to the system."""

from __future__ import annotations

import asyncio
import pathlib

import pytest

from tandem.lsp.heap import HeapTrimmer, malloc_trim


def _rss_mb() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_trim_gives_back_free_pages_between_live_chunks() -> None:
    trim = malloc_trim()
    if trim is None:
        pytest.skip("no glibc malloc_trim here")
    # 24 MB in 4 KB chunks (glibc's heap, below its mmap threshold), then one that stays, then the 24 MB
    # freed: free space in the middle of the heap, which glibc does not give back by itself.
    chunks = [bytearray(4096) for _ in range(6144)]
    guard = bytearray(4096)
    del chunks
    before = _rss_mb()
    trim()
    after = _rss_mb()
    assert before - after > 12, (before, after)
    assert len(guard) == 4096


async def test_the_trimmer_trims_until_cancelled() -> None:
    done = asyncio.Event()
    trimmer: HeapTrimmer

    def trimmed() -> None:
        if trimmer.trims >= 2:
            done.set()

    trimmer = HeapTrimmer(every_s=0.0, on_trim=trimmed)
    if not trimmer.available:
        pytest.skip("no glibc malloc_trim here")
    task = asyncio.ensure_future(trimmer.run())
    await done.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert trimmer.trims >= 2 and trimmer.seconds >= 0.0
