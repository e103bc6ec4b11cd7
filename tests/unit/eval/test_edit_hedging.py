"""Unit tests of the derived strategies: hedged (exact from the runs), draft-check (modelled), router-banded
and the choice of its edges."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tandem.eval.edit_hedging import (
    CHECK_TOKENS,
    NOBODY,
    Band,
    RunFacts,
    TierSpeed,
    banded,
    best_band_policy,
    choose_band,
    draft_check,
    hedged,
    totals,
)

ACCURATE = TierSpeed(ttft_s=0.6, tokens_per_s=65.0)


def facts(*, passed: bool, first: str, accurate: str = "correct") -> RunFacts:
    # fast: 1.1 s, 1,000 tokens in, 500 out; fast-first 1.2 s in all (or 9.3 s when it escalated).
    return RunFacts(
        first_result=first,
        first_s=1.2 if passed else 9.3,
        fast_passed=passed,
        fast_s=1.1,
        fast_tokens_in=1000,
        fast_tokens_out=500,
        first_tokens=1500 if passed else 3300,
        accurate_result=accurate,
        accurate_s=8.0,
        accurate_tokens_in=1300,
        accurate_tokens_out=500,
    )


def test_hedged_cancels_the_accurate_stream_when_the_fast_answer_passes() -> None:
    d = hedged(facts(passed=True, first="correct"), ACCURATE)
    assert d.result == "correct" and d.wait_s == 1.2
    # The accurate prompt is paid, and what it streamed in the 0.5 s after its first token.
    assert d.tokens == 1500 + 1300 + int(0.5 * 65)


def test_hedged_waits_for_the_slower_not_for_both_when_the_fast_answer_fails() -> None:
    d = hedged(facts(passed=False, first="correct", accurate="wrong"), ACCURATE)
    assert d.result == "wrong"  # the accurate answer, which was already on its way
    assert d.wait_s == 8.0  # not fast-first's 9.3 s
    assert d.tokens == 1000 + 500 + 1300 + 500


def test_draft_check_keeps_a_correct_draft_in_a_few_tokens() -> None:
    d = draft_check(facts(passed=True, first="correct"), ACCURATE)
    assert d.result == "correct"
    assert d.wait_s == pytest.approx(1.2 + 0.6 + CHECK_TOKENS / 65)
    assert d.tokens == 1500 + (1300 + 500) + CHECK_TOKENS


def test_draft_check_replaces_a_wrong_draft_with_the_accurate_answer() -> None:
    d = draft_check(facts(passed=True, first="wrong", accurate="correct"), ACCURATE)
    assert d.result == "correct" and d.wait_s == pytest.approx(9.2)
    failed = draft_check(facts(passed=False, first="refused"), ACCURATE)
    assert (failed.result, failed.wait_s, failed.tokens) == ("refused", 9.3, 3300)


def test_totals() -> None:
    derived = [hedged(facts(passed=True, first="correct"), ACCURATE), hedged(facts(passed=False, first="x"), ACCURATE)]
    correct, wait_s, tokens = totals(derived)
    assert correct == 2 and wait_s == pytest.approx(9.2) and tokens == derived[0].tokens + derived[1].tokens


def test_banded_is_fast_first_hedged_or_accurate_by_the_score() -> None:
    run = facts(passed=False, first="refused", accurate="correct")
    band = Band(hedge_from=0.3, accurate_from=0.7)
    low, middle, high = (banded(run, score, band, ACCURATE) for score in (0.1, 0.5, 0.9))
    assert (low.result, low.wait_s, low.tokens) == ("refused", 9.3, 3300)  # fast-first: escalated, in turn
    assert (middle.result, middle.wait_s) == ("correct", 8.0)  # hedged: the slower of the two
    assert (high.result, high.wait_s, high.tokens) == ("correct", 8.0, 1300 + 500)  # the accurate model alone


def test_the_band_is_chosen_for_correct_edits_then_wait_then_tokens() -> None:
    # Easy tasks (low scores): the fast answer passes and is right, so hedging them only costs tokens.
    # Hard tasks (high scores): the fast answer passes but is wrong; only the accurate model is right.
    easy = [(0.1 + i / 100, facts(passed=True, first="correct")) for i in range(5)]
    hard = [(0.8 + i / 100, facts(passed=True, first="wrong", accurate="correct")) for i in range(5)]
    choice = choose_band(easy + hard, ACCURATE)
    # Fast-first for the easy ones, the accurate model alone for the hard ones (no band between): every
    # task right, the easy ones at the fast answer's wait. Edges fall half-way between neighbouring scores.
    assert choice.band == Band(hedge_from=pytest.approx(0.47), accurate_from=pytest.approx(0.47))
    assert choice.correct == 10 and choice.wait_s == pytest.approx(5 * 1.2 + 5 * 8.0)
    # Correct edits per hour would have chosen fast-first everywhere: 5 right in 12 s "beats" 10 in 46 s.
    assert 5 / 12 > 10 / 46
    # Fast answers that pass (right) and fail in turn, whatever the score: hedging everything waits least
    # (the fast answer's time where it passes, the accurate one's, not both in turn, where it fails).
    mixed = [(i / 10, facts(passed=i % 2 == 1, first="correct")) for i in range(10)]
    assert choose_band(mixed, ACCURATE).band == Band(hedge_from=0.0, accurate_from=NOBODY)
    # Fast answers that always fail: the accurate model alone, as soon (hedging would only add tokens).
    failing = [(i / 10, facts(passed=False, first="correct")) for i in range(10)]
    assert choose_band(failing, ACCURATE).band == Band(hedge_from=0.0, accurate_from=0.0)


def _priced(*, passed: bool, first: str, accurate: str = "correct") -> RunFacts:
    return replace(
        facts(passed=passed, first=first, accurate=accurate),
        first_cost_usd=0.001 if passed else 0.011,
        fast_cost_usd=0.001,
        accurate_cost_usd=0.01,
        accurate_usd_per_token=(0.000005, 0.00002),
    )


def test_best_band_policy_finds_the_policy_that_meets_the_limits() -> None:
    # Low scores: the fast answer is right; high scores: it passes its checks but is wrong (only the accurate
    # model gets them right). Fast-first below, the accurate model alone above meets every limit.
    scored = [(0.1, _priced(passed=True, first="correct"))] * 4 + [(0.9, _priced(passed=True, first="wrong"))] * 2
    policy = best_band_policy(scored, ACCURATE, min_correct=6, max_wait_s=0.6 * 6 * 8.0, max_cost_usd=0.06)
    assert policy is not None and policy.meets
    assert policy.correct == 6
    below, above = policy.actions[0], policy.actions[2]
    assert below == "F" and above == "A" and 0.1 < policy.high <= 0.9


def test_best_band_policy_says_when_no_policy_meets_the_limits() -> None:
    # Every fast answer is wrong yet passes: the accurate model is needed everywhere, and its wait is over
    # the limit whatever the bands.
    scored = [(0.1 * k, _priced(passed=True, first="wrong")) for k in range(1, 6)]
    policy = best_band_policy(scored, ACCURATE, min_correct=5, max_wait_s=0.6 * 5 * 8.0, max_cost_usd=1.0)
    assert policy is not None and not policy.meets
    # Nearest by the sum of the misses as shares of their limits: two fast (wrong, 1.2 s each) and three
    # accurate (8 s each) miss by 2/5 of the edits and 10% of the wait (0.5); all accurate would miss by 67%
    # of the wait, three fast and two accurate by 3/5 of the edits.
    assert (policy.correct, policy.wait_s) == (3, pytest.approx(2 * 1.2 + 3 * 8.0))
