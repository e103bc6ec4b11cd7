"""How the replayed "user" types: which text one key press inserts, and the pause before it.

One key press inserts one character, except Enter, which also inserts the next line's indentation (as an
editor's auto-indent does). Pauses follow a human rhythm: a base rate in characters per second, a
log-normal spread, longer pauses after the end of a word and at the start of a line (thinking), all
multiplied by `time_scale` so a replay can run faster than life (0.25 = four times as fast).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Rhythm:
    """A typist's timing. `time_scale` multiplies every pause (1.0 = real time)."""

    chars_per_s: float = 6.0
    # Sigma of the log-normal spread of each pause around the base interval.
    spread: float = 0.35
    # Extra pause factors: before the first key of a new line, and after a word ends.
    line_pause: float = 3.0
    word_pause: float = 1.5
    time_scale: float = 1.0

    def __post_init__(self) -> None:
        if not (self.chars_per_s > 0 and math.isfinite(self.chars_per_s)):
            raise ValueError(f"characters per second must be a positive number, not {self.chars_per_s}")
        if not (self.time_scale > 0 and math.isfinite(self.time_scale)):
            raise ValueError(f"time scale must be a positive number, not {self.time_scale}")

    def pause_s(self, rng: random.Random, previous: str) -> float:
        """Seconds before the next key press, given the text the previous press inserted."""
        base = 1.0 / self.chars_per_s
        if previous.startswith("\n"):
            base *= self.line_pause
        elif previous in (" ", "(", ",", ":", "."):
            base *= self.word_pause
        # Median-preserving log-normal: most pauses near the base, a few much longer.
        return base * math.exp(rng.gauss(0.0, self.spread)) * self.time_scale


def next_key(span: str, at: int) -> str:
    """The text the key press at `span[at]` inserts: one character, or a newline with its indentation."""
    char = span[at]
    if char != "\n":
        return char
    end = at + 1
    while end < len(span) and span[end] in " \t":
        end += 1
    return span[at:end]


def key_presses(span: str) -> int:
    """How many key presses typing all of `span` takes without any help."""
    count = 0
    at = 0
    while at < len(span):
        at += len(next_key(span, at))
        count += 1
    return count
