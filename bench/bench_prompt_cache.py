"""Provider prompt-cache share: tandem's stable-first context order vs a naive order (issue 3).

Replayed typing over real files, in a real workspace (the server is told its root, so it indexes it and
sends cross-file snippets: imports' outlines, definitions of names near the cursor, open documents, recent
edits), with a large budget (8K tokens by default) so prompts pass the 1,024 tokens a provider needs before
it caches anything. The same spans are typed twice, once per `[context] order`:

    stable-first  snippets first, in a deterministic order; then the file, its prefix starting at a line
                  snapped to a multiple of 16 (tandem's default)
    naive         the file first, its prefix starting wherever the budget says (it slides as the file
                  grows); the snippets after the suffix, in relevance order

The provider is `tandem sim`, whose prompt caching is simulated (`sim/prompt_cache.py`: >= 1,024
tokens, 128-token increments, 5-minute TTL, TTFT x (1 - 0.8 x cached share)): what it reports is what
OpenAI documents, not a measurement of any real provider. Figures per order:

    cached share (usage)     cached_tokens / prompt_tokens summed over the usage tandem received (trace;
                             streams that ended before the provider's usage arrived are left out)
    cached share (provider)  the same over every prompt the simulator saw (streams withdrawn before their
                             usage arrived included)
    TTFT p50                 model request sent -> first token, from tandem's trace (scaled time)
    prefix reuse (tandem)    tandem's own estimate: the share of each window identical to the previous one's
                             start (trace `prefix_reuse`, mean over model requests)

It prints what it measured; it passes or fails nothing.

    python bench/bench_prompt_cache.py [--sessions N] [--budget TOKENS] [--seed S] [--time-scale X] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import pathlib
import random
import sys
import sysconfig
import tempfile
from typing import Any

from replay_kit import ROOT, RootedClient, load_average, provider_counts, repo_files, scaled_sim, sim_label

from tandem.eval.replay.keystrokes import Rhythm
from tandem.eval.replay.session import Tally, type_span
from tandem.eval.replay.sources import Task, make_tasks
from tandem.eval.trace_report import percentile, read_trace

ORDERS = ("stable-first", "naive")
STDLIB = pathlib.Path(sysconfig.get_paths()["stdlib"])
# Time for the server to index the workspace before typing starts (both orders wait the same).
_INDEX_WAIT_S = 3.0


def workspaces(sessions: int, seed: int) -> list[tuple[str, pathlib.Path, list[Task]]]:
    """(name, root, spans): the standard library's asyncio package, and this repository."""
    out = []
    asyncio_files = sorted(p for p in (STDLIB / "asyncio").glob("*.py") if 4_000 <= p.stat().st_size <= 120_000)
    rng = random.Random(f"tandem-bench-prompt-cache:{seed}")
    picked = rng.sample(asyncio_files, min(sessions, len(asyncio_files)))
    out.append(("stdlib asyncio", STDLIB / "asyncio", make_tasks(picked, sessions, seed=seed)))
    picked = rng.sample(repo_files(), sessions)
    out.append(("this repository", ROOT, make_tasks(picked, sessions, seed=seed)))
    return out


def _records(trace: pathlib.Path) -> list[dict[str, Any]]:
    return read_trace(trace).records if trace.exists() else []


