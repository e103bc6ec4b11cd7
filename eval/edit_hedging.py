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


@dataclass(frozen=True, kw_only=True)
class Derived:
    """One derived strategy on one task: verdict, the user's wait, tokens spent (in + out)."""

    result: str
    wait_s: float
    tokens: int


def hedged(run: RunFacts, accurate: TierSpeed) -> Derived:
    if run.fast_passed:
        streamed = min(run.accurate_tokens_out, accurate.streamed_by(run.fast_s))
        return Derived(
            result=run.first_result,
            wait_s=run.first_s,
            tokens=run.first_tokens + run.accurate_tokens_in + streamed,
        )
    return Derived(
        result=run.accurate_result,
        wait_s=max(run.fast_s, run.accurate_s),
        tokens=run.fast_tokens_in + run.fast_tokens_out + run.accurate_tokens_in + run.accurate_tokens_out,
    )


def draft_check(run: RunFacts, accurate: TierSpeed) -> Derived:
    if not run.fast_passed:
        return Derived(result=run.first_result, wait_s=run.first_s, tokens=run.first_tokens)
    checked_in = run.accurate_tokens_in + run.fast_tokens_out
    if run.first_result == "correct":
        return Derived(
            result="correct",
            wait_s=run.first_s + accurate.seconds(CHECK_TOKENS),
            tokens=run.first_tokens + checked_in + CHECK_TOKENS,
        )
    return Derived(
        result=run.accurate_result,
        wait_s=run.first_s + run.accurate_s,
        tokens=run.first_tokens + checked_in + run.accurate_tokens_out,
    )


def totals(derived: Sequence[Derived]) -> tuple[int, float, int]:
    """(correct edits, the user's total wait in seconds, tokens)."""
    return (
        sum(1 for d in derived if d.result == "correct"),
        sum(d.wait_s for d in derived),
        sum(d.tokens for d in derived),
    )
