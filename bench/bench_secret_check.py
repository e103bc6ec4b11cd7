"""The credential check on the typing path: a document is refused the moment a change brings a credential
into it, so every incremental change is checked. What does that cost per keystroke?

Setting: a ~1 MB document made of real modules of this machine's Python standard library, opened in the
workspace index (`WorkspaceIndex.open`, the checks of a document on open), then typed into one character
at a time in the middle of the file (`LineBuffer.replace` + `WorkspaceIndex.change`, what didChange does).

    incremental   WorkspaceIndex.change(): the credential check over the lines the change touched
                  (and the index's other per-change bookkeeping; no token index, so nothing else)
    whole         WorkspaceIndex.open() of the same buffer: every check over the whole document (what
                  re-checking the document on each change would cost)
    long line     the incremental check when the edited line is itself 100 KB (a minified file)

All three run in the same process, interleaved keystroke by keystroke, so their ratio means something on a
noisy machine. The last keystroke pastes an AWS example key id, and the run checks that the incremental
path refused the document. It prints what it measured; it passes or fails nothing.

    python bench/bench_secret_check.py [--keystrokes N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import pathlib
import statistics
import sysconfig
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

from tandem.cache.lines import LineBuffer  # noqa: E402
from tandem.completion.config.tree import ContextConfig, PrivacyConfig  # noqa: E402
from tandem.completion.workspace import WorkspaceIndex  # noqa: E402

STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"])
MODULES = ("_pydecimal.py", "typing.py", "argparse.py", "inspect.py", "pathlib.py", "subprocess.py", "tarfile.py")
TARGET_BYTES = 1_000_000


def document_text() -> str:
    parts: list[str] = []
    size = 0
    while size < TARGET_BYTES:
        for name in MODULES:
            text = (STDLIB / name).read_text(encoding="utf-8")
            parts.append(text)
            size += len(text.encode("utf-8"))
            if size >= TARGET_BYTES:
                break
    return "".join(parts)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(values_s: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values_s]
    return {
        "p50_ms": round(statistics.median(ms), 4),
        "p99_ms": round(percentile(ms, 0.99), 4),
        "mean_ms": round(statistics.fmean(ms), 4),
    }


async def run(keystrokes: int) -> dict[str, Any]:
    text = document_text()
    index = WorkspaceIndex(root=None, context=ContextConfig(scan_workspace=False), privacy=PrivacyConfig())
    uri = "file:///bench/document.py"
    buffer = LineBuffer(text)
    index.open(uri, buffer)
    long_uri = "file:///bench/minified.js"
    long_buffer = LineBuffer("var a=" + "1+" * 50_000 + "1;\n")
    index.open(long_uri, long_buffer)
    line = buffer.line_count // 2
    column = 0
    times: dict[str, list[float]] = {"incremental": [], "whole": [], "long line": []}
    gc.disable()
    try:
        for i in range(keystrokes):
            char = "abcdefghij"[i % 10]
            edit = buffer.replace((line, column), (line, column), char)
            started = time.perf_counter()
            index.change(uri, edit)
            times["incremental"].append(time.perf_counter() - started)
            column += 1

            started = time.perf_counter()
            index.open(uri, buffer)
            times["whole"].append(time.perf_counter() - started)

            long_edit = long_buffer.replace((0, 6), (0, 6), char)
            started = time.perf_counter()
            index.change(long_uri, long_edit)
            times["long line"].append(time.perf_counter() - started)
    finally:
        gc.enable()
    key = " = 'AKIA" + "IOSFODNN7EXAMPLE'"
    index.change(uri, buffer.replace((line, column), (line, column), key))
    refused = index.verdict(uri)
    for open_uri in (uri, long_uri):
        index.close(open_uri)
    return {
        "document_bytes": len(text.encode("utf-8")),
        "document_lines": buffer.line_count,
        "keystrokes": keystrokes,
        **{name: summary(values) for name, values in times.items()},
        "ratio_whole_over_incremental_p50": round(
            statistics.median(times["whole"]) / statistics.median(times["incremental"]), 1
        ),
        "pasted_key_refused": not refused,
        "refusal": refused.reason,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keystrokes", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(run(args.keystrokes))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(
        f"credential check per keystroke, {result['document_bytes'] / 1e6:.2f} MB document "
        f"({result['document_lines']} lines), {result['keystrokes']} keystrokes (no model involved)"
    )
    for name in ("incremental", "whole", "long line"):
        row = result[name]
        print(f"  {name:<12} p50 {row['p50_ms']:.4f} ms   p99 {row['p99_ms']:.4f} ms   mean {row['mean_ms']:.4f} ms")
    print(f"  whole / incremental (p50): {result['ratio_whole_over_incremental_p50']}x")
    print(f"  a pasted AWS key id refused the document: {result['pasted_key_refused']} ({result['refusal']})")


if __name__ == "__main__":
    main()
