"""Unit tests: `[edit]` bands chosen from labels (`eval.router_bands`) and money in the derived strategies."""

from __future__ import annotations

import pytest

from tandem.eval.edit_cost import REPLAY_PRICES, cost_usd
from tandem.eval.edit_hedging import NOBODY, RunFacts, TierSpeed, banded, draft_gated, hedged
from tandem.eval.router_bands import choose_label_band

SPEED = TierSpeed(ttft_s=0.6, tokens_per_s=65.0)


def test_low_band_holds_at_most_the_stated_share_of_hard_edits() -> None:
    # 20 easy edits at low scores, then a mix, then 20 hard ones at high scores.
    pairs = [(0.01 * i, False) for i in range(20)]
    pairs += [(0.3 + 0.01 * i, i % 2 == 0) for i in range(20)]
    pairs += [(0.8 + 0.005 * i, True) for i in range(20)]
    band = choose_label_band(pairs, ["a"], low=0.15, high=0.8, min_tasks=10)
    assert band.fast_hard <= 0.15 * band.fast_tasks
    assert band.fast_tasks >= 20
    assert band.accurate_hard >= 0.8 * band.accurate_tasks
    assert band.accurate_tasks >= 20
    assert 0.19 < band.band.hedge_from <= band.band.accurate_from < 0.81


def test_no_band_where_labels_do_not_allow_one() -> None:
    pairs = [(0.01 * i, i % 2 == 0) for i in range(40)]
    band = choose_label_band(pairs, ["a"], low=0.15, high=0.8, min_tasks=10)
    assert band.band.hedge_from == 0.0
    assert band.band.accurate_from == NOBODY
    assert band.fast_tasks == 0 and band.accurate_tasks == 0


def _facts(*, passed: bool, lines: int) -> RunFacts:
    acc = REPLAY_PRICES["accurate"]
    return RunFacts(
        first_result="correct",
        first_s=0.5 if passed else 9.0,
        fast_passed=passed,
        fast_s=0.4,
        fast_tokens_in=10_000,
        fast_tokens_out=300,
        first_tokens=10_300,
        accurate_result="correct",
        accurate_s=8.0,
        accurate_tokens_in=10_000,
        accurate_tokens_out=500,
        first_cost_usd=cost_usd("fast", 10_000, 300),
        fast_cost_usd=cost_usd("fast", 10_000, 300),
        accurate_cost_usd=cost_usd("accurate", 10_000, 500),
        accurate_usd_per_token=(acc.input_per_token, acc.output_per_token),
        fast_changed_lines=lines,
    )


def test_hedged_pays_the_accurate_prompt_and_what_streamed_before_the_fast_answer() -> None:
    run = _facts(passed=True, lines=3)
    derived = hedged(run, SPEED)
    assert derived.cost_usd > run.first_cost_usd
    assert derived.cost_usd < run.first_cost_usd + run.accurate_cost_usd
    assert derived.cost_usd == pytest.approx(run.first_cost_usd + cost_usd("accurate", 10_000, 0))


def test_draft_gated_asks_the_accurate_model_only_for_a_large_draft() -> None:
    small, large = _facts(passed=True, lines=3), _facts(passed=True, lines=40)
    assert draft_gated(small, SPEED).cost_usd == small.first_cost_usd
    gated = draft_gated(large, SPEED)
    assert gated.cost_usd == pytest.approx(large.first_cost_usd + large.accurate_cost_usd)
    assert gated.wait_s == large.first_s + large.accurate_s
    band = choose_label_band([(0.5, False)] * 3, ["a"])
    assert banded(large, 0.5, band.band, SPEED, draft_gate=True).cost_usd == gated.cost_usd
