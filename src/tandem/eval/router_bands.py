"""The `[edit]` bands on the router's score, chosen from real labels on histories left out of the fit.

Where the edit path asks its models (`completion.edit.flow.EditFlow.plan`): the fast model first below
`hedge_from`, both at once from there up to `accurate_from`, the accurate model alone at or above it. The
edges are set here from the commits' own labels (`code_label.code_hard`: more than one source file or more
than 20 changed source lines), never from the simulator's error model:

    hedge_from     the highest edge below which at most `LOW_HARD_SHARE` of the edits are hard
    accurate_from  the lowest edge at or above which at least `HIGH_HARD_SHARE` of the edits are hard

each over at least `MIN_TASKS` edits, else no band there (0.0: nothing goes fast alone; `NOBODY`: nothing
goes to the accurate model alone). The scores are held out: each history's edits are scored by the router
fitted without it (`router_shape.fit_model`, the way the shipped model is fitted), with a user's selection
(the function or block enclosing the change, what an editor sends).

`bands_by_held_out` is what a judged history's simulated default uses: for history H, the edges are chosen
on the other histories alone, each of them scored by a router fitted on the rest of them (never on H), so
neither the fit nor the edges saw H. `bands_on_all` pools every history's held-out scores: the shipped
defaults (`completion.config.tree.EditConfig`), which therefore saw every history here's labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tandem.eval.edit_hedging import NOBODY, Band
from tandem.eval.router_fit import Sample
from tandem.eval.router_shape import fit_model, model_logit

# Set before any banded figure was seen, and the same in every fold: below `hedge_from` at most about one
# edit in seven is hard (what fast-first then risks, its checks catching part of it); at or above
# `accurate_from` at least four in five are (where the fast attempt is mostly wasted).
LOW_HARD_SHARE = 0.15
HIGH_HARD_SHARE = 0.8
# A band holds at least this many labelled edits, so that a handful of edits cannot set an edge.
MIN_TASKS = 10
# The selection kind scored: a user's (what an editor routes).
SELECTION = "user"


@dataclass(frozen=True, kw_only=True)
class LabelBand:
    """Edges chosen from labels, and what they cover on the edits they were chosen on."""

    band: Band
    chosen_on: tuple[str, ...]
    tasks: int
    hard: int
    fast_tasks: int
    fast_hard: int
    accurate_tasks: int
    accurate_hard: int

    def describe(self) -> str:
        return (
            f"chosen from real labels on {', '.join(self.chosen_on)} ({self.tasks} edits, {self.hard} hard, each "
            f"history scored by a router fitted without it): below {self.band.hedge_from:g} {self.fast_hard} of "
            f"{self.fast_tasks} hard (at most {LOW_HARD_SHARE:.0%}), from {self.band.accurate_from:g} "
            f"{self.accurate_hard} of {self.accurate_tasks} hard (at least {HIGH_HARD_SHARE:.0%})"
        )


def _sigmoid(log_odds: float) -> float:
    return 1.0 / (1.0 + math.exp(-log_odds)) if log_odds > -700 else 0.0


def held_out_scores(histories: Mapping[str, Sequence[Sample]]) -> list[tuple[float, bool]]:
    """(score, hard) of every edit of `histories`, each history scored by the model fitted on the others
    (the router's score, `RouteDecision.score`, is the model's probability)."""
    pairs: list[tuple[float, bool]] = []
    for held, rows in histories.items():
        others = {name: r for name, r in histories.items() if name != held}
        if not others:
            continue
        model = fit_model(others)
        pairs += [(_sigmoid(model_logit(model, s.inputs[SELECTION])), s.hard) for s in rows]
    return pairs


def choose_label_band(
    pairs: Sequence[tuple[float, bool]],
    chosen_on: Sequence[str],
    *,
    low: float = LOW_HARD_SHARE,
    high: float = HIGH_HARD_SHARE,
    min_tasks: int = MIN_TASKS,
) -> LabelBand:
    """The edges for `pairs` (see the module docstring). An edge falls half-way between two neighbouring
    scores."""
    ordered = sorted(pairs, key=lambda pair: pair[0])
    n = len(ordered)
    hard_before = [0]
    for _, hard in ordered:
        hard_before.append(hard_before[-1] + hard)
    cuts = [k for k in range(1, n) if ordered[k][0] != ordered[k - 1][0]]

    def edge(k: int) -> float:
        return round((ordered[k - 1][0] + ordered[k][0]) / 2, 6)

    low_cut = 0
    for k in cuts:
        if k >= min_tasks and hard_before[k] <= low * k:
            low_cut = k
    high_cut = n
    for k in reversed(cuts):
        above = n - k
        if k >= low_cut and above >= min_tasks and hard_before[n] - hard_before[k] >= high * above:
            high_cut = k
    hedge_from = edge(low_cut) if low_cut else 0.0
    accurate_from = edge(high_cut) if high_cut < n else NOBODY
    return LabelBand(
        band=Band(hedge_from=hedge_from, accurate_from=accurate_from),
        chosen_on=tuple(chosen_on),
        tasks=n,
        hard=hard_before[n],
        fast_tasks=low_cut,
        fast_hard=hard_before[low_cut],
        accurate_tasks=n - high_cut,
        accurate_hard=hard_before[n] - hard_before[high_cut],
    )


def bands_by_held_out(histories: Mapping[str, Sequence[Sample]]) -> dict[str, LabelBand]:
    """{history H: the edges chosen on the other histories only, their scores from fits that exclude H}."""
    out: dict[str, LabelBand] = {}
    for held in histories:
        others = {name: rows for name, rows in histories.items() if name != held}
        out[held] = choose_label_band(held_out_scores(others), list(others))
    return out


def bands_on_all(histories: Mapping[str, Sequence[Sample]]) -> LabelBand:
    """The edges chosen on every history's held-out scores at once (what the defaults are set from)."""
    return choose_label_band(held_out_scores(histories), list(histories))
