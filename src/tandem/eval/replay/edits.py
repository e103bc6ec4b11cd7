"""`tandem replay --edits --repo PATH [--limit N] [--json]`: the router on a real git history.

`--repo A --repo B --repo C --leave-one-out`: the router's weights fitted on all histories but one and
judged on the one left out, for each in turn (`eval.router_loo`), beside the router before its weights
were fitted; then, unless `--router-only`, part 2 on each history (up to `--sim-limit` tasks) with the
router fitted without it the way the shipped weights are fitted (on a user's selection:
`router_loo.weights_by_held_out`), routing and editing a user's selection.

Two parts, printed one after the other (or as one JSON object):

1. How well the router's pre-generation features predict each commit's true size and span
   (`eval.router_eval`: ROC AUC for "hard", precision and recall at the configured thresholds).
   Real figures: nothing is simulated here.
2. Time to a correct edit and correct edits per hour, router vs fast-first vs always-fast vs
   always-accurate, through the real edit path against two simulators started here on loopback
   (`eval.edit_eval`), a user's selection routed and edited (the block enclosing the changed code).
   Simulated figures, and labelled so. `--router-only` skips this part.

`--time-scale X` runs the simulators 1/X times faster than their profiles (default 0.25: 4x) and scales
the measured times back.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from tandem.completion.routing.weights import DEFAULT_MODEL, RouterModel
from tandem.eval.edit_eval import (
    STRATEGIES,
    EditEvalResult,
    Models,
    evaluate_edits,
    rescored,
    shipped_band,
    with_banded,
)
from tandem.eval.edit_hedging import choose_band
from tandem.eval.edit_report import render_text as render_edits
from tandem.eval.edit_report import result_json as edits_json
from tandem.eval.history import GitError
from tandem.eval.router_eval import evaluate_repo, render_text, result_json
from tandem.eval.router_loo import evaluate_leave_one_out, weights_by_held_out
from tandem.eval.router_loo import render_text as render_loo
from tandem.eval.router_loo import result_json as loo_json
from tandem.sim.runner import SimHandle, SimSettings, start_in_thread
from tandem.sim.settings import PROFILES


def add_edit_arguments(parser: argparse.ArgumentParser) -> None:
    """The options `--edits` adds to `tandem replay`."""
    parser.add_argument(
        "--edits", action="store_true", help="evaluate the router and the edit path on a git history (with --repo)"
    )
    parser.add_argument(
        "--repo",
        type=Path,
        metavar="PATH",
        action="append",
        help="a git repository whose history to replay (several with --leave-one-out)",
    )
    parser.add_argument(
        "--leave-one-out",
        action="store_true",
        help="fit the router on all --repo histories but one, judge it on that one, for each",
    )
    parser.add_argument(
        "--simulate-on",
        metavar="NAME",
        action="append",
        help="with --leave-one-out: run the simulated part only on these histories (by directory name)",
    )
    parser.add_argument(
        "--sim-limit",
        type=int,
        metavar="N",
        help="with --leave-one-out: simulated edit tasks per history (default --limit)",
    )
    parser.add_argument("--limit", type=int, default=50, metavar="N", help="edit tasks (commits) to use (default 50)")
    parser.add_argument(
        "--router-only", action="store_true", help="only the router's prediction figures (no simulated edits)"
    )


def _sim(profile: str, *, speedup: float, seed: int) -> SimSettings:
    base = PROFILES[profile]
    return SimSettings(
        profile=profile, tokens_per_s=base.tokens_per_s * speedup, ttft_ms=base.ttft_ms / speedup, seed=seed
    )


def _progress(done: int, total: int) -> None:
    if sys.stderr.isatty():
        sys.stderr.write(f"\r  task {done + 1}/{total}")
    elif done % 10 == 0:
        sys.stderr.write(f"  task {done + 1}/{total}\n")
    sys.stderr.flush()


def run_edits(args: argparse.Namespace) -> int:
    """`tandem replay --edits`: returns the exit status; errors the user can fix are one line on stderr."""
    repos: list[Path] = args.repo or []
    if not repos:
        sys.stderr.write("tandem replay: error: --edits needs --repo PATH (a git repository)\n")
        return 1
    if args.limit < 1 or (args.sim_limit is not None and args.sim_limit < 1):
        sys.stderr.write("tandem replay: error: --limit and --sim-limit must be at least 1\n")
        return 1
    if args.leave_one_out:
        if len(repos) < 2:
            sys.stderr.write("tandem replay: error: --leave-one-out needs at least two --repo histories\n")
            return 1
        return _run_leave_one_out(args, repos)
    if len(repos) > 1:
        sys.stderr.write("tandem replay: error: several --repo histories need --leave-one-out\n")
        return 1
    repo = repos[0]
    try:
        router = evaluate_repo(repo, limit=args.limit)
    except GitError as error:
        sys.stderr.write(f"tandem replay: error: {repo}: {error}\n")
        return 1
    edits: EditEvalResult | None = None
    if not args.router_only:
        edits = with_banded(
            _simulate(args, repo, args.limit, DEFAULT_MODEL), shipped_band(), "the shipped [edit] defaults"
        )
    if args.json:
        data = {"router": result_json(router), "edits": edits_json(edits) if edits is not None else None}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        sys.stdout.write(render_text(router) + "\n")
        if edits is not None:
            sys.stdout.write("\n" + render_edits(edits) + "\n")
    return 0


def _run_leave_one_out(args: argparse.Namespace, repos: list[Path]) -> int:
    def say(line: str) -> None:
        if not args.json:
            sys.stderr.write(f"tandem replay: {line}\n")

    try:
        loo = evaluate_leave_one_out(repos, limit=args.limit, progress=say)
    except GitError as error:
        sys.stderr.write(f"tandem replay: error: {error}\n")
        return 1
    simulated: dict[str, EditEvalResult] = {}
    if not args.router_only:
        held_out = weights_by_held_out(loo)
        if not args.json:
            sys.stdout.write(render_loo(loo) + "\n")
            sys.stdout.flush()
        for name, repo in zip(loo.repos, repos, strict=True):
            if args.simulate_on and name not in args.simulate_on:
                continue
            say(f"simulated edits on {name}, the router fitted without it")
            simulated[name] = _simulate(args, repo, args.sim_limit or args.limit, held_out[name])
        simulated = {
            name: with_banded(result, loo.label_bands[name].band, loo.label_bands[name].describe())
            for name, result in simulated.items()
        }
        if not args.json:
            for name, result in simulated.items():
                sys.stdout.write(f"\nheld out: {name} (the router fitted on the other histories, by selection shape)\n")
                sys.stdout.write(render_edits(result) + "\n")
            sys.stdout.write(_band_on_all(simulated) + "\n")
            sys.stdout.flush()
    if loo.label_band_all is not None and not args.json:
        all_band = loo.label_band_all
        sys.stdout.write(
            f"\n[edit] bands from real labels on every history (what the defaults are set from): hedge_from = "
            f"{all_band.band.hedge_from:g}, accurate_from = {all_band.band.accurate_from:g}; {all_band.describe()}\n"
        )
    if args.json:
        data = {"leave_one_out": loo_json(loo), "edits": {name: edits_json(e) for name, e in simulated.items()}}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    elif args.router_only:
        sys.stdout.write(render_loo(loo) + "\n")
    return 0


def _band_on_all(simulated: Mapping[str, EditEvalResult]) -> str:
    """The edges chosen on every simulated history at once, under the shipped router's weights (what a
    default would be set from; in-sample on each of them)."""
    if not simulated:
        return ""
    scored = [pair for result in simulated.values() for pair in rescored(result.runs, DEFAULT_MODEL)]
    if not scored:
        return ""
    speed = next(iter(simulated.values())).accurate_speed
    choice = choose_band(scored, speed)
    return (
        f"\nfor comparison, not what ships: router-banded edges chosen on the simulator's runs of all histories "
        f"({', '.join(simulated)}; {choice.tasks} tasks, "
        f"the shipped router's weights; in-sample): hedge from score {choice.band.hedge_from:g}, accurate alone "
        f"from {choice.band.accurate_from:g}: {choice.correct} correct, {choice.wait_s:.1f} s wait, "
        f"{choice.correct_per_hour:.0f} correct/h, {choice.tokens} tokens"
    )


def _simulate(args: argparse.Namespace, repo: Path, limit: int, weights: RouterModel) -> EditEvalResult:
    """Part 2 on `repo`: the strategies through the edit path against two simulators started here."""
    speedup = 1.0 / args.time_scale
    if not args.json:
        sys.stderr.write(
            f"tandem replay: running up to {limit} edit tasks x {len(STRATEGIES)} strategies against two "
            f"simulators ({speedup:g}x their real speed)\n"
        )
    with (
        start_in_thread(_sim("spark", speedup=speedup, seed=args.seed)) as fast,
        start_in_thread(_sim("codex", speedup=speedup, seed=args.seed)) as accurate,
    ):
        handles: Mapping[str, SimHandle] = {fast.base_url: fast, accurate.base_url: accurate}

        def set_truth(base_url: str, files: Mapping[str, str]) -> None:
            handles[base_url].set_edit_truth(files)

        models = Models(
            fast_url=fast.base_url,
            accurate_url=accurate.base_url,
            time_scale=speedup,
            fast_speed=(PROFILES["spark"].ttft_ms, PROFILES["spark"].tokens_per_s),
            accurate_speed=(PROFILES["codex"].ttft_ms, PROFILES["codex"].tokens_per_s),
        )
        edits = asyncio.run(
            evaluate_edits(
                repo,
                models,
                set_truth=set_truth,
                limit=limit,
                trace_path=args.trace,
                progress=None if args.json else _progress,
                weights=weights,
            )
        )
        if not args.json:
            sys.stderr.write("\n" if sys.stderr.isatty() else "")
    return edits
