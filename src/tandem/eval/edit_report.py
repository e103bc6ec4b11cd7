"""The report of `tandem replay --edits`' simulated comparison (`tandem.eval.edit_eval`): the table as
text, labelled simulated (`render_text`), and as JSON (`result_json`, `render_json`)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from tandem.eval.edit_cost import prices_line
from tandem.eval.edit_eval import (
    DEFAULT_RUN,
    RETRIED,
    STRATEGIES,
    EditEvalResult,
    default_agreement,
    default_shape,
    shipped_band,
)
from tandem.eval.edit_hedging import ACTIONS, best_band_policy
from tandem.eval.edit_runs import TARGET_KEEP, TARGET_TIME, silent_what_if

__all__ = ["render_json", "render_text", "result_json"]


def _share(result: EditEvalResult, name: str, field_name: str) -> float | None:
    """`name`'s figure as a share of always-accurate's."""
    mine, base = result.strategies.get(name), result.strategies.get("always-accurate")
    if mine is None or base is None or not getattr(base, field_name):
        return None
    return float(getattr(mine, field_name)) / float(getattr(base, field_name))


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


_SELECTION_WORDS = {
    "user": "a user's (the function or block enclosing the changed code), routed and edited",
    "changed": "the commit's changed region (derived from the answer: optimistic), routed and edited",
}


# The target for the default (router-banded): at least always-accurate's correct edits minus this ...
TARGET_CORRECT_MARGIN = 2
# ... in at most this share of its wait, at no more than its cost in money.
TARGET_WAIT_SHARE = 0.6


def priced_target(result: EditEvalResult, name: str = "router-banded") -> str:
    """`name` against always-accurate: correct edits, wait and money, and whether the target is met."""
    mine, base = result.strategies.get(name), result.strategies.get("always-accurate")
    if mine is None or base is None or not base.simulated_s:
        return ""
    share = mine.simulated_s / base.simulated_s
    met = (
        mine.correct >= base.correct - TARGET_CORRECT_MARGIN
        and share <= TARGET_WAIT_SHARE
        and mine.cost_usd <= base.cost_usd
    )
    return (
        f"target ({name} vs always-accurate: correct >= {base.correct - TARGET_CORRECT_MARGIN}, wait <= "
        f"{TARGET_WAIT_SHARE:.0%}, cost <= ${base.cost_usd:.3f}): {mine.correct} vs {base.correct} correct, "
        f"{share:.0%} of its wait, ${mine.cost_usd:.3f} vs ${base.cost_usd:.3f}: " + ("MET" if met else "MISSED")
    )


def band_policy_bound(result: EditEvalResult) -> str:
    """Whether any two-edge band policy over the router's scores could meet the priced target on these tasks
    (`edit_hedging.best_band_policy`, in-sample: a bound, not a strategy)."""
    base = result.strategies.get("always-accurate")
    scored = [(run.score, run.facts) for run in result.runs if run.facts is not None]
    if base is None or not scored or not base.simulated_s or not base.cost_usd:
        return ""
    policy = best_band_policy(
        scored,
        result.accurate_speed,
        min_correct=base.correct - TARGET_CORRECT_MARGIN,
        max_wait_s=TARGET_WAIT_SHARE * base.simulated_s,
        max_cost_usd=base.cost_usd,
    )
    if policy is None:
        return ""
    return (
        "bound, not a strategy (every policy of two edges on these tasks' router scores with fast-first, hedged, "
        "accurate or draft-gated in each band, chosen on these very tasks): "
        + ("the target can be met" if policy.meets else "NO such policy meets the target")
        + f"; {'best' if policy.meets else 'nearest'}: {' | '.join(ACTIONS[a] for a in policy.actions)} split at "
        f"{policy.low:g} and {policy.high:g}: {policy.correct} correct, {policy.wait_s / base.simulated_s:.0%} of "
        f"the wait, {policy.cost_usd / base.cost_usd:.0%} of the cost"
    )


def render_text(result: EditEvalResult) -> str:
    """The comparison as a table, labelled simulated."""
    lines = [
        f"time to a correct edit on {result.repo} — SIMULATED (tandem sim: spark = fast, codex = accurate; "
        f"calibrated error model; run {result.time_scale:g}x faster, model times at the profiles' real speeds)",
        f"  selection: {_SELECTION_WORDS.get(result.selection, result.selection)}",
        f"  tasks {result.tasks}" + "".join(f"; skipped {n}: {why}" for why, n in sorted(result.skipped.items())),
        f"  {'strategy':<16}{'correct':>8}{'wrong':>7}{'refused':>8}{'escal.':>7}{'by acc.':>8}"
        f"{'wait s':>9}{'s/correct':>10}{'correct/h':>10}{'tokens':>10}{'cost $':>9}{'$/correct':>10}",
    ]
    for figure in result.strategies.values():
        per = figure.seconds_per_correct
        lines.append(
            f"  {figure.name:<16}{figure.correct:>8}{figure.wrong:>7}{figure.refused:>8}{figure.escalated:>7}"
            f"{figure.accurate_served:>8}{figure.simulated_s:>9.1f}{'n/a' if per is None else f'{per:.1f}':>10}"
            f"{figure.correct_per_hour:>10.0f}{figure.tokens:>10}{figure.cost_usd:>9.3f}"
            f"{'n/a' if figure.usd_per_correct is None else f'{figure.usd_per_correct:.4f}':>10}"
            + ("  (derived, see below)" if figure.derived else "")
        )
    lines.append("  " + prices_line())
    target = priced_target(result)
    if target:
        lines.append("  " + target)
    bound = band_policy_bound(result)
    if bound:
        lines.append("  " + bound)
    lines.append(
        "  draft-gated: the fast model first; the accurate model only when the draft fails its checks or changes "
        "more than 20 lines (then after it); banded, gated: the same in router-banded's uncertain band instead of "
        "both at once (derived exactly from fast-first's and always-accurate's runs)"
    )
    lines.append(
        "  wait = the user's time from request to checked answer, summed; hedged is exact from fast-first's and "
        "always-accurate's runs (accurate started at once, cancelled when the fast answer passes); draft-check is "
        "MODELLED on them (the accurate model keeps a correct draft in a few tokens and replaces a wrong one with "
        "its own answer: an upper estimate); draft-check (run) is run through EditFlow against the simulator, "
        "whose checker keeps a right draft and, where it could have written the edit itself, replaces a wrong one "
        "(an assumption, kind to checking)"
    )
    if result.band is not None:
        shape = default_shape(result.band)
        middle = (
            f", hedged from {shape.hedge_from:g}" if shape.hedge_from < shape.accurate_from else " (no hedge band)"
        )
        lines.append(
            f"  router-banded (the shipped defaults' shape): fast-first below score {shape.accurate_from:g}{middle}, "
            f"the accurate model alone from {shape.accurate_from:g}; banded + hedge: fast-first below "
            f"{result.band.hedge_from:g}, hedged from there, the accurate model alone from "
            f"{result.band.accurate_from:g} (both derived exactly like hedged; edges {result.band_source})"
        )
    if result.band is not None:
        band = default_shape(result.band)

        def plan(score: float) -> str:
            return "accurate" if score >= band.accurate_from else "hedged" if score >= band.hedge_from else "fast-first"

        for share in (0.5, 1.0):
            what_if = silent_what_if(list(result.runs), share, [run.score for run in result.runs], plan)
            lines.append(
                f"  what-if (derived): {share:.0%} of the fast mistakes the checks caught had passed them, wrong: "
                + "; ".join(f"{name} {c} correct {w} wrong {s:.0f} s" for name, (c, w, s) in what_if.figures.items())
            )
    if RETRIED[0]:
        lines.append(
            f"  {RETRIED[0]} strategy run(s) in this process were run again from the same dice after CPython 3.11's "
            "'AST constructor recursion depth mismatch' (a parse in two threads at once, gh-106905)"
        )
    agreement = default_agreement(result)
    if agreement is not None:
        band = shipped_band()
        between = (
            f"hedged from {band.hedge_from:g} (the accurate stream cancelled when the fast answer passes), "
            if band.hedge_from < band.accurate_from
            else ""
        )
        lines.append(
            f"  {DEFAULT_RUN}: the shipped [edit] strategy run through EditFlow (banded: fast-first below score "
            f"{min(band.hedge_from, band.accurate_from):g}, {between}the accurate model alone from "
            f"{band.accurate_from:g}); its verdict is the one derived for that band on "
            f"{agreement[0]} of {agreement[1]} tasks"
        )
    for hard in (False, True):
        subset = [run for run in result.runs if run.hard == hard]
        if not subset:
            continue
        parts = []
        for name in STRATEGIES:
            correct = sum(1 for run in subset if run.results.get(name) == "correct")
            seconds = sum(run.simulated_s.get(name, 0.0) for run in subset)
            parts.append(f"{name} {correct} correct in {seconds:.0f} s")
        kind = "hard (label about code)" if hard else "easy"
        lines.append(f"  {len(subset)} {kind} tasks: " + ", ".join(parts))
    lines.append(
        f"  router keeps {_pct(result.keeps)} of always-accurate's correct edits (target >= {TARGET_KEEP:.0%}) "
        f"in {_pct(result.time_share)} of its time (target <= {TARGET_TIME:.0%}): "
        + ("target met" if result.meets_target else "target NOT met")
    )
    kept, took = _share(result, "fast-first", "correct"), _share(result, "fast-first", "simulated_s")
    lines.append(
        f"  fast-first keeps {_pct(kept)} in {_pct(took)} of the time; knowing every answer in advance, "
        f"a router could keep {TARGET_KEEP:.0%} in {_pct(result.bound_time_share)} (a bound, not a strategy)"
    )
    lines.append("  the router at other boundaries ([router] accurate_score; pressure 1.0 is the default):")
    for point in result.operating_points:
        lines.append(
            f"    accurate_score {point.accurate_score:<9g} (pressure {point.pressure:g}): {point.to_accurate} to the "
            f"accurate model, keeps {_pct(point.keeps)} in {_pct(point.time_share)} of the time, "
            f"{point.correct_per_hour:.0f} correct/h"
        )
    lines.append(
        f"  a router that knew which tasks are hard (AUC 1.0; accurate for those, fast-first for the rest) keeps "
        f"{_pct(result.knowing_hard_keeps)} in {_pct(result.knowing_hard_time_share)} of the time"
    )
    return "\n".join(lines)


def result_json(result: EditEvalResult) -> dict[str, Any]:
    data = asdict(result)
    for run in data["runs"]:
        run.pop("features", None)
    data["default_agreement"] = default_agreement(result)
    for name, figure in result.strategies.items():
        data["strategies"][name]["correct_per_hour"] = round(figure.correct_per_hour, 1)
        data["strategies"][name]["seconds_per_correct"] = figure.seconds_per_correct
        data["strategies"][name]["usd_per_correct"] = figure.usd_per_correct
    data["prices"] = prices_line()
    data["target"] = priced_target(result)
    data["band_policy_bound"] = band_policy_bound(result)
    return data


def render_json(result: EditEvalResult) -> str:
    return json.dumps(result_json(result), indent=2)
