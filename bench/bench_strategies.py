"""Strategies side by side on replayed typing over real source files (issue 3), in the same run.

    none          no cache, no prefetch, fixed 350 ms debounce (x time scale, like every clock here)
    forward       forward cache only: typed-through reuse of live and finished completions, no prefetch
    speculate     speculate-on-shown only: exact-anchor reuse, prefetch after shown/accepted
    tandem        the defaults: typed-through reuse, prefetch, adaptive debounce

(The prefetch budget, 20,000 tokens per minute by default, is divided by the time scale like every clock.)

Every strategy types the same spans (a seeded sample of the standard library's files and of this
repository's own) with the same typist rhythm, against its own simulator with identical settings and seed
(a fresh prompt cache each). The spans are split into rounds; each round runs every strategy, in an order
rotated round by round, so load from other users of the machine falls on all of them alike.

Figures per strategy:

    answered without model wait  inline requests answered (shown or empty) from output that already existed
                                 (a stream or the completion cache) without waiting for any, over all inline
                                 requests (trace; `tandem replay`'s definition); "shown-nw" counts only the
                                 answers that showed a suggestion
    latency p50/p95              client side, request sent -> response, over answered requests
    keystrokes saved             1 - key presses made / key presses the text takes unassisted
    tokens out / accepted char   output tokens the simulator sent (every stream: requests, withdrawn ones,
                                 prefetch) per accepted character

It prints what it measured; it passes or fails nothing. All model output is simulated.

    python bench/bench_strategies.py [--stdlib-sessions N] [--repo-sessions N] [--rounds R] [--seed S]
                                     [--time-scale X] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import pathlib
import sys
import tempfile
from typing import Any

from replay_kit import Totals, load_average, pick_tasks, run_once, scaled_sim, sim_label

from tandem.completion.config.tree import PrefetchConfig
from tandem.eval.edit_cost import prices_line

STRATEGIES: dict[str, dict[str, Any]] = {
    "none": {
        "cache": {"reuse": "off"},
        "prefetch": {"enabled": False},
        "completion": {"debounce": "fixed", "debounce_ms": 350},
    },
    "forward": {"cache": {"reuse": "typed-through"}, "prefetch": {"enabled": False}},
    "speculate": {"cache": {"reuse": "exact"}, "prefetch": {"enabled": True}},
    "tandem": {},
}
NO_PREFETCH_BASELINE = "forward"


def strategy_settings(name: str, time_scale: float) -> dict[str, Any]:
    """The strategy's initializationOptions, with its clocks scaled like the typist's pauses (as the replay
    scales the default debounce): a fixed debounce is multiplied by the time scale, and the prefetch budget
    per (real) minute divided by it, so a replay at time scale 0.5 gets the prefetches a real minute of
    typing would."""
    settings: dict[str, Any] = json.loads(json.dumps(STRATEGIES[name]))
    completion = settings.get("completion", {})
    if "debounce_ms" in completion:
        completion["debounce_ms"] = round(completion["debounce_ms"] * time_scale)
    prefetch = settings.setdefault("prefetch", {})
    if prefetch.get("enabled", True):
        prefetch["tokens_per_minute"] = round(PrefetchConfig().tokens_per_minute / time_scale)
    return settings


async def run(args: argparse.Namespace) -> dict[str, Any]:
    tasks = pick_tasks(stdlib_sessions=args.stdlib_sessions, repo_sessions=args.repo_sessions, seed=args.seed)
    rounds = [tasks[i :: args.rounds] for i in range(args.rounds)]
    names = [name for name in STRATEGIES if name in args.only.split(",")] if args.only else list(STRATEGIES)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="tandem-bench-strategies-") as tmp:
        workdir = pathlib.Path(args.trace_dir) if args.trace_dir else pathlib.Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        sims = {
            name: scaled_sim(
                [t.path for t in tasks],
                profile=args.profile,
                time_scale=args.time_scale,
                error_rate=args.error_rate,
                seed=args.seed,
            )
            for name in names
        }
        totals = {name: Totals(name=name, settings=strategy_settings(name, args.time_scale)) for name in names}
        try:
            for index, round_tasks in enumerate(rounds):
                order = names[index % len(names) :] + names[: index % len(names)]
                for name in order:
                    print(f"round {index + 1}/{len(rounds)}: {name} ({len(round_tasks)} spans)", file=sys.stderr)
                    await run_once(
                        totals[name],
                        round_tasks,
                        sims[name],
                        time_scale=args.time_scale,
                        seed=args.seed,
                        trace_path=workdir / f"trace-{name}.jsonl",
                        settings=totals[name].settings,
                    )
        finally:
            for sim in sims.values():
                await asyncio.to_thread(sim.stop)
        figures = [totals[name].figures() for name in names]
        notes = sorted({note for name in names for note in totals[name].notes})
    baseline = next((f for f in figures if f["strategy"] == NO_PREFETCH_BASELINE), {})
    for f in figures:
        base = baseline.get("tokens_out_per_accepted_char")
        mine = f["tokens_out_per_accepted_char"]
        f["tokens_per_accepted_char_vs_no_prefetch"] = round(mine / base, 3) if mine is not None and base else None
    return {
        "provider": sim_label(args.profile, time_scale=args.time_scale, error_rate=args.error_rate),
        "files": sorted({str(t.path) for t in tasks}),
        "spans": len(tasks),
        "span_chars": sum(len(t.span) for t in tasks),
        "seed": args.seed,
        "rounds": args.rounds,
        "time_scale": args.time_scale,
        "typist_chars_per_s": 6.0,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "strategies": figures,
        "notes": notes,
        "trace_dir": str(workdir) if args.trace_dir else "(temporary; pass --trace-dir to keep the traces)",
    }


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_table(results: dict[str, Any]) -> None:
    print(f"provider: {results['provider']}")
    print(
        f"spans: {results['spans']} ({results['span_chars']} characters) from {len(results['files'])} files, seed "
        f"{results['seed']}, {results['rounds']} rounds, typist {results['typist_chars_per_s']:g} chars/s, time scale "
        f"{results['time_scale']:g} (latencies below are as measured, in scaled time)"
    )
    print(f"load average (1/5/15 min): before {results['load_average_before']}, after {results['load_average_after']}")
    header = (
        f"{'strategy':<10} {'no-wait':>8} {'shown-nw':>8} {'p50 ms':>8} {'p95 ms':>8} {'saved':>7} {'tok/acc':>8} "
        f"{'vs fwd':>7} {'requests':>8} {'withdrawn':>9} {'shown':>6} {'accepted':>8} {'tok out':>8} {'prefetch':>8} "
        f"{'cost $':>8} {'$/1k acc':>8}"
    )
    print(header)
    print("-" * len(header))
    for f in results["strategies"]:
        latency = f["latency_ms"]
        print(
            f"{f['strategy']:<10} {_pct(f['answered_without_model_wait']):>8} "
            f"{_pct(f['shown_without_model_wait']):>8} {_num(latency['p50']):>8} "
            f"{_num(latency['p95']):>8} {_pct(f['keystrokes_saved']):>7} {_num(f['tokens_out_per_accepted_char']):>8} "
            f"{_num(f['tokens_per_accepted_char_vs_no_prefetch']):>7} {f['requests']:>8} {f['withdrawn']:>9} "
            f"{f['shown']:>6} {f['accepted']:>8} {f['tokens_out_provider']:>8} {f['prefetch_streams']:>8} "
            f"{f['cost_usd']:>8.4f} {_num(f['usd_per_1000_accepted_chars'], 4):>8}"
        )
    print(
        "no-wait: answered (shown or empty) without waiting for a model, as `tandem replay` counts it; shown-nw: "
        "the same, counting only answers that showed a suggestion; saved: keystrokes saved; tok/acc: output tokens "
        "the simulator sent per accepted character; vs fwd: that ratio over the forward-cache-only strategy's "
        "(no prefetch); prefetch: prefetch streams started; cost $ and $/1k acc: every prompt and answer token the "
        f"simulator counted, in all and per 1,000 accepted characters, at {prices_line()}"
    )
    print("settings (initializationOptions merged over the replay's own):")
    for f in results["strategies"]:
        print(f"    {f['strategy']:<10} {json.dumps(f['settings'], sort_keys=True)}")
    print("where inline answers came from (source/outcome[/waited]):")
    for f in results["strategies"]:
        print(f"    {f['strategy']:<10} {json.dumps(f['inline_sources'])}")
    for note in results["notes"]:
        print(f"note: {note}")
    print(f"traces: {results['trace_dir']}")
    print("all model output above came from a simulated provider (tandem sim), not a real model")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stdlib-sessions", type=int, default=8, help="spans from the standard library (default 8)")
    parser.add_argument("--repo-sessions", type=int, default=8, help="spans from this repository (default 8)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds the spans are split into (default 2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-scale", type=float, default=0.5, help="typist and simulator clock (default 0.5)")
    parser.add_argument("--profile", default="spark", choices=("spark", "codex"))
    parser.add_argument("--error-rate", type=float, default=0.1)
    parser.add_argument("--trace-dir", default="", help="keep each strategy's trace file here")
    parser.add_argument("--only", default="", help="run only these strategies (comma-separated names)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.getLogger("pygls").setLevel(logging.ERROR)
    results = asyncio.run(run(args))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_table(results)


if __name__ == "__main__":
    main()
