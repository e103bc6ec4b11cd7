"""Strategies that use the time the router cannot save, derived from the simulated runs of the others.

Both start from fast-first (ask the fast model, check its answer, escalate what fails the checks); they
differ in what the accurate model does, and when. From one task's `TaskRun` (fast-first's first attempt,
whether it passed its checks, always-accurate's answer, each with its model time and tokens):

    hedged       the accurate model starts at once, beside the fast one; if the fast answer passes its
                 checks the accurate stream is cancelled (its prompt is paid, and the tokens it streamed
                 until then); if not, the accurate answer is already on its way: the user waits for the
                 slower of the two, not for both one after the other. Its outcome is fast-first's when the
                 fast answer passes, always-accurate's otherwise. Exact, given the runs.
    draft-check  a fast answer that passes its checks is shown to the accurate model with the request,
                 which answers "keep" (a few tokens) or writes its own edit. MODELLED, not run: the checker
                 is assumed to keep every correct draft and to replace a wrong one with the answer it
                 would have written itself (always-accurate's); real checkers are worse than that, so its
                 figures are an upper estimate. A draft that fails the checks escalates as in fast-first.
    banded       the router's score picks one of three: fast-first below `Band.hedge_from`, hedged from
                 there up to `Band.accurate_from`, the accurate model alone at or above it. Exact, given the
                 runs and the score. `choose_band` sets the edges on some histories' runs (never on the
                 history the policy is then judged on).

Times are at the profiles' real speeds (time to first token plus tokens at the profile's rate).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# Tokens the checker writes to keep a draft ("keep", or a one-line verdict).
CHECK_TOKENS = 16


@dataclass(frozen=True, kw_only=True)
class TierSpeed:
    """A profile's speed: time to first token, tokens per second."""

    ttft_s: float
    tokens_per_s: float

    def seconds(self, tokens_out: int) -> float:
        return self.ttft_s + tokens_out / self.tokens_per_s

    def streamed_by(self, seconds: float) -> int:
        """Tokens streamed `seconds` after the request (none before the first token)."""
        return max(0, int((seconds - self.ttft_s) * self.tokens_per_s))


@dataclass(frozen=True, kw_only=True)
class RunFacts:
    """What the derivation needs of one task's runs."""

    # fast-first: its verdict, its whole time, whether its fast answer passed the checks (no escalation),
    # and the fast attempt's own time and tokens.
    first_result: str
    first_s: float
    fast_passed: bool
    fast_s: float
    fast_tokens_in: int
    fast_tokens_out: int
    first_tokens: int
    # always-accurate: its verdict, time and tokens.
    accurate_result: str
    accurate_s: float
    accurate_tokens_in: int
    accurate_tokens_out: int
    # Money (`eval.edit_cost`, USD): fast-first's whole run, its fast attempt alone, always-accurate's run,
    # and the accurate model's price per prompt and per answer token (for a stream cancelled part way).
    first_cost_usd: float = 0.0
    fast_cost_usd: float = 0.0
    accurate_cost_usd: float = 0.0
    accurate_usd_per_token: tuple[float, float] = (0.0, 0.0)
    # The fast draft's changed lines (for the draft-gated strategy).
    fast_changed_lines: int = 0


@dataclass(frozen=True, kw_only=True)
class Derived:
    """One derived strategy on one task: verdict, the user's wait, tokens spent (in + out), their price."""

    result: str
    wait_s: float
    tokens: int
    cost_usd: float = 0.0


def hedged(run: RunFacts, accurate: TierSpeed) -> Derived:
    if run.fast_passed:
        streamed = min(run.accurate_tokens_out, accurate.streamed_by(run.fast_s))
        per_in, per_out = run.accurate_usd_per_token
        return Derived(
            result=run.first_result,
            wait_s=run.first_s,
            tokens=run.first_tokens + run.accurate_tokens_in + streamed,
            cost_usd=run.first_cost_usd + run.accurate_tokens_in * per_in + streamed * per_out,
        )
    return Derived(
        result=run.accurate_result,
        wait_s=max(run.fast_s, run.accurate_s),
        tokens=run.fast_tokens_in + run.fast_tokens_out + run.accurate_tokens_in + run.accurate_tokens_out,
        cost_usd=run.fast_cost_usd + run.accurate_cost_usd,
    )


def _fast_first(run: RunFacts) -> Derived:
    return Derived(result=run.first_result, wait_s=run.first_s, tokens=run.first_tokens, cost_usd=run.first_cost_usd)


def _accurate(run: RunFacts) -> Derived:
    return Derived(
        result=run.accurate_result,
        wait_s=run.accurate_s,
        tokens=run.accurate_tokens_in + run.accurate_tokens_out,
        cost_usd=run.accurate_cost_usd,
    )


# A fast draft changing more lines than this is shown to nobody before the accurate model has answered
# too (`draft_gated`): the label's own size edge (`router_eval.HARD_LINES`), set a priori, not fitted.
DRAFT_LARGE_LINES = 20


