"""What each number in the configuration may be: every numeric key has a declared range here.

A value outside its range, or not finite (TOML's `inf` and `nan`, JSON's `Infinity` and `NaN` as Python
reads them), is refused with the key named and the default kept (`completion.config.tree`); so `inf` for a
share or a temperature cannot reach a prompt or a request, and a 400-digit `debounce_ms` cannot reach a
timer. A numeric key without a range here is refused whatever its value (a new setting is closed until
someone declares what it may be), and a test checks that every numeric key of the tree has one.

The bounds are wide: they keep out values no one means (a deadline of a year, a budget of 10^15 tokens),
not values someone might.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# The prompt budget's hard maximum (DESIGN: never over 128K tokens).
MAX_BUDGET_TOKENS = 128_000


@dataclass(frozen=True)
class Range:
    """`low <= value <= high` (`low < value` when `low_open`)."""

    low: float
    high: float
    low_open: bool = False

    def admits(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    def describe(self, whole: bool) -> str:
        kind = "a whole number" if whole else "a number"
        low, high = (_show(self.low), _show(self.high))
        if self.low_open:
            return f"{kind} above {low} and at most {high}"
        return f"{kind} from {low} to {high}"


def _show(bound: float) -> str:
    return f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"


_SHARE = Range(0.0, 1.0)
_SECONDS = Range(0.0, 3600.0, low_open=True)
_DELAY_MS = Range(0, 60_000)
_PRICE = Range(0.0, 10_000.0)  # USD per million tokens
_ANSWER_TOKENS = Range(1, 1_000_000)
_PROMPT_TOKENS = Range(1, MAX_BUDGET_TOKENS)
_CHARS = Range(0, 10_000_000)
_LINES = Range(0, 1_000_000)
_COUNT = Range(0, 10_000_000)
# A band edge on the router's score: 1.01 is how "never" is written (no score reaches it).
_SCORE_EDGE = Range(0.0, 2.0)

# Keys by their dotted name; "models.*" is either model tier.
RANGES: dict[str, Range] = {
    "models.*.max_tokens": _ANSWER_TOKENS,
    "models.*.timeout_s": _SECONDS,
    "models.*.connect_timeout_s": _SECONDS,
    # OpenAI's range (Anthropic's is 0 to 1).
    "models.*.temperature": Range(0.0, 2.0),
    "models.*.price_input_per_mtok": _PRICE,
    "models.*.price_output_per_mtok": _PRICE,
    "models.*.price_cached_input_per_mtok": _PRICE,
    # A local server's slots (llama-server -np); 0: no limit.
    "models.*.slots": Range(0, 256),
    # A model's context window; 0: 128K (the largest any model takes).
    "models.*.context_tokens": Range(0, 10_000_000),
    "completion.debounce_ms": _DELAY_MS,
    "completion.deadline_s": _SECONDS,
    "completion.prefix_chars": _CHARS,
    "completion.suffix_chars": _CHARS,
    "completion.max_lines": Range(1, 100_000),
    "context.budget_tokens": _PROMPT_TOKENS,
    "context.suffix_share": _SHARE,
    "context.snippet_share": _SHARE,
    "context.max_files": _COUNT,
    "privacy.max_file_bytes": Range(0, 16 * 1024 * 1024),  # the door's largest read (machine.files)
    "cache.max_entries": _COUNT,
    "cache.max_bytes": Range(0, 64 * 1024**3),
    "prefetch.tokens_per_minute": Range(0, 100_000_000),
    "prefetch.max_concurrent": Range(0, 64),
    "router.large_selection_lines": _LINES,
    "router.targeted_share": _SHARE,
    "router.span_files": Range(0.0, 1_000_000.0),
    "router.working_diff_files": _LINES,
    "router.working_diff_lines": _LINES,
    "router.specific_name_files": _LINES,
    "router.accurate_score": Range(0.0, 100.0),
    "edit.max_tokens": _ANSWER_TOKENS,
    "edit.deadline_s": Range(0.0, 86_400.0, low_open=True),
    "edit.context_files": Range(0, 1000),
    "edit.context_chars": _CHARS,
    "edit.hedge_from": _SCORE_EDGE,
    "edit.accurate_from": _SCORE_EDGE,
    "next_edit.region_above": Range(0, 10_000),
    "next_edit.region_below": Range(0, 10_000),
    "next_edit.context_lines": Range(0, 100_000),
    "next_edit.budget_tokens": _PROMPT_TOKENS,
    "next_edit.max_tokens": _ANSWER_TOKENS,
    "next_edit.debounce_ms": _DELAY_MS,
    "next_edit.pause_gaps": Range(0.0, 100.0, low_open=True),
    "next_edit.deadline_s": _SECONDS,
    "trace.max_mb": Range(0.0, 1_000_000.0, low_open=True),
    "trace.keep": Range(0, 100),
    "budget.fast_usd_per_day": Range(0.0, 1_000_000.0),
    "budget.accurate_usd_per_day": Range(0.0, 1_000_000.0),
    "budget.fast_tokens_per_day": Range(0, 10**12),
    "budget.accurate_tokens_per_day": Range(0, 10**12),
}


def range_for(name: str) -> Range | None:
    """The range of the numeric key `name` (a model key by either tier's name), or None if it has none."""
    parts = name.split(".")
    if parts[0] == "models" and len(parts) == 3:
        name = f"models.*.{parts[2]}"
    return RANGES.get(name)
