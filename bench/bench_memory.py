"""Peak memory with a 5,000-file workspace indexed and the caches full (issue 3; target <= 300 MB RSS).

The workspace is real code nobody here wrote: the first N Python files (sorted paths) of this interpreter's
library directory, standard library and site-packages. Each file goes through the privacy filter and into
the symbol index; twenty large files are open with token indexes; the completion cache is filled to its
entry bound with completions for real prefixes; context windows are built over the open documents until the
snippet memo is full. RSS is read from /proc after each phase (the server's whole process would add pygls,
httpx and the interpreter, which the baseline line shows).

With `--server`, the same measured on `tandem serve` itself, over stdio: the N files are copied into a
temporary workspace (directory names the workspace scan skips, such as site-packages, renamed so every file
is indexed), the server is started with it as its root, its background scan is awaited (its CPU goes
quiet), the twenty largest files are opened, and inline completions are asked at many positions of them
(a simulator in its own process answers at once) until the completion cache has seen more entries than it
keeps. The server's VmRSS and VmHWM (peak) are read from /proc/PID/status after each phase.
`--server-python PATH` runs the server under another interpreter (a venv with only `pip install .`, as a
user has it: no dev tools, so no `rich` for httpx to import); the bench itself stays in this one.

It prints what it measured; it passes or fails nothing.

    python bench/bench_memory.py [--files N] [--json]
    python bench/bench_memory.py --server [--files N] [--requests N] [--server-python PATH] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import pathlib
import resource
import shutil
import sys
import sysconfig
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

from tandem.cache.completions import CompletionCache  # noqa: E402
from tandem.cache.context import ContextBuilder, ContextOptions  # noqa: E402
from tandem.cache.privacy import PrivacyFilter  # noqa: E402
from tandem.cache.symbols import SymbolIndex  # noqa: E402
from tandem.cache.token_index import TokenIndex  # noqa: E402
from tandem.cache.tokens import get_counter  # noqa: E402

LIBRARY = pathlib.Path(sysconfig.get_paths()["stdlib"])
OPEN_DOCUMENTS = 20


def rss_mb() -> float:
    for line in pathlib.Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(n_files: int) -> dict[str, Any]:
    phases: dict[str, float] = {"baseline (interpreter + tiktoken loaded)": 0.0}
    counter = get_counter()
    counter.count("warm")
    phases["baseline (interpreter + tiktoken loaded)"] = rss_mb()

    paths = sorted(p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)[:n_files]
    privacy = PrivacyFilter()
    symbols = SymbolIndex()
    started = time.perf_counter()
    started_cpu = time.process_time()
    total_bytes = 0
    skipped = 0
    for source in paths:
        relative = source.relative_to(LIBRARY).as_posix()
        try:
            data = source.read_bytes()
        except OSError:
            continue
        verdict = privacy.check(relative, data)
        if not verdict:
            skipped += 1
            continue
        total_bytes += len(data)
        symbols.update(relative, data.decode("utf-8"))
    index_s = time.perf_counter() - started
    index_cpu_s = time.process_time() - started_cpu
    gc.collect()
    phases[f"symbol index of {len(symbols)} files"] = rss_mb()

    sizes = {name: info.line_count for name in symbols.paths() if (info := symbols.file(name)) is not None}
    largest = sorted(sizes, key=lambda name: -sizes[name])[:OPEN_DOCUMENTS]
    builder = ContextBuilder(counter=counter, symbols=symbols, options=ContextOptions(budget_tokens=8192))
    indexes: dict[str, TokenIndex] = {}
    for path in largest:
        indexes[path] = TokenIndex(counter, symbols.lines(path) or [])
        builder.open_document(path, indexes[path])
    gc.collect()
    phases[f"+ {OPEN_DOCUMENTS} open documents with token indexes"] = rss_mb()

    cache = CompletionCache()
    filled = 0
    samples: list[tuple[str, str, str]] = []
    for path in symbols.paths():
        lines = symbols.lines(path) or []
        for i in range(0, len(lines), 7):
            prefix = "\n".join(lines[max(0, i - 60) : i]) + "\n"
            suffix = "\n".join(lines[i + 3 : i + 20])
            completion = "\n".join(lines[i : i + 3])
            cache.put(model="fast", prefix=prefix, suffix=suffix, completion=completion)
            filled += 1
            if filled > 2 * 4096 and filled % 4 == 0 and completion.strip():
                samples.append((prefix, suffix, completion))
            if filled >= 3 * 4096:
                break
        if filled >= 3 * 4096:
            break
    lookup_s, hits = _time_lookups(cache, samples)
    gc.collect()
    phases[f"+ completion cache full ({len(cache)} entries, {cache.bytes_used / 1e6:.1f} MB accounted)"] = rss_mb()

    windows = 0
    for path, index in indexes.items():
        for line in range(0, index.line_count, max(1, index.line_count // 40)):
            builder.build(path=path, index=index, line=line, character=0)
            windows += 1
    gc.collect()
    phases[f"+ {windows} context windows built (snippet memo warm)"] = rss_mb()

    return {
        "files_seen": len(paths),
        "files_indexed": len(symbols),
        "files_skipped_by_privacy": skipped,
        "source_mb": round(total_bytes / 1e6, 1),
        "index_s": round(index_s, 1),
        "index_cpu_s": round(index_cpu_s, 1),
        "rss_mb_after": {k: round(v, 1) for k, v in phases.items()},
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "cache_lookup_full_cache_us": {
            "p50": round(_percentile(lookup_s, 0.5) * 1e6, 1),
            "p99": round(_percentile(lookup_s, 0.99) * 1e6, 1),
            "n": len(lookup_s),
            "hits": hits,
        },
    }


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0.0


def _time_lookups(cache: CompletionCache, samples: list[tuple[str, str, str]]) -> tuple[list[float], int]:
    """Lookups on a full cache: typing through cached completions (hits) and a changed character (misses)."""
    times: list[float] = []
    hits = 0
    for prefix, suffix, completion in samples:
        for typed in range(0, min(len(completion), 40), 3):
            for probe in (prefix + completion[:typed], prefix + completion[:typed] + "\x00"):
                t0 = time.perf_counter()
                hit = cache.lookup(model="fast", prefix=probe, suffix=suffix)
                times.append(time.perf_counter() - t0)
                hits += hit is not None
    return times, hits


# -- the server itself ---------------------------------------------------------------------------------


def proc_status_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM (the peak) of process `pid`, in MB, from /proc/PID/status."""
    found: dict[str, float] = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key = line.split(":", 1)[0]
        if key in ("VmRSS", "VmHWM"):
            found[key] = round(int(line.split()[1]) / 1024, 1)
    return found


