"""What other routers would have done on the same edit tasks, derived exactly from the strategies' runs.

`eval.edit_eval` runs every task through each strategy against simulators that draw the same
dice for the same prompt; a router that sends a task fast would meet exactly fast-first's outcome, and
one that sends it accurate exactly always-accurate's. So, from the `TaskRun`s alone:

- `operating_points`: the router at other decision boundaries (`[router] accurate_score`);
- `knowing_hard`: a router whose score were the truth's "hard" label (ROC AUC 1.0);
- `oracle_bound`: the least time to keep a share of always-accurate's correct edits if every answer
  were known before asking (a bound, not a strategy);
- `silent_what_if`: the strategies had some of the fast model's caught mistakes gone unnoticed (how much
  of fast-first's lead rests on the simulator's assumption of how the fast model errs).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tandem.completion.routing.router import RouteFeatures, score_of_pressure
from tandem.eval.edit_hedging import RunFacts

# The target: the router keeps this share of always-accurate's correct edits ...
TARGET_KEEP = 0.95
# ... in at most this share of its time.
TARGET_TIME = 0.5


@dataclass(frozen=True, kw_only=True)
class TaskRun:
    """One task: its truth in numbers and what each strategy did ("correct" | "wrong" | "refused")."""

    commit: str
    instruction: str
    hard: bool
    changed_lines: int
    files: int
    route: str
    # The router's score for the task (`RouteDecision.score`).
    score: float
    results: dict[str, str]
    simulated_s: dict[str, float]
    served_by: dict[str, str]
    # Tokens each strategy spent (prompt plus answer, every attempt).
    tokens: dict[str, int] = field(default_factory=dict)
    # Their price at the replay's list prices (`eval.edit_cost`), USD.
    cost_usd: dict[str, float] = field(default_factory=dict)
    # What the derived strategies (`edit_hedging`) need: fast-first's first attempt and always-accurate's.
    facts: RunFacts | None = None
    # What the router saw, so that other weights can score the task again (`rescored`).
    features: RouteFeatures | None = None


@dataclass(frozen=True, kw_only=True)
class OperatingPoint:
    """The router at one decision boundary: correct edits and time as shares of always-accurate's."""

    accurate_score: float
    # The same boundary as the sum of the router's pressure terms (1.0 is the default).
    pressure: float
    to_accurate: int
    keeps: float | None
    time_share: float | None
    correct_per_hour: float


# Decision boundaries shown, as pressures (1 + log-odds / 3, see `completion.routing.router.route`): the model's
# probability of "hard" at 0.2, 0.3, 0.4, 0.5 (the default), 0.6, 0.7, 0.8.
PRESSURES = (0.538, 0.718, 0.865, 1.0, 1.135, 1.282, 1.462)


def operating_points(
    runs: Sequence[TaskRun], accurate_correct: int, accurate_s: float, pressures: Sequence[float] = PRESSURES
) -> tuple[OperatingPoint, ...]:
    """The router at other boundaries, from the runs themselves: a task scored at or over the boundary
    gets always-accurate's outcome and time, the others fast-first's (what the router does when it
    routes fast). Exact, not estimated: the strategies met the same simulator dice for the same prompt."""
    points: list[OperatingPoint] = []
    for pressure in pressures:
        boundary = score_of_pressure(pressure)
        chosen = ["always-accurate" if run.score >= boundary else "fast-first" for run in runs]
        correct = sum(1 for run, name in zip(runs, chosen, strict=True) if run.results.get(name) == "correct")
        spent = sum(run.simulated_s.get(name, 0.0) for run, name in zip(runs, chosen, strict=True))
        points.append(
            OperatingPoint(
                accurate_score=round(boundary, 6),
                pressure=pressure,
                to_accurate=chosen.count("always-accurate"),
                keeps=correct / accurate_correct if accurate_correct else None,
                time_share=spent / accurate_s if accurate_s else None,
                correct_per_hour=correct / (spent / 3600) if spent else 0.0,
            )
        )
    return tuple(points)


def knowing_hard(runs: Sequence[TaskRun]) -> tuple[int, float]:
    """(correct edits, simulated time) of a router whose score were the truth's "hard" label (ROC AUC
    1.0): always-accurate's outcome on the hard tasks, fast-first's on the others."""
    correct = 0
    spent = 0.0
    for run in runs:
        name = "always-accurate" if run.hard else "fast-first"
        correct += run.results.get(name) == "correct"
        spent += run.simulated_s.get(name, 0.0)
    return correct, spent


