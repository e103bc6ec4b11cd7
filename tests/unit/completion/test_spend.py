"""Unit tests: the day's spend against `[budget]` (`completion.spend`)."""

from __future__ import annotations

import pathlib

from tandem.completion.config.tree import BudgetConfig
from tandem.completion.spend import SpendLedger


def test_spending_stops_least_read_first_and_edits_never() -> None:
    ledger = SpendLedger(BudgetConfig(fast_usd_per_day=1.0), path=None)
    assert ledger.allows("speculation", "fast")
    ledger.add("fast", tokens=100, usd=0.85)
    assert not ledger.allows("speculation", "fast")
    assert ledger.allows("next_edit", "fast") and ledger.allows("completion", "fast")
    ledger.add("fast", tokens=100, usd=0.1)
    assert not ledger.allows("next_edit", "fast") and ledger.allows("completion", "fast")
    ledger.add("fast", tokens=100, usd=0.1)
    assert not ledger.allows("completion", "fast")
    assert ledger.allows("edit", "fast")
    assert ledger.allows("completion", "accurate")  # no limit on that tier


def test_tokens_limit_and_the_larger_share_counts() -> None:
    ledger = SpendLedger(BudgetConfig(accurate_usd_per_day=100.0, accurate_tokens_per_day=1000), path=None)
    ledger.add("accurate", tokens=1000, usd=0.01)
    assert ledger.share("accurate") == 1.0
    assert not ledger.allows("completion", "accurate")


def test_the_day_is_kept_across_restarts_and_a_new_day_starts_at_zero(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "state" / "tandem" / "spend.json"
    day = ["2026-12-04"]
    limits = BudgetConfig(fast_tokens_per_day=50)
    first = SpendLedger(limits, path=path, today=lambda: day[0])
    first.add("fast", tokens=60, usd=0.0)
    again = SpendLedger(limits, path=path, today=lambda: day[0])
    assert again.today()["fast"]["tokens"] == 60 and not again.allows("completion", "fast")
    day[0] = "2026-12-05"
    assert again.allows("completion", "fast")
    assert SpendLedger(limits, path=path, today=lambda: day[0]).today()["fast"]["tokens"] == 0


def test_an_unreadable_file_starts_at_zero(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "spend.json"
    path.write_text("{not json")
    assert SpendLedger(BudgetConfig(), path=path).today()["fast"]["tokens"] == 0
