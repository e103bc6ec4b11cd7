"""The day's spend per tier against `[budget]`, and what may still ask a model.

Every trace record (`Tracer.sinks`) adds its tokens and estimated cost (`trace.estimate_cost_usd`, the
models' configured prices) to the day's figures of its tier; an edit's record adds each attempt's tokens to
that attempt's tier and its cost to the tier that answered. A tier's share of its limit is the larger of
its USD share and its token share (a limit of 0 is no limit). As the share grows, the least read spending
stops first:

    speculation   (prefetches of completions)         stops at STOP_AT["speculation"] (80%)
    next edits                                         stops at STOP_AT["next_edit"]   (90%)
    completions   (said once, in words the user reads) stops at STOP_AT["completion"]  (100%)
    edits         asked by the user: they always run, and are counted

The day is the local calendar day. The figures are kept in a small JSON file in tandem's state directory
(`spend.json`), written after each record that spent anything, so a restart keeps the day's spend; a file
of another day, or one that cannot be read, starts the day at zero.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import pathlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tandem.completion.machine.state import read_state, write_state

if TYPE_CHECKING:
    from tandem.completion.config.tree import BudgetConfig
    from tandem.completion.observe.trace import TraceRecord

log = logging.getLogger(__name__)

Spending = Literal["speculation", "next_edit", "completion", "edit"]
# The share of a tier's daily limit at which each kind of spending stops (edits never do).
STOP_AT: dict[Spending, float] = {"speculation": 0.8, "next_edit": 0.9, "completion": 1.0}
TIERS = ("fast", "accurate")
FILE_NAME = "spend.json"


def default_spend_path() -> pathlib.Path:
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "tandem" / FILE_NAME


def _today() -> str:
    return datetime.date.today().isoformat()


@dataclass(kw_only=True)
class TierSpend:
    usd: float = 0.0
    tokens: int = 0


@dataclass(kw_only=True)
class DaySpend:
    day: str
    tiers: dict[str, TierSpend] = field(default_factory=lambda: {tier: TierSpend() for tier in TIERS})


def limit_notice(tier: str) -> str:
    return (
        f"tandem: today's {tier} model spend reached its [budget] limit: completions, next edits and speculation "
        "are paused until tomorrow (edits you ask for still run)."
    )


class SpendLedger:
    """The day's spend (see the module docstring). `path` None: kept in memory only."""

    def __init__(
        self,
        limits: BudgetConfig,
        *,
        path: pathlib.Path | None,
        today: Callable[[], str] = _today,
    ) -> None:
        self.limits = limits
        self.path = path
        self._today = today
        self._day = self._load()

    def _load(self) -> DaySpend:
        day = self._today()
        if self.path is None:
            return DaySpend(day=day)
        read = read_state(self.path)
        if read.missing:
            return DaySpend(day=day)
        try:
            if read.data is None:
                raise OSError(read.refusal)
            data = json.loads(read.data.decode("utf-8"))
            if data.get("day") != day:
                return DaySpend(day=day)
            tiers = {
                tier: TierSpend(usd=float(data["tiers"][tier]["usd"]), tokens=int(data["tiers"][tier]["tokens"]))
                for tier in TIERS
            }
        except (OSError, ValueError, KeyError, TypeError) as error:
            log.warning("tandem: the day's spend in %s could not be read (%s): starting from zero", self.path, error)
            return DaySpend(day=day)
        return DaySpend(day=day, tiers=tiers)

    def _save(self) -> None:
        if self.path is None:
            return
        data = {
            "day": self._day.day,
            "tiers": {tier: {"usd": round(s.usd, 8), "tokens": s.tokens} for tier, s in self._day.tiers.items()},
        }
        try:
            write_state(self.path, json.dumps(data))
        except OSError as error:
            log.warning("tandem: the day's spend could not be written to %s: %s", self.path, error)

    def _current(self) -> DaySpend:
        day = self._today()
        if self._day.day != day:
            self._day = DaySpend(day=day)
        return self._day

    def add(self, tier: str, *, tokens: int, usd: float) -> None:
        """Count `tokens` and `usd` against `tier` today, and keep them."""
        if tokens <= 0 and usd <= 0:
            return
        spend = self._current().tiers.setdefault(tier if tier in TIERS else "fast", TierSpend())
        spend.tokens += max(tokens, 0)
        spend.usd += max(usd, 0.0)
        self._save()

    def record(self, record: TraceRecord) -> None:
        """A `Tracer` sink: the record's tokens and cost, by tier."""
        attempts = getattr(record, "attempts", None)
        if attempts:
            day = self._current()
            for attempt in attempts:
                tokens = attempt.get("tokens", {})
                tier = str(attempt.get("tier") or "fast")
                spend = day.tiers.setdefault(tier if tier in TIERS else "fast", TierSpend())
                spend.tokens += int(tokens.get("in", 0)) + int(tokens.get("out", 0))
            self.add(record.tier or "fast", tokens=0, usd=record.cost_usd)
            self._save()
            return
        self.add(record.tier or "fast", tokens=record.tokens_in + record.tokens_out, usd=record.cost_usd)

    def share(self, tier: str) -> float:
        """`tier`'s spend today as a share of its limit (0 without one)."""
        spend = self._current().tiers.get(tier, TierSpend())
        usd_limit = getattr(self.limits, f"{tier}_usd_per_day", 0.0)
        token_limit = getattr(self.limits, f"{tier}_tokens_per_day", 0)
        shares = [0.0]
        if usd_limit > 0:
            shares.append(spend.usd / usd_limit)
        if token_limit > 0:
            shares.append(spend.tokens / token_limit)
        return max(shares)

    def allows(self, spending: Spending, tier: str) -> bool:
        """Whether `spending` on `tier` may still ask the model today."""
        if spending == "edit":
            return True
        return self.share(tier) < STOP_AT[spending]

    def today(self) -> dict[str, dict[str, float]]:
        """{tier: {"usd", "tokens", "share"}} for today (for `tandem/status` and the latency report)."""
        day = self._current()
        return {
            tier: {"usd": round(s.usd, 6), "tokens": s.tokens, "share": round(self.share(tier), 4)}
            for tier, s in day.tiers.items()
        }