def oracle_bound(runs: Sequence[TaskRun], keep: float = TARGET_KEEP) -> float:
    """The least simulated time in which a router that knew each task's outcome on each tier keeps `keep`
    of always-accurate's correct edits: the fast answer where it is right, the accurate one on the
    cheapest of the tasks only it gets right, the fast one (the cheaper) where neither is or where the
    accurate answer is not needed to reach `keep`. Every task always-accurate gets right is right on one
    of the tiers, so `keep` <= 1 is always reached."""
    needed = keep * sum(1 for run in runs if run.results.get("always-accurate") == "correct")
    spent = 0.0
    correct = 0
    # Tasks only the accurate tier gets right: what asking it costs over asking the fast one.
    upgrades: list[float] = []
    for run in runs:
        fast_s = run.simulated_s.get("always-fast", 0.0)
        spent += fast_s
        if run.results.get("always-fast") == "correct":
            correct += 1
        elif run.results.get("always-accurate") == "correct":
            upgrades.append(run.simulated_s.get("always-accurate", 0.0) - fast_s)
    for extra in sorted(upgrades):
        if correct >= needed:
            break
        correct += 1
        spent += extra
    return spent


def _flips(commit: str, share: float) -> bool:
    """Whether this task is among `share` of the tasks (chosen by the commit's hash, the same for every
    strategy and every run)."""
    return int(commit[:8], 16) % 1000 < share * 1000


@dataclass(frozen=True, kw_only=True)
class SilentWhatIf:
    """What-if: a share of the fast answers that failed their checks had passed them (and were wrong)."""

    share: float
    # strategy -> (correct, wrong, wait in seconds)
    figures: dict[str, tuple[int, int, float]]


def silent_what_if(
    runs: Sequence[TaskRun], share: float, band_scores: Sequence[float], band_of: Callable[[float], str]
) -> SilentWhatIf:
    """Strategies' outcomes had the simulator's fast model made `share` of its caught mistakes (a broken
    file, an answer far too large: ~45% of its mistakes, an assumption of `tandem.sim.error_model`) in ways
    no check catches. On the tasks picked (`_flips`) where fast-first's fast answer failed its checks, that
    answer is applied instead, wrong, after the fast model's time: for fast-first, hedged, always-fast,
    the router where it asked the fast model first, and router-banded outside its accurate-alone part
    (`band_of(score)`: "fast-first" | "hedged" | "accurate"). Derived from the runs; nothing re-run."""
    names = ("router", "fast-first", "hedged", "router-banded", "always-fast", "always-accurate")
    tally = {name: [0, 0, 0.0] for name in names}
    for run, score in zip(runs, band_scores, strict=True):
        facts = run.facts
        if facts is None:
            continue
        flip = not facts.fast_passed and _flips(run.commit, share)
        plan = band_of(score)
        outcome: dict[str, tuple[str, float]] = {
            "fast-first": (facts.first_result, facts.first_s),
            "hedged": (facts.first_result, facts.first_s)
            if facts.fast_passed
            else (facts.accurate_result, max(facts.fast_s, facts.accurate_s)),
            "always-fast": (run.results.get("always-fast", ""), run.simulated_s.get("always-fast", 0.0)),
            "always-accurate": (facts.accurate_result, facts.accurate_s),
            "router": (run.results.get("router", ""), run.simulated_s.get("router", 0.0)),
        }
        outcome["router-banded"] = outcome[plan if plan != "accurate" else "always-accurate"]
        silent = ("wrong", facts.fast_s)
        if flip:
            for name in ("fast-first", "hedged", "always-fast"):
                outcome[name] = silent
            if run.route.startswith("fast"):
                outcome["router"] = silent
            if plan != "accurate":
                outcome["router-banded"] = silent
        for name, (result, wait_s) in outcome.items():
            tally[name][0] += result == "correct"
            tally[name][1] += result == "wrong"
            tally[name][2] += wait_s
    return SilentWhatIf(share=share, figures={name: (int(c), int(w), float(s)) for name, (c, w, s) in tally.items()})
