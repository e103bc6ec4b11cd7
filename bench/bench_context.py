"""Context window after a one-character edit: incremental token index vs a full re-encode (issue 3).

Setting: the Python standard library on this machine is the workspace (every module indexed in the symbol
index), a large real module is the document being typed into, and a dozen other large modules are open, so a
128K-token window fills with real cross-file material. Each keystroke inserts one character at the cursor.

    incremental   TokenIndex.replace_lines() for the edited line + ContextBuilder.build() of the whole window
                  (what tandem does per keystroke)
    full          one tiktoken encode of the same assembled window (the least a server without a token
                  index must do to know the window's size after the edit)

Both run in the same process, interleaved round by round (one full encode, then several keystrokes), so
their ratio means something on a noisy machine. It prints what it measured; it passes or fails nothing.

    python bench/bench_context.py [--rounds N] [--budget TOKENS] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pathlib
import statistics
import sysconfig
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

from tandem.cache.context import MAX_BUDGET_TOKENS, ContextBuilder, ContextOptions, ContextWindow  # noqa: E402
from tandem.cache.symbols import SymbolIndex  # noqa: E402
from tandem.cache.token_index import TokenIndex  # noqa: E402
from tandem.cache.tokens import get_counter  # noqa: E402

STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"])
SKIP_DIRS = {"test", "tests", "site-packages", "__pycache__", "idlelib", "lib2to3", "tkinter", "turtledemo"}
CURRENT = "_pydecimal.py"
OPEN = (
    "typing.py",
    "argparse.py",
    "inspect.py",
    "dataclasses.py",
    "pathlib.py",
    "subprocess.py",
    "tarfile.py",
    "asyncio/base_events.py",
    "email/_header_value_parser.py",
    "collections/__init__.py",
    "logging/__init__.py",
    "threading.py",
)
KEYSTROKES_PER_ROUND = 10


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary_ms(values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    return {
        "p50_ms": round(percentile(ms, 0.5), 3),
        "p99_ms": round(percentile(ms, 0.99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "n": len(ms),
    }


def workspace_files() -> list[pathlib.Path]:
    files: list[pathlib.Path] = []
    for folder, dirs, names in os.walk(STDLIB):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        files.extend(pathlib.Path(folder, n) for n in sorted(names) if n.endswith(".py"))
    return files


def rendered(window: ContextWindow) -> str:
    return window.snippet_text + window.prefix + window.suffix


def run(rounds: int, budget: int) -> dict[str, Any]:
    counter = get_counter()
    symbols = SymbolIndex()
    started = time.perf_counter()
    for path in workspace_files():
        try:
            symbols.update(path.relative_to(STDLIB).as_posix(), path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, OSError):
            continue
    index_s = time.perf_counter() - started

    builder = ContextBuilder(counter=counter, symbols=symbols, options=ContextOptions(budget_tokens=budget))
    for name in OPEN:
        builder.open_document(name, TokenIndex(counter, (STDLIB / name).read_text(encoding="utf-8").splitlines()))
    lines = (STDLIB / CURRENT).read_text(encoding="utf-8").splitlines()
    index = TokenIndex(counter, lines)
    # The cursor: inside a method body two thirds down the file, at the end of the line's indentation.
    line = next(i for i in range(len(lines) * 2 // 3, len(lines)) if lines[i].startswith("        return"))
    character = len(lines[line]) - len(lines[line].lstrip())
    window = builder.build(path=CURRENT, index=index, line=line, character=character)

    incremental: list[float] = []
    incremental_cpu: list[float] = []
    update_only: list[float] = []
    full: list[float] = []
    reused_share: list[float] = []
    typed = "value = self._fix(context)  "
    for round_number in range(rounds):
        text = rendered(window)
        t0 = time.perf_counter()
        exact = counter.count(text)
        full.append(time.perf_counter() - t0)
        for k in range(KEYSTROKES_PER_ROUND):
            char = typed[(round_number * KEYSTROKES_PER_ROUND + k) % len(typed)]
            current = index.lines[line]
            new_line = current[:character] + char + current[character:]
            c0 = time.thread_time()
            t0 = time.perf_counter()
            index.replace_lines(line, line + 1, [new_line])
            t1 = time.perf_counter()
            builder.note_edit(CURRENT, line)
            window = builder.build(path=CURRENT, index=index, line=line, character=character + 1)
            t2 = time.perf_counter()
            incremental_cpu.append(time.thread_time() - c0)
            character += 1
            update_only.append(t1 - t0)
            incremental.append(t2 - t0)
            reused_share.append(window.reused_prefix_tokens / max(1, window.total_tokens))
        if character > len(typed) * 2:
            # Start the line over (one more edit, not timed) so it does not grow without end.
            index.replace_lines(line, line + 1, [lines[line]])
            character = len(lines[line]) - len(lines[line].lstrip())
            window = builder.build(path=CURRENT, index=index, line=line, character=character)

    exact = counter.count(rendered(window))
    inc, ful = summary_ms(incremental), summary_ms(full)
    return {
        "workspace": {"files_indexed": len(symbols), "index_s": round(index_s, 2), "open_documents": len(OPEN)},
        "document": {"path": CURRENT, "lines": index.line_count, "tokens": index.total_tokens, "cursor_line": line},
        "window": {
            "budget_tokens": window.budget_tokens,
            "total_tokens": window.total_tokens,
            "exact_tokens_of_rendered_window": exact,
            "count_error_pct": round(100 * (window.total_tokens - exact) / exact, 3),
            "snippets": len(window.snippets),
            "snippet_tokens": window.snippet_tokens,
            "prefix_tokens": window.prefix_tokens,
            "suffix_tokens": window.suffix_tokens,
            "reused_prefix_share_p50": round(percentile(reused_share, 0.5), 3),
        },
        "incremental_edit_and_build": inc,
        # CPU time of this thread: what the work costs when the machine does not preempt it.
        "incremental_edit_and_build_cpu": summary_ms(incremental_cpu),
        "incremental_index_update_only": summary_ms(update_only),
        "full_reencode_of_window": ful,
        "ratio_full_over_incremental_p50": round(ful["p50_ms"] / inc["p50_ms"], 1),
        "gc": "enabled (as in the server)" if gc.isenabled() else "disabled",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=40, help="full encodes; keystrokes are 10x this")
    parser.add_argument("--budget", type=int, default=MAX_BUDGET_TOKENS)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.rounds, args.budget)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    w, inc, ful = result["window"], result["incremental_edit_and_build"], result["full_reencode_of_window"]
    upd = result["incremental_index_update_only"]
    print(
        f"workspace: {result['workspace']['files_indexed']} stdlib files indexed in "
        f"{result['workspace']['index_s']} s; {result['workspace']['open_documents']} open documents"
    )
    doc = result["document"]
    print(
        f"document:  {doc['path']} ({doc['lines']} lines, {doc['tokens']} tokens), cursor on line {doc['cursor_line']}"
    )
    print(
        f"window:    {w['total_tokens']} of {w['budget_tokens']} tokens ({w['snippets']} snippets "
        f"{w['snippet_tokens']}, prefix {w['prefix_tokens']}, suffix {w['suffix_tokens']}); exact count of the "
        f"rendered window {w['exact_tokens_of_rendered_window']} ({w['count_error_pct']:+}%)"
    )
    reused = w["reused_prefix_share_p50"]
    cpu = result["incremental_edit_and_build_cpu"]
    print(f"           leading tokens identical to the previous keystroke's window: p50 {reused:.1%}")
    print(
        f"one-character edit + window build, incremental: p50 {inc['p50_ms']} ms, p99 {inc['p99_ms']} ms (n={inc['n']})"
    )
    print(f"  the same, thread CPU time:                    p50 {cpu['p50_ms']} ms, p99 {cpu['p99_ms']} ms")
    print(f"  of which the token index update:              p50 {upd['p50_ms']} ms, p99 {upd['p99_ms']} ms")
    print(
        f"full re-encode of the same window:              p50 {ful['p50_ms']} ms, p99 {ful['p99_ms']} ms (n={ful['n']})"
    )
    print(f"ratio full / incremental at p50: {result['ratio_full_over_incremental_p50']}x   (gc {result['gc']})")


if __name__ == "__main__":
    main()