def cpu_s(pid: int) -> float:
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_quiet(pid: int, *, timeout_s: float = 600.0) -> float:
    """Until the process has used under 2% of a CPU for a second (its background work is done);
    returns the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        before = cpu_s(pid)
        await asyncio.sleep(1.0)  # sleep-ok: sampling CPU use; the server announces no end of its scan
        if cpu_s(pid) - before < 0.02:
            break
    return round(time.monotonic() - started, 1)


def copy_workspace(n_files: int, into: pathlib.Path) -> list[pathlib.Path]:
    """The first `n_files` library files (as `run` takes them) copied under `into`; directory names the
    workspace scan skips are renamed so that every file is indexed."""
    from tandem.completion.workspace import SKIP_DIRS

    copied = []
    for source in sorted(p for p in LIBRARY.rglob("*.py") if "__pycache__" not in p.parts)[:n_files]:
        parts = [part + "_" if part in SKIP_DIRS else part for part in source.relative_to(LIBRARY).parts]
        target = into.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copied.append(target)
    return copied


# Replaces the `python` the replay client starts with `argv[1]`, which runs the CLI with the rest (same PID).
EXEC_SERVER = "import os, sys; os.execv(sys.argv[1], [sys.argv[1], '-P', '-m', 'tandem', *sys.argv[2:]])"


async def server_run(n_files: int, requests: int, server_python: str | None = None) -> dict[str, Any]:
    from bench_latency import sim_process
    from replay_kit import RootedClient

    phases: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="tandem-bench-memory-") as tmp:
        workspace = pathlib.Path(tmp) / "workspace"
        files = await asyncio.to_thread(copy_workspace, n_files, workspace)
        source_mb = sum(f.stat().st_size for f in files) / 1e6
        env = {**os.environ, "XDG_CONFIG_HOME": tmp}
        trace = pathlib.Path(tmp) / "trace.jsonl"
        with sim_process("--profile", "instant") as base_url:
            python_args = ("-c", EXEC_SERVER, server_python) if server_python else ("-P", "-m", "tandem")
            client = RootedClient(root=workspace, trace_path=trace, env=env, python_args=python_args)
            model = {"provider": "openai-chat", "base_url": base_url, "model": "sim-instant", "max_tokens": 96}
            await client.start({"models": {"fast": model}, "completion": {"debounce": "fixed", "debounce_ms": 0}})
            pid = client.server_pid
            assert pid is not None
            try:
                phases["started"] = proc_status_mb(pid)
                scan_s = await wait_quiet(pid)
                phases[f"workspace of {len(files)} files indexed"] = proc_status_mb(pid)
                largest = sorted(files, key=lambda f: -f.stat().st_size)[:OPEN_DOCUMENTS]
                documents = []
                for path in largest:
                    text = path.read_text(encoding="utf-8")
                    documents.append((client.open(uri=path.as_uri(), language_id="python", text=text, cursor=0), text))
                await wait_quiet(pid)
                phases[f"+ {OPEN_DOCUMENTS} largest files open"] = proc_status_mb(pid)
                shown = 0
                for i in range(requests):
                    document, text = documents[i % len(documents)]
                    lines = text.split("\n")
                    # A different place each time (a stride prime to any file's length), after the indentation.
                    line = (i // len(documents)) * 7919 % len(lines)
                    document.line = line
                    document.line_before = lines[line][: len(lines[line]) - len(lines[line].lstrip())]
                    pending = client.request_inline(document)
                    await asyncio.wait_for(pending.answered.wait(), 30)
                    shown += bool(pending.text())
                await wait_quiet(pid)
                phases[f"+ {requests} completions at distinct places ({shown} shown)"] = proc_status_mb(pid)
            finally:
                await client.stop()
    return {
        "server_python": server_python or sys.executable,
        "files": len(files),
        "source_mb": round(source_mb, 1),
        "scan_wait_s": scan_s,
        "requests": requests,
        "phases": phases,
        "peak_rss_mb": max(v.get("VmHWM", 0.0) for v in phases.values()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--server", action="store_true", help="measure `tandem serve` itself over stdio")
    parser.add_argument("--requests", type=int, default=6000, help="--server: completions asked (default 6000)")
    parser.add_argument("--server-python", metavar="PATH", help="--server: the interpreter that runs it")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.server:
        logging.getLogger("pygls").setLevel(logging.ERROR)
        measured = asyncio.run(server_run(args.files, args.requests, args.server_python))
        if args.json:
            print(json.dumps(measured, indent=2))
            return
        print(
            f"tandem serve over stdio: workspace of {measured['files']} library files ({measured['source_mb']} MB), "
            f"scan done after {measured['scan_wait_s']} s; simulated provider (tandem sim, instant profile); "
            f"server run by {measured['server_python']}"
        )
        for phase, mb in measured["phases"].items():
            print(f"  after {phase}: VmRSS {mb.get('VmRSS')} MB, VmHWM {mb.get('VmHWM')} MB")
        print(f"peak RSS of the server process (VmHWM): {measured['peak_rss_mb']} MB")
        return
    result = run(args.files)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"workspace: {result['files_seen']} Python files ({result['source_mb']} MB of source), "
        f"{result['files_indexed']} indexed in {result['index_s']} s ({result['index_cpu_s']} s CPU), "
        f"{result['files_skipped_by_privacy']} "
        "refused by the privacy filter"
    )
    for phase, mb in result["rss_mb_after"].items():
        print(f"  RSS after {phase}: {mb} MB")
    print(f"peak RSS: {result['peak_rss_mb']} MB")
    lookups = result["cache_lookup_full_cache_us"]
    print(
        f"completion cache lookup, cache full: p50 {lookups['p50']} us, p99 {lookups['p99']} us "
        f"({lookups['n']} lookups, {lookups['hits']} hits)"
    )


if __name__ == "__main__":
    main()
