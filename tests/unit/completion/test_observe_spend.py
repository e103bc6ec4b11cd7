"""Unit tests: the day's spend against `[budget]` (`completion.observe.spend`), kept in one SQLite store that every
tandem process of the user adds to."""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3
from typing import Any

from tandem.completion.config.tree import BudgetConfig
from tandem.completion.observe.spend import SpendLedger


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
    path = tmp_path / "state" / "tandem" / "spend.sqlite3"
    day = ["2026-12-04"]
    limits = BudgetConfig(fast_tokens_per_day=50)
    first = SpendLedger(limits, path=path, today=lambda: day[0])
    first.add("fast", tokens=60, usd=0.0)
    first.close()
    again = SpendLedger(limits, path=path, today=lambda: day[0])
    assert again.today()["fast"]["tokens"] == 60 and not again.allows("completion", "fast")
    day[0] = "2026-12-05"
    assert again.allows("completion", "fast")
    assert SpendLedger(limits, path=path, today=lambda: day[0]).today()["fast"]["tokens"] == 0


def test_two_ledgers_on_one_store_count_every_add_once(tmp_path: pathlib.Path) -> None:
    # Two editor windows: two ledgers (two connections) adding to the same day. The day's spend is the sum,
    # and each sees the other's adds before its next request.
    path = tmp_path / "spend.sqlite3"
    limits = BudgetConfig(fast_usd_per_day=3.0)
    one = SpendLedger(limits, path=path, today=lambda: "2026-12-04")
    two = SpendLedger(limits, path=path, today=lambda: "2026-12-04")
    for _ in range(10):
        one.add("fast", tokens=100, usd=0.1)
        two.add("fast", tokens=50, usd=0.2)
    two.add("accurate", tokens=7, usd=0.0)
    for ledger in (one, two):
        figures = ledger.today()
        assert figures["fast"]["tokens"] == 1500 and round(figures["fast"]["usd"], 6) == 3.0
        assert figures["accurate"]["tokens"] == 7
        assert not ledger.allows("completion", "fast")  # $3 of $3: one limit for both windows


def test_the_days_figures_are_read_again_only_after_another_process_wrote(tmp_path: pathlib.Path) -> None:
    # The status asks for them on every keystroke: while no other connection has written, no SELECT.
    path = tmp_path / "spend.sqlite3"
    one = SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04")
    two = SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04")
    assert one._db is not None
    statements: list[str] = []
    one._db.set_trace_callback(statements.append)
    one.add("fast", tokens=10, usd=0.0)
    assert one.today()["fast"]["tokens"] == 10
    statements.clear()
    one.add("fast", tokens=5, usd=0.0)  # its own write
    assert one.today()["fast"]["tokens"] == 15
    assert not [s for s in statements if s.startswith("SELECT")]
    two.add("fast", tokens=100, usd=0.0)  # another process's
    assert one.today()["fast"]["tokens"] == 115
    assert [s for s in statements if s.startswith("SELECT")]


def test_a_busy_store_keeps_the_figures_for_the_next_write(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "spend.sqlite3"
    ledger = SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    ledger.add("fast", tokens=10, usd=0.0)
    assert ledger.today()["fast"]["tokens"] == 10  # counted, though not yet written
    other.execute("COMMIT")
    other.close()
    ledger.add("fast", tokens=5, usd=0.0)
    assert SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04").today()["fast"]["tokens"] == 15


def test_an_earlier_versions_file_of_today_is_added_once_and_removed(tmp_path: pathlib.Path) -> None:
    legacy = tmp_path / "spend.json"
    figures = {"fast": {"usd": 0.5, "tokens": 40}, "accurate": {"usd": 0.0, "tokens": 0}}
    legacy.write_text(json.dumps({"day": "2026-12-04", "tiers": figures}))
    path = tmp_path / "spend.sqlite3"
    first = SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04")
    assert not legacy.exists()
    legacy.write_text(json.dumps({"day": "2026-12-04", "tiers": figures}))  # a copy put back: not added twice
    second = SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04")
    assert first.today()["fast"]["tokens"] == second.today()["fast"]["tokens"] == 40
    legacy.write_text(json.dumps({"day": "2026-12-03", "tiers": figures}))  # another day: not today's spend
    assert SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04").today()["fast"]["tokens"] == 40


def test_an_unreadable_earlier_file_starts_at_zero(tmp_path: pathlib.Path) -> None:
    (tmp_path / "spend.json").write_text("{not json")
    assert SpendLedger(BudgetConfig(), path=tmp_path / "spend.sqlite3").today()["fast"]["tokens"] == 0


def test_something_else_at_the_stores_name_is_refused_and_the_spend_counted_in_memory(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "spend.sqlite3"
    os.mkfifo(path)
    ledger = SpendLedger(BudgetConfig(fast_tokens_per_day=10), path=path)
    ledger.add("fast", tokens=11, usd=0.0)
    assert not ledger.allows("completion", "fast")
    target = tmp_path / "elsewhere.db"
    path.unlink()
    path.symlink_to(target)
    SpendLedger(BudgetConfig(), path=path).add("fast", tokens=1, usd=0.0)
    assert not target.exists()  # a link is not followed


def test_a_tracer_never_writes_or_rotates_over_the_spend(tmp_path: pathlib.Path, monkeypatch: Any) -> None:
    from tandem.completion.observe.trace import Tracer, TraceRecord

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    path = tmp_path / "tandem" / "spend.sqlite3"
    ledger = SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04")
    ledger.add("fast", tokens=40, usd=0.0)
    for target, keep in ((path, 3), (path, 0), (tmp_path / "tandem" / "spend.sqlite3-wal", 1)):
        tracer = Tracer(target, max_bytes=1, keep=keep)
        for n in range(3):
            tracer.write(TraceRecord(id=str(n), kind="inline", received_ns=1))
        tracer.close()
    assert SpendLedger(BudgetConfig(), path=path, today=lambda: "2026-12-04").today()["fast"]["tokens"] == 40
