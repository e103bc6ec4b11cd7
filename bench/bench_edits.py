"""The edit path's own cost, and whether a block completion's "fast draft + accurate upgrade" pays off.

1. Edit path overhead (real): `EditFlow.run` on one-function edits of real standard-library modules against
   a simulator with the `instant` profile (no model time at all), so what is left is tandem's own work:
   routing, prompt, HTTP + SSE of the answer, parse, validate, rebase. Beside it, the two steps the LSP
   handler runs in a worker thread before routing: the symbol lookup's one pass over an indexed workspace
   (the standard library, ~1,000 files) and the working diff (`git diff HEAD` on this repository).
2. Block draft + upgrade (SIMULATED): for block completions (4 lines) of real standard-library code, the
   time until the block is complete from a spark simulator (fast) and a codex simulator (accurate) at their
   real profile speeds, measured through the real backend; the chance each is wrong from the simulator's
   completion error model (`completion_mistake_probability`, 10% base rate). The upgrade helps only if it
   arrives before the user has accepted or dismissed the draft; the net gain in right blocks is
   P(upgrade in time) x (P(fast wrong) - P(accurate wrong)), its cost an accurate call per block.

Prints what it measured; passes or fails nothing.

    python bench/bench_edits.py [--edits N] [--blocks N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import random
import re
import statistics
import sysconfig
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

import httpx  # noqa: E402

from tandem.cache.symbols import SymbolIndex  # noqa: E402
from tandem.completion.config.tree import Config, EditConfig, ModelConfig, ModelsConfig  # noqa: E402
from tandem.completion.edit.flow import EditFlow, EditInputs, EditRequest  # noqa: E402
from tandem.completion.inline.answer import AnswerCleaner  # noqa: E402
from tandem.completion.inline.prompts import completion_request  # noqa: E402
from tandem.completion.observe.trace import Tracer  # noqa: E402
from tandem.completion.providers.backends.base import StreamStats  # noqa: E402
from tandem.completion.providers.backends.openai_chat import OpenAIChatBackend  # noqa: E402
from tandem.completion.providers.tiers import Tiers  # noqa: E402
from tandem.completion.routing.working_diff import working_diff  # noqa: E402
from tandem.completion.routing.workspace_symbols import IndexLookup, candidate_names  # noqa: E402
from tandem.sim.error_model import completion_mistake_probability  # noqa: E402
from tandem.sim.runner import SimSettings, start_in_thread  # noqa: E402

STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"])
MODULES = ("textwrap.py", "shlex.py", "fractions.py", "difflib.py", "csv.py", "calendar.py", "pprint.py", "ast.py")
_FUNCTION = re.compile(r"^    def (\w+)\(self[^)]*\):\n((?:        .*\n|\n)+)", re.MULTILINE)
BLOCK_LINES = 4
DECISION_S = (0.5, 1.0, 2.0, 4.0)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def functions(limit: int) -> list[tuple[str, str, int, int, str]]:
    """(path, text, start, end, after) for methods of real modules: the edit adds a comment line on top."""
    found: list[tuple[str, str, int, int, str]] = []
    for name in MODULES:
        text = (STDLIB / name).read_text()
        for match in _FUNCTION.finditer(text):
            start, end = match.start(2), match.end(2)
            after = text[:start] + f"        # {match.group(1)}: reviewed\n" + text[start:]
            found.append((name, text, start, end, after))
    random.Random(0).shuffle(found)
    return found[:limit]


def _fixed(texts: dict[str, str]) -> Callable[[Collection[str]], Mapping[str, str]]:
    return lambda paths: texts


def stdlib_index() -> SymbolIndex:
    index = SymbolIndex()
    for file in STDLIB.rglob("*.py"):
        if "test" not in file.parts and "site-packages" not in file.parts:
            try:
                index.update(file.relative_to(STDLIB).as_posix(), file.read_text())
            except (UnicodeDecodeError, OSError):
                continue
    return index


async def edit_overhead(count: int) -> dict[str, Any]:
    samples: list[tuple[str, str, int, int, str]] = functions(count)
    with start_in_thread(SimSettings(profile="instant")) as sim:
        config = Config(
            models=ModelsConfig(fast=ModelConfig(base_url=sim.base_url, model="sim-instant")), edit=EditConfig()
        )
        async with httpx.AsyncClient() as client:
            tiers = Tiers(client, {})
            tiers.configure(config.models)
            flow = EditFlow(models=tiers, tracer=Tracer(None), config=config)
            run_ms: list[float] = []
            before_ms: list[float] = []
            model_ms: list[float] = []
            after_ms: list[float] = []
            ok = 0
            for path, text, start, end, after in samples:
                sim.set_edit_truth({path: after}, errors="off")
                inputs = EditInputs(current_texts=_fixed({path: text}))
                request = EditRequest(path=path, text=text, start=start, end=end, instruction="add a review note")
                began_ns = time.perf_counter_ns()
                outcome = await flow.run(request, inputs)
                ended_ns = time.perf_counter_ns()
                run_ms.append((ended_ns - began_ns) / 1e6)
                marks = outcome.record.marks_ns if outcome.record is not None else {}
                if {"context_built", "request_sent", "answered"} <= set(marks):
                    before_ms.append((marks["context_built"] - began_ns) / 1e6)
                    model_ms.append((marks["answered"] - marks["request_sent"]) / 1e6)
                    after_ms.append((ended_ns - marks["answered"]) / 1e6)
                ok += outcome.ok
    index = stdlib_index()
    _, text, start, end, _ = samples[0]
    began = time.perf_counter()
    lookup = IndexLookup(index)
    lookup.prepare(candidate_names(text[start:end], "rename the helper everywhere", index))
    lookup_ms = (time.perf_counter() - began) * 1000
    began = time.perf_counter()
    diff = working_diff(ROOT, {})
    diff_ms = (time.perf_counter() - began) * 1000
    return {
        "edits": len(run_ms),
        "applied": ok,
        "run_ms_p50": round(statistics.median(run_ms), 2),
        "run_ms_p99": round(percentile(run_ms, 0.99), 2),
        # Route + context + prompt; the model call (HTTP, and the simulator composing its answer); parse +
        # validate + rebase.
        "route_and_prompt_ms_p50": round(statistics.median(before_ms), 2),
        "model_call_ms_p50": round(statistics.median(model_ms), 2),
        "check_ms_p50": round(statistics.median(after_ms), 2),
        "symbol_lookup_files": lookup.file_count(),
        "symbol_lookup_ms": round(lookup_ms, 1),
        "working_diff_ms": round(diff_ms, 1),
        "working_diff_lines": diff.lines,
    }


def block_positions(count: int) -> list[tuple[str, str, str]]:
    """(path, prefix, suffix) at the start of a 4-line stretch inside a function body of real modules."""
    rng = random.Random(1)
    positions: list[tuple[str, str, str]] = []
    for name in MODULES:
        text = (STDLIB / name).read_text()
        lines = text.splitlines(keepends=True)
        starts = [i for i in range(1, len(lines) - BLOCK_LINES) if lines[i].startswith("        ") and lines[i].strip()]
        for i in rng.sample(starts, min(4, len(starts))):
            cut = sum(len(line) for line in lines[:i])
            positions.append((str(STDLIB / name), text[:cut], text[cut:]))
    rng.shuffle(positions)
    return positions[:count]


async def block_ready_s(backend: OpenAIChatBackend, path: str, prefix: str, suffix: str) -> float:
    config = ModelConfig(max_tokens=160)
    request = completion_request(config, prefix=prefix, suffix=suffix, path=path, language="python")
    cleaner = AnswerCleaner()  # a conversation's answer, read as the completion reads it
    began = time.perf_counter()
    text = ""
    async for chunk in backend.stream(request, StreamStats()):
        text += cleaner.feed(chunk)
        if text.count("\n") >= BLOCK_LINES:
            break
    return time.perf_counter() - began


async def draft_and_upgrade(count: int) -> dict[str, Any]:
    positions = block_positions(count)
    truth = tuple(sorted({p for p, _, _ in positions}))
    with (
        start_in_thread(SimSettings(profile="spark", truth=truth)) as spark,
        start_in_thread(SimSettings(profile="codex", truth=truth)) as codex,
    ):
        async with httpx.AsyncClient(timeout=60) as client:
            fast = OpenAIChatBackend(ModelConfig(base_url=spark.base_url), client, env={})
            accurate = OpenAIChatBackend(ModelConfig(base_url=codex.base_url), client, env={})
            fast_s = [await block_ready_s(fast, *p) for p in positions]
            accurate_s = list(await asyncio.gather(*(block_ready_s(accurate, *p) for p in positions)))
    p_fast = completion_mistake_probability(0.1, answer_lines=BLOCK_LINES, tier="fast")
    p_accurate = completion_mistake_probability(0.1, answer_lines=BLOCK_LINES, tier="accurate")
    lead_s = [a - f for f, a in zip(fast_s, accurate_s, strict=True)]
    in_time = {f"{d:g}s": sum(1 for lag in lead_s if lag <= d) / len(lead_s) for d in DECISION_S}
    return {
        "simulated": True,
        "blocks": len(positions),
        "block_lines": BLOCK_LINES,
        "fast_ready_s_p50": round(statistics.median(fast_s), 3),
        "accurate_ready_s_p50": round(statistics.median(accurate_s), 3),
        "upgrade_lag_s_p50": round(statistics.median(lead_s), 3),
        "p_wrong_fast": round(p_fast, 3),
        "p_wrong_accurate": round(p_accurate, 3),
        # Right blocks gained per 100 drafts shown, if the user decides this long after the draft appears.
        "gain_per_100_drafts": {k: round(100 * v * (p_fast - p_accurate), 1) for k, v in in_time.items()},
        "upgrade_in_time": {k: round(v, 2) for k, v in in_time.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=40)
    parser.add_argument("--blocks", type=int, default=24)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    overhead = asyncio.run(edit_overhead(args.edits))
    upgrade = asyncio.run(draft_and_upgrade(args.blocks))
    if args.json:
        print(json.dumps({"edit_overhead": overhead, "draft_and_upgrade": upgrade}, indent=2))
        return 0
    print("edit path overhead (instant model: tandem's own work per edit)")
    print(
        f"  EditFlow.run over {overhead['edits']} one-function edits of stdlib modules "
        f"({overhead['applied']} applied): p50 {overhead['run_ms_p50']} ms, p99 {overhead['run_ms_p99']} ms"
    )
    print(
        f"    of which route + prompt p50 {overhead['route_and_prompt_ms_p50']} ms, model call (HTTP + the simulator "
        f"composing its answer) p50 {overhead['model_call_ms_p50']} ms, parse + validate + rebase p50 "
        f"{overhead['check_ms_p50']} ms"
    )
    files, lookup_ms = overhead["symbol_lookup_files"], overhead["symbol_lookup_ms"]
    print(f"  symbol lookup, one pass over {files} indexed files: {lookup_ms} ms")
    print(f"  working diff (git diff HEAD) of this repository: {overhead['working_diff_ms']} ms")
    print("block completion: fast draft + accurate upgrade (SIMULATED: tandem sim, real profile speeds)")
    print(
        f"  {upgrade['blocks']} blocks of {BLOCK_LINES} lines: fast complete at p50 {upgrade['fast_ready_s_p50']} s, "
        f"accurate at p50 {upgrade['accurate_ready_s_p50']} s (lag {upgrade['upgrade_lag_s_p50']} s)"
    )
    print(f"  P(wrong): fast {upgrade['p_wrong_fast']:.1%}, accurate {upgrade['p_wrong_accurate']:.1%}")
    for key, gain in upgrade["gain_per_100_drafts"].items():
        print(
            f"  user decides {key} after the draft: upgrade in time {upgrade['upgrade_in_time'][key]:.0%}, "
            f"+{gain} right blocks per 100 drafts, for 100 accurate calls"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