async def one_order(
    order: str, root: pathlib.Path, tasks: list[Task], args: argparse.Namespace, workdir: pathlib.Path
) -> dict[str, Any]:
    sim = scaled_sim(
        [t.path for t in tasks], profile="spark", time_scale=args.time_scale, error_rate=0.1, seed=args.seed
    )
    trace = workdir / f"trace-{root.name}-{order}.jsonl"
    env = {**os.environ, "XDG_CONFIG_HOME": str(workdir)}
    client = RootedClient(root=root, trace_path=trace, env=env)
    model = {"provider": "openai-chat", "base_url": sim.base_url, "model": sim.state.model_id, "max_tokens": 96}
    settings = {
        "models": {"fast": model},
        "completion": {"debounce_ms": round(150 * args.time_scale)},
        "context": {"budget_tokens": args.budget, "order": order},
    }
    tally = Tally(planned_chars=sum(len(t.span) for t in tasks))
    try:
        await client.start(settings)
        await asyncio.sleep(_INDEX_WAIT_S)  # sleep-ok: the workspace scan has no completion event
        rhythm = Rhythm(chars_per_s=6.0, time_scale=args.time_scale)
        for index, task in enumerate(tasks):
            rng = random.Random(f"tandem-replay-typist:{args.seed}:{index}")
            await type_span(client, task, rhythm=rhythm, rng=rng, tally=tally)
    finally:
        await client.stop()
        provider = provider_counts(sim)
        await asyncio.to_thread(sim.stop)
    records = _records(trace)
    model_records = [r for r in records if r.get("source") == "model" or r.get("kind") == "prefetch"]
    # Usage the provider reported (a stream stopped early has tandem's own estimate, without cached tokens).
    used = [r for r in model_records if r["tokens"]["in"] and not r["tokens"].get("estimated")]
    tokens_in = sum(r["tokens"]["in"] for r in used)
    cached = sum(r["tokens"]["cached"] for r in used)
    timed = [r["ms"] for r in used if {"first_token", "request_sent"} <= r["ms"].keys()]
    ttft = [ms["first_token"] - ms["request_sent"] for ms in timed]
    reuse = [float(r["prefix_reuse"]) for r in model_records if r.get("context_tokens")]
    context = [int(r["context_tokens"]) for r in model_records if r.get("context_tokens")]
    return {
        "order": order,
        "requests": tally.requests,
        "model_requests_with_usage": len(used),
        "prompt_tokens_usage": tokens_in,
        "cached_tokens_usage": cached,
        "cached_share_usage": round(cached / tokens_in, 4) if tokens_in else None,
        "prompts_provider": provider.prompts,
        "prompt_tokens_provider": provider.prompt_tokens,
        "cached_share_provider": round(provider.cached_tokens / provider.prompt_tokens, 4)
        if provider.prompt_tokens
        else None,
        "ttft_ms_p50": round(percentile(ttft, 0.5), 2) if ttft else None,
        "context_tokens_p50": round(percentile([float(c) for c in context], 0.5)) if context else None,
        "prefix_reuse_mean": round(sum(reuse) / len(reuse), 4) if reuse else None,
        "trace": str(trace),
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "provider": sim_label("spark", time_scale=args.time_scale, error_rate=0.1),
        "budget_tokens": args.budget,
        "seed": args.seed,
        "time_scale": args.time_scale,
        "load_average_before": load_average(),
        "workspaces": [],
    }
    with tempfile.TemporaryDirectory(prefix="tandem-bench-prompt-cache-") as tmp:
        workdir = pathlib.Path(args.trace_dir) if args.trace_dir else pathlib.Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for index, (name, root, tasks) in enumerate(workspaces(args.sessions, args.seed)):
            orders = ORDERS if index % 2 == 0 else ORDERS[::-1]
            rows = []
            for order in orders:
                print(f"{name}: {order} ({len(tasks)} spans)", file=sys.stderr)
                rows.append(await one_order(order, root, tasks, args, workdir))
            rows.sort(key=lambda row: ORDERS.index(row["order"]))
            results["workspaces"].append(
                {"name": name, "root": str(root), "files": sorted({str(t.path) for t in tasks}), "orders": rows}
            )
    results["load_average_after"] = load_average()
    return results


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def print_results(results: dict[str, Any]) -> None:
    print(f"provider: {results['provider']}")
    print(
        f"context budget {results['budget_tokens']} tokens, seed {results['seed']}, time scale "
        f"{results['time_scale']:g}; load average before {results['load_average_before']}, "
        f"after {results['load_average_after']}"
    )
    header = (
        f"{'workspace':<17} {'order':<13} {'cached (usage)':>15} {'cached (provider)':>18} {'TTFT p50 ms':>12} "
        f"{'context p50':>12} {'prefix reuse':>13} {'model requests':>15}"
    )
    print(header)
    print("-" * len(header))
    for ws in results["workspaces"]:
        for row in ws["orders"]:
            ttft = "-" if row["ttft_ms_p50"] is None else f"{row['ttft_ms_p50']:.1f}"
            print(
                f"{ws['name']:<17} {row['order']:<13} {_pct(row['cached_share_usage']):>15} "
                f"{_pct(row['cached_share_provider']):>18} {ttft:>12} {row['context_tokens_p50'] or '-':>12} "
                f"{_pct(row['prefix_reuse_mean']):>13} {row['prompts_provider']:>15}"
            )
    print(
        "cached (usage): share of prompt tokens the provider reported cached in the usage tandem received; "
        "(provider): over every prompt it saw; prefix reuse: tandem's own estimate"
    )
    print("the provider and its prompt caching are simulated (tandem sim), not a real provider")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10, help="spans per workspace (default 10)")
    parser.add_argument("--budget", type=int, default=8192, help="context budget in tokens (default 8192)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-scale", type=float, default=0.5)
    parser.add_argument("--trace-dir", default="", help="keep the trace files here")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.getLogger("pygls").setLevel(logging.ERROR)
    results = asyncio.run(run(args))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print_results(results)


if __name__ == "__main__":
    main()