def draft_gated(run: RunFacts, accurate: TierSpeed) -> Derived:
    """The fast model first; the accurate model is asked only when the fast draft fails its checks (as
    fast-first escalates) or is large (more than `DRAFT_LARGE_LINES` changed lines), after the draft: the
    fast draft is a routing input the pre-generation router lacks. Exact given the runs: a large draft
    that passed waits for the draft and then for always-accurate's answer, which serves."""
    if not run.fast_passed or run.fast_changed_lines <= DRAFT_LARGE_LINES:
        return _fast_first(run)
    return Derived(
        result=run.accurate_result,
        wait_s=run.first_s + run.accurate_s,
        tokens=run.first_tokens + run.accurate_tokens_in + run.accurate_tokens_out,
        cost_usd=run.first_cost_usd + run.accurate_cost_usd,
    )


def draft_check(run: RunFacts, accurate: TierSpeed) -> Derived:
    if not run.fast_passed:
        return _fast_first(run)
    checked_in = run.accurate_tokens_in + run.fast_tokens_out
    per_in, per_out = run.accurate_usd_per_token
    if run.first_result == "correct":
        return Derived(
            result="correct",
            wait_s=run.first_s + accurate.seconds(CHECK_TOKENS),
            tokens=run.first_tokens + checked_in + CHECK_TOKENS,
            cost_usd=run.first_cost_usd + checked_in * per_in + CHECK_TOKENS * per_out,
        )
    return Derived(
        result=run.accurate_result,
        wait_s=run.first_s + run.accurate_s,
        tokens=run.first_tokens + checked_in + run.accurate_tokens_out,
        cost_usd=run.first_cost_usd + checked_in * per_in + run.accurate_tokens_out * per_out,
    )


def totals(derived: Sequence[Derived]) -> tuple[int, float, int]:
    """(correct edits, the user's total wait in seconds, tokens)."""
    return (
        sum(1 for d in derived if d.result == "correct"),
        sum(d.wait_s for d in derived),
        sum(d.tokens for d in derived),
    )


@dataclass(frozen=True, kw_only=True)
class Band:
    """The router-banded policy's edges on the router's score (`RouteDecision.score`): fast-first below
    `hedge_from`, hedged from it up to `accurate_from`, the accurate model alone at `accurate_from` or above."""

    hedge_from: float
    accurate_from: float


def banded(run: RunFacts, score: float, band: Band, accurate: TierSpeed, *, draft_gate: bool = False) -> Derived:
    """`draft_gate`: the uncertain band asks the fast model first and the accurate one on the draft's
    evidence (`draft_gated`) instead of both at once."""
    if score >= band.accurate_from:
        return _accurate(run)
    if score >= band.hedge_from:
        return draft_gated(run, accurate) if draft_gate else hedged(run, accurate)
    return _fast_first(run)


# Edges are judged by correct edits first, then the user's wait, then tokens, each within this share of the
# best (so that one task does not move an edge, and a wait saved by a hair does not buy many tokens). Set
# before any router-banded figure was seen; one share for every fold.
BAND_TOLERANCE = 0.01
# An edge above every score: nothing goes that way.
NOBODY = 1.01


@dataclass(frozen=True, kw_only=True)
class BandChoice:
    """The chosen edges and what they gave on the runs they were chosen on."""

    band: Band
    tasks: int
    correct: int
    wait_s: float
    tokens: int

    @property
    def correct_per_hour(self) -> float:
        return self.correct / (self.wait_s / 3600) if self.wait_s else 0.0


def choose_band(
    scored: Sequence[tuple[float, RunFacts]], accurate: TierSpeed, tolerance: float = BAND_TOLERANCE
) -> BandChoice:
    """The edges that do best over `scored` (the router's score and the runs of each task): the most
    correct edits; of the edges within `tolerance` of that, the least total wait; of those within
    `tolerance` of that, the fewest tokens. Every edge pair is tried: each falls half-way between two
    neighbouring scores (or at 0, or above every score), so fast-first (both edges above every score),
    hedged everywhere, the router at any boundary and always-accurate are all candidates.

    Not correct edits per hour (correct / wait): it rewards a fast wrong answer over a slower right one
    (5 right in 12 s "beats" 10 right in 46 s), so it would choose edges that leave edits undone."""
    ordered = sorted(scored, key=lambda pair: pair[0])
    n = len(ordered)
    options = []
    for score, run in ordered:
        first = Derived(result=run.first_result, wait_s=run.first_s, tokens=run.first_tokens)
        both = hedged(run, accurate)
        alone = banded(run, score, Band(hedge_from=0.0, accurate_from=0.0), accurate)
        options.append((first, both, alone))

    def prefix(column: int) -> tuple[list[int], list[float], list[int]]:
        correct, wait, tokens = [0], [0.0], [0]
        for row in options:
            d = row[column]
            correct.append(correct[-1] + (d.result == "correct"))
            wait.append(wait[-1] + d.wait_s)
            tokens.append(tokens[-1] + d.tokens)
        return correct, wait, tokens

    sums = [prefix(column) for column in range(3)]
    # Positions where an edge may fall: before the first task, between two different scores, after the last.
    cuts = [k for k in range(n + 1) if k in (0, n) or ordered[k][0] != ordered[k - 1][0]]

    def edge(k: int) -> float:
        if k == 0:
            return 0.0
        if k == n:
            return NOBODY
        return (ordered[k - 1][0] + ordered[k][0]) / 2

    candidates: list[tuple[int, float, int, int, int]] = []
    for a, i in enumerate(cuts):
        for j in cuts[a:]:
            parts = ((0, 0, i), (1, i, j), (2, j, n))
            correct = sum(sums[c][0][hi] - sums[c][0][lo] for c, lo, hi in parts)
            wait = sum(sums[c][1][hi] - sums[c][1][lo] for c, lo, hi in parts)
            tokens = sum(sums[c][2][hi] - sums[c][2][lo] for c, lo, hi in parts)
            candidates.append((correct, wait, tokens, i, j))
    most = max(c[0] for c in candidates)
    right = [c for c in candidates if c[0] >= most * (1 - tolerance)]
    least = min(c[1] for c in right)
    quick = [c for c in right if c[1] <= least * (1 + tolerance)]
    correct, wait, tokens, i, j = min(quick, key=lambda c: (c[2], c[1], -c[0]))
    return BandChoice(
        band=Band(hedge_from=round(edge(i), 6), accurate_from=round(edge(j), 6)),
        tasks=n,
        correct=correct,
        wait_s=wait,
        tokens=tokens,
    )


