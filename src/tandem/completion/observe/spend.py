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

The day is the local calendar day. The figures are kept in tandem's state directory in one SQLite
database (`spend.sqlite3`, WAL mode; `machine.state`) shared by every tandem process of the user: each
record's figures are added in a transaction (never a whole day written over another process's), and a
tier's share is read from the sum of all of them. So two editor windows spend one day's limit, and a
restart keeps it. Figures a busy database could not take at once stay in memory and go with the next write.
The JSON file of earlier versions (`spend.json`) is added once, if it holds today, and removed. A database
that cannot be opened (or anything but a regular file at its name) leaves the spend counted in memory,
said once in the log.
"""

from __future__ import annotations

import datetime
import json
import logging
import pathlib
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from tandem.completion.machine.state import (
    LEGACY_SPEND_JSON,
    SPEND_DB,
    open_state_db,
    read_state,
    remove_state,
    settle_state_db,
    state_dir,
)

if TYPE_CHECKING:
    from tandem.completion.config.tree import BudgetConfig
    from tandem.completion.observe.trace import TraceRecord

log = logging.getLogger(__name__)

Spending = Literal["speculation", "next_edit", "completion", "edit"]
# The share of a tier's daily limit at which each kind of spending stops (edits never do).
STOP_AT: dict[Spending, float] = {"speculation": 0.8, "next_edit": 0.9, "completion": 1.0}
TIERS = ("fast", "accurate")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS spend (day TEXT NOT NULL, tier TEXT NOT NULL, tokens INTEGER NOT NULL, "
    "usd REAL NOT NULL, PRIMARY KEY (day, tier))",
    # Each earlier file's day is added once, whichever process reads it first.
    "CREATE TABLE IF NOT EXISTS imported (name TEXT PRIMARY KEY)",
)
_ADD = (
    "INSERT INTO spend (day, tier, tokens, usd) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (day, tier) DO UPDATE SET tokens = tokens + excluded.tokens, usd = usd + excluded.usd"
)


def default_spend_path() -> pathlib.Path:
    return state_dir() / SPEND_DB


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
        # Figures not yet in the database (all of them when there is none), by day and tier.
        self._unsaved: dict[tuple[str, str], TierSpend] = {}
        # The database's figures for a day, as last read (served when a read fails), and the database's
        # `data_version` then: it changes when another connection commits, so while it stays the same the
        # figures are read again only from this process's own writes (added to them as they are written).
        self._read = DaySpend(day="")
        self._read_version: int | None = None
        self._db = self._open() if path is not None else None

    def _open(self) -> sqlite3.Connection | None:
        assert self.path is not None
        try:
            db = open_state_db(self.path)
        except OSError as error:
            log.warning("tandem: the day's spend cannot be kept in %s (%s): counting in memory", self.path, error)
            return None
        try:
            for statement in _SCHEMA:
                db.execute(statement)
            self._import_legacy(db)
            settle_state_db(db)
        except sqlite3.Error as error:
            log.warning("tandem: the day's spend cannot be kept in %s (%s): counting in memory", self.path, error)
            db.close()
            return None
        return db

    def _import_legacy(self, db: sqlite3.Connection) -> None:
        """Add today's figures from an earlier version's `spend.json` (once), then remove the file."""
        assert self.path is not None
        legacy = self.path.with_name(LEGACY_SPEND_JSON)
        if legacy == self.path:
            return
        read = read_state(legacy)
        if read.missing:
            return
        day = self._today()
        try:
            if read.data is None:
                raise OSError(read.refusal)
            data = json.loads(read.data.decode("utf-8"))
            tiers = {
                tier: (int(data["tiers"][tier]["tokens"]), float(data["tiers"][tier]["usd"]))
                for tier in TIERS
                if tier in data["tiers"]
            }
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
            log.warning("tandem: the day's spend in %s could not be read (%s): not added", legacy, error)
            tiers = {}
        if tiers and data.get("day") == day:
            db.execute("BEGIN IMMEDIATE")
            try:
                if db.execute(
                    "INSERT OR IGNORE INTO imported (name) VALUES (?)", (f"{LEGACY_SPEND_JSON}:{day}",)
                ).rowcount:
                    for tier, (tokens, usd) in tiers.items():
                        db.execute(_ADD, (day, tier, max(tokens, 0), max(usd, 0.0)))
                db.execute("COMMIT")
            except sqlite3.Error:
                db.execute("ROLLBACK")
                raise
        remove_state(legacy)

    def _flush(self) -> None:
        """Add the unsaved figures to the database in one transaction (kept for the next write if busy)."""
        if self._db is None or not self._unsaved:
            return
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for (day, tier), spend in self._unsaved.items():
                    self._db.execute(_ADD, (day, tier, spend.tokens, spend.usd))
                self._db.execute("COMMIT")
            except sqlite3.Error:
                self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            log.debug("tandem: the day's spend waits for the next write (%s)", error)
            return
        for (day, tier), spend in self._unsaved.items():
            if day == self._read.day:
                total = self._read.tiers.setdefault(tier, TierSpend())
                total.tokens += spend.tokens
                total.usd += spend.usd
        self._unsaved.clear()

    def _current(self) -> DaySpend:
        """Today's figures: every process's in the database, and this one's not yet written."""
        day = self._today()
        if self._db is not None:
            try:
                # Asked on every keystroke (the status shows the day's spend): read only what changed.
                version = int(self._db.execute("PRAGMA data_version").fetchone()[0])
                if version != self._read_version or self._read.day != day:
                    self._read_version = None
                    rows = self._db.execute("SELECT tier, tokens, usd FROM spend WHERE day = ?", (day,)).fetchall()
                    self._read = DaySpend(day=day)
                    for tier, tokens, usd in rows:
                        self._read.tiers[str(tier)] = TierSpend(tokens=int(tokens), usd=float(usd))
                    self._read_version = version
            except sqlite3.Error as error:
                log.debug("tandem: the day's spend could not be read (%s): the last figures serve", error)
        current = DaySpend(day=day)
        if self._read.day == day:
            for tier, spend in self._read.tiers.items():
                current.tiers[tier] = TierSpend(tokens=spend.tokens, usd=spend.usd)
        for (unsaved_day, tier), spend in self._unsaved.items():
            if unsaved_day == day:
                total = current.tiers.setdefault(tier, TierSpend())
                total.tokens += spend.tokens
                total.usd += spend.usd
        return current

    def _count(self, tier: str, *, tokens: int, usd: float) -> None:
        key = (self._today(), tier if tier in TIERS else "fast")
        spend = self._unsaved.setdefault(key, TierSpend())
        spend.tokens += max(tokens, 0)
        spend.usd += max(usd, 0.0)

    def add(self, tier: str, *, tokens: int, usd: float) -> None:
        """Count `tokens` and `usd` against `tier` today, and keep them."""
        if tokens <= 0 and usd <= 0:
            return
        self._count(tier, tokens=tokens, usd=usd)
        self._flush()

    def record(self, record: TraceRecord) -> None:
        """A `Tracer` sink: the record's tokens and cost, by tier."""
        attempts = getattr(record, "attempts", None)
        if attempts:
            for attempt in attempts:
                tokens = attempt.get("tokens", {})
                tier = str(attempt.get("tier") or "fast")
                self._count(tier, tokens=int(tokens.get("in", 0)) + int(tokens.get("out", 0)), usd=0.0)
            self._count(record.tier or "fast", tokens=0, usd=record.cost_usd)
            self._flush()
            return
        self.add(record.tier or "fast", tokens=record.tokens_in + record.tokens_out, usd=record.cost_usd)

    def close(self) -> None:
        """Write what is unsaved and close the database."""
        self._flush()
        if self._db is not None:
            self._db.close()
            self._db = None

    def share(self, tier: str) -> float:
        """`tier`'s spend today as a share of its limit (0 without one)."""
        if not self._limited(tier):
            return 0.0  # without a limit nothing need be read (asked before every model request)
        return self._share(self._current(), tier)

    def _limited(self, tier: str) -> bool:
        limits = (getattr(self.limits, f"{tier}_usd_per_day", 0.0), getattr(self.limits, f"{tier}_tokens_per_day", 0))
        return any(limit > 0 for limit in limits)

    def _share(self, day: DaySpend, tier: str) -> float:
        spend = day.tiers.get(tier, TierSpend())
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
            tier: {"usd": round(s.usd, 6), "tokens": s.tokens, "share": round(self._share(day, tier), 4)}
            for tier, s in day.tiers.items()
        }
