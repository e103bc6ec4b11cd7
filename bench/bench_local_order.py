"""How to ask a local llama-server for a completion: four prompt shapes, the same typing, the same server.

    python bench/bench_local_order.py --base-url http://127.0.0.1:8012 [--spans 4] [--json]

For each of `--spans` spans of the standard library (the replay's sample, seed 0), the span is removed and
typed back a few characters at a time; at each step every shape is asked for the rest of the line
(`n_predict` 24, greedy, the prompt cache on), one request at a time:

- `psm`: the model's FIM template, cursor at the end of the prefix (<fim_prefix>before<fim_suffix>after
  <fim_middle>): the usual split; every key changes the prefix, so the suffix is read again;
- `spm`: the same tokens in suffix-prefix-middle order: a key only appends, but the model was trained on
  the other order;
- `anchored`: what tandem sends with `local = true` (`completion.inline.local_prompt`): the split at an
  anchor line, the typed text as the middle's beginning: a key only appends, in the trained order;
- `infill`: llama.cpp's own `/infill` with `input_prefix` up to the anchor, `input_suffix`, and `prompt` =
  the middle's beginning (llama.vim's way), the server applying the template.

Printed per shape: time to the answer p50/p95 (server's `timings`: prompt read + generation), prompt tokens
read per request (not served by the cache), and how often the answer's first line equals the rest of the
true line (exact, after stripping whitespace). The first request of each span (a cold prompt) is left out
of the times. Real model output; nothing is simulated.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import httpx

from tandem.cache.lines import LineBuffer
from tandem.completion.inline.local_prompt import local_window
from tandem.completion.providers.backends.fim_templates import TEMPLATES
from tandem.eval.replay.sources import make_tasks, sample_files

SHAPES = ("psm", "spm", "anchored", "infill")
STEP_CHARS = 6
T = TEMPLATES["qwen2.5-coder"]


def _prompt(shape: str, before: str, after: str, prefix: str, middle: str) -> dict[str, object]:
    common: dict[str, object] = {"n_predict": 24, "temperature": 0, "cache_prompt": True, "stop": ["\n", *T.stop]}
    if shape == "psm":
        return {**common, "prompt": f"{T.prefix}{before}{T.suffix}{after}{T.middle}"}
    if shape == "spm":
        return {**common, "prompt": f"{T.suffix}{after}{T.prefix}{before}{T.middle}"}
    if shape == "anchored":
        return {**common, "prompt": f"{T.prefix}{prefix}{T.suffix}{after}{T.middle}{middle}"}
    return {**common, "input_prefix": prefix, "input_suffix": after, "prompt": middle, "input_extra": []}


def run(base_url: str, spans: int) -> dict[str, dict[str, object]]:
    tasks = make_tasks(sample_files(spans, seed=0), spans, seed=0)
    results: dict[str, dict[str, list[float]]] = {s: {"ms": [], "read": [], "exact": []} for s in SHAPES}
    with httpx.Client(timeout=600) as client:
        for shape in SHAPES:
            for task in tasks:
                text, start = task.opened_text, task.start
                for typed in range(0, len(task.span), STEP_CHARS):
                    doc = text[:start] + task.span[:typed] + text[start:]
                    cursor = start + typed
                    before, after = doc[:cursor], doc[cursor:]
                    line = before.count("\n")
                    character = cursor - (before.rfind("\n") + 1)
                    window = local_window(
                        LineBuffer(doc), line, character, max_prefix_chars=6000, max_suffix_chars=2000
                    )
                    body = _prompt(shape, before[-6000:], after[:2000], window.prefix, window.middle)
                    path = "/infill" if shape == "infill" else "/completion"
                    started = time.perf_counter()
                    answer = client.post(base_url.rstrip("/") + path, json=body).json()
                    elapsed_ms = (time.perf_counter() - started) * 1000
                    rest = (task.span[typed:] + text[start:]).split("\n", 1)[0].strip()
                    got = str(answer.get("content", "")).split("\n", 1)[0].strip()
                    if typed > 0:  # the first request of a span reads its whole prompt
                        results[shape]["ms"].append(elapsed_ms)
                        results[shape]["read"].append(float(answer.get("timings", {}).get("prompt_n", 0)))
                    results[shape]["exact"].append(1.0 if got and got == rest else 0.0)
    summary: dict[str, dict[str, object]] = {}
    for shape, r in results.items():
        ms = sorted(r["ms"])
        summary[shape] = {
            "requests": len(r["exact"]),
            "ms_p50": round(statistics.median(ms), 1) if ms else None,
            "ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 1) if ms else None,
            "prompt_tokens_read_mean": round(statistics.mean(r["read"]), 1) if r["read"] else None,
            "rest_of_line_exact": round(statistics.mean(r["exact"]), 3) if r["exact"] else None,
        }
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8012", help="llama-server's root URL")
    parser.add_argument("--spans", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    summary = run(args.base_url, args.spans)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"real model at {args.base_url} (not simulated); {args.spans} spans of the standard library, seed 0")
    for shape, row in summary.items():
        print(
            f"  {shape:9s} {row['requests']:4d} requests  answer p50 {row['ms_p50']} ms, p95 {row['ms_p95']} ms  "
            f"prompt tokens read {row['prompt_tokens_read_mean']}  rest of line exact {row['rest_of_line_exact']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
