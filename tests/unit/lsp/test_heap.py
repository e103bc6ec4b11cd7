"""The server's heap trimmer: glibc's free pages between live chunks go back to the system."""

from __future__ import annotations

import asyncio
import importlib.util
import pathlib
import subprocess
import sys

import pytest

from tandem.lsp.heap import (
    M_ARENA_MAX,
    M_MMAP_THRESHOLD,
    M_TRIM_THRESHOLD,
    HeapTrimmer,
    fix_thresholds,
    limit_arenas,
    malloc_trim,
    trim_now,
)


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


class _RecordingLibc:
    """A C library stand-in whose `mallopt` records its calls and answers as glibc does (1: taken)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def mallopt(self, param: int, value: int) -> int:
        self.calls.append((param, value))
        return 1


def test_limit_arenas_asks_glibc_for_two_arenas() -> None:
    libc = _RecordingLibc()
    assert limit_arenas(libc) is True
    assert libc.calls == [(M_ARENA_MAX, 2)]
    assert M_ARENA_MAX == -8  # glibc's malloc.h


def test_limit_arenas_is_silent_without_mallopt() -> None:
    assert limit_arenas(object()) is False


def test_fix_thresholds_maps_blocks_of_64_kb_and_trims_past_128_kb() -> None:
    libc = _RecordingLibc()
    assert fix_thresholds(libc) is True
    assert libc.calls == [(M_MMAP_THRESHOLD, 64 * 1024), (M_TRIM_THRESHOLD, 128 * 1024)]
    assert (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD) == (-3, -1)  # glibc's malloc.h
    assert fix_thresholds(object()) is False


def test_serve_sets_the_heap_up_before_the_server_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    import tandem.lsp.heap as heap
    import tandem.lsp.server as server
    from tandem.cli import main

    order: list[str] = []

    class Built(Exception):
        pass

    def build_server(**_: object) -> None:
        order.append("build_server")
        raise Built

    monkeypatch.setattr(heap, "limit_arenas", lambda *a, **k: order.append("limit_arenas") or True)
    monkeypatch.setattr(heap, "fix_thresholds", lambda *a, **k: order.append("fix_thresholds") or True)
    monkeypatch.setattr(server, "build_server", build_server)
    with pytest.raises(Built):
        main(["serve", "--log-file", "/dev/null"])
    assert order == ["limit_arenas", "fix_thresholds", "build_server"]


def test_the_end_of_the_workspace_scan_trims_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    import tandem.lsp.handlers.lifecycle as lifecycle
    import tandem.lsp.heap as heap

    order: list[str] = []

    class Index:
        async def start(self) -> list[str]:
            order.append("scan")
            return []

    monkeypatch.setattr(lifecycle, "report", lambda ls, problems: order.append("report"))
    monkeypatch.setattr(heap, "trim_now", lambda: order.append("trim") or True)
    asyncio.run(lifecycle._start_workspace(object(), Index()))  # type: ignore[arg-type]
    assert order == ["scan", "report", "trim"]


def test_trim_now_answers_whether_it_could_trim() -> None:
    assert trim_now() in (True, False)
    if malloc_trim() is None:
        assert trim_now() is False


@pytest.mark.skipif(
    not all(importlib.util.find_spec(name) for name in ("click", "rich", "pygments")),
    reason="httpx imports its command-line tool only when click, rich and pygments are installed",
)
def test_serve_does_not_import_the_httpx_command_line_tool() -> None:
    # In a fresh interpreter (this one may have imported httpx already), with a stand-in server module; httpx
    # is imported after `serve` has set up, as the real server module imports it.
    script = (
        "import sys, types\n"
        "from tandem.cli import main\n"
        "class Built(Exception): pass\n"
        "def build_server(**_): raise Built\n"
        "sys.modules['tandem.lsp.server'] = types.SimpleNamespace(build_server=build_server)\n"
        "try:\n"
        "    main(['serve', '--log-file', '/dev/null'])\n"
        "except Built:\n"
        "    pass\n"
        "import httpx\n"
        "print(sorted(name for name in ('httpx._main', 'click', 'rich', 'pygments') if sys.modules.get(name)))\n"
    )
    done = subprocess.run([sys.executable, "-P", "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"