# What each band may do, by letter: fast-first, hedged, the accurate model alone, draft-gated.
ACTIONS = {"F": "fast-first", "H": "hedged", "A": "accurate", "G": "draft-gated"}


@dataclass(frozen=True, kw_only=True)
class BandPolicy:
    """Three bands on the router's score, each with an action (`ACTIONS`), and what they gave."""

    actions: str
    low: float
    high: float
    correct: int
    wait_s: float
    cost_usd: float
    meets: bool


def _act(letter: str, run: RunFacts, accurate: TierSpeed) -> Derived:
    if letter == "F":
        return _fast_first(run)
    if letter == "H":
        return hedged(run, accurate)
    if letter == "A":
        return _accurate(run)
    return draft_gated(run, accurate)


def best_band_policy(
    scored: Sequence[tuple[float, RunFacts]],
    accurate: TierSpeed,
    *,
    min_correct: int,
    max_wait_s: float,
    max_cost_usd: float,
) -> BandPolicy | None:
    """A feasibility bound, not a strategy: of every policy with two edges on the score (at any cut between
    neighbouring scores of `scored`) and any action in each of the three bands, the one that meets the
    three limits with the least wait; when none does, the one nearest to them (the sum of its misses, each
    as a share of its limit). Chosen on the very tasks it is judged on (in-sample), so a miss here means no
    such policy could meet the target on these tasks, whatever its edges were fitted on."""
    ordered = sorted(scored, key=lambda pair: pair[0])
    n = len(ordered)
    if not n:
        return None
    sums: dict[str, tuple[list[int], list[float], list[float]]] = {}
    for letter in ACTIONS:
        rights, waits, costs = [0], [0.0], [0.0]
        for _, run in ordered:
            d = _act(letter, run, accurate)
            rights.append(rights[-1] + (d.result == "correct"))
            waits.append(waits[-1] + d.wait_s)
            costs.append(costs[-1] + d.cost_usd)
        sums[letter] = (rights, waits, costs)
    cuts = [k for k in range(n + 1) if k in (0, n) or ordered[k][0] != ordered[k - 1][0]]

    def edge(k: int) -> float:
        return 0.0 if k == 0 else NOBODY if k == n else round((ordered[k - 1][0] + ordered[k][0]) / 2, 6)

    def miss(correct: int, wait: float, cost: float) -> float:
        return (
            max(0.0, (min_correct - correct) / max(1, min_correct))
            + max(0.0, wait / max_wait_s - 1)
            + max(0.0, cost / max_cost_usd - 1)
        )

    best: tuple[float, float, BandPolicy] | None = None
    for a, i in enumerate(cuts):
        for j in cuts[a:]:
            for actions in (x + y + z for x in ACTIONS for y in ACTIONS for z in ACTIONS):
                parts = ((actions[0], 0, i), (actions[1], i, j), (actions[2], j, n))
                correct = sum(sums[c][0][hi] - sums[c][0][lo] for c, lo, hi in parts)
                wait = sum(sums[c][1][hi] - sums[c][1][lo] for c, lo, hi in parts)
                cost = sum(sums[c][2][hi] - sums[c][2][lo] for c, lo, hi in parts)
                key = (miss(correct, wait, cost), wait)
                if best is None or key < best[:2]:
                    policy = BandPolicy(
                        actions=actions,
                        low=edge(i),
                        high=edge(j),
                        correct=correct,
                        wait_s=wait,
                        cost_usd=cost,
                        meets=key[0] == 0.0,
                    )
                    best = (key[0], key[1], policy)
    return None if best is None else best[2]
