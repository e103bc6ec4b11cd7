"""Peak memory with a 5,000-file workspace indexed and the caches full (issue 3; target <= 300 MB RSS).

The workspace is real code nobody here wrote: the first N Python files (sorted paths) of this interpreter's
library directory, standard library and site-packages. Each file goes through the privacy filter and into
the symbol index; twenty large files are open with token indexes; the completion cache is filled to its
entry bound with completions for real prefixes; context windows are built over the open documents until the
snippet memo is full. RSS is read from /proc after each phase (the server's whole process would add pygls,
httpx and the interpreter, which the baseline line shows). It prints what it measured; it passes or fails
nothing.

    python bench/bench_memory.py [--files N] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import resource
import sys
import sysconfig
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cache.completions import CompletionCache  # noqa: E402
from cache.context import ContextBuilder, ContextOptions  # noqa: E402
from cache.privacy import PrivacyFilter  # noqa: E402
from cache.symbols import SymbolIndex  # noqa: E402
from cache.token_index import TokenIndex  # noqa: E402
from cache.tokens import get_counter  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
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
