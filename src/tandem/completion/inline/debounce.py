"""How long a cache miss waits before asking a model, adapted to the user and the model.

A miss is asked at once while the model keeps up with the typing: the stream it starts is what the next
keystrokes are served from (typing through it, or catching up with it), so waiting only delays them. The
replay benchmark measured it: a wait of about one typing interval before every miss cut the share of
requests answered without a model wait from ~64% to ~32% on spark-class models (bench/bench_strategies.py).
When the model is much slower than the typing (recent model latency over three typing intervals), a stream
started mid-word is usually overtaken and wasted, so a miss then waits for a pause: about one typing
interval, never more than the configured ceiling. Cache hits never come here.

The model's speed is the median of its last few answers, each timed from the moment it was asked (after
any debounce wait, which must not feed itself) to its first useful unit. A median, not a moving average:
a local server reading a whole window (a file's first request, a window that moved: 1.5-4 s on one
core, against ~0.1 s for a key whose prompt it has cached) is one answer in many, and a moving average
held every miss back for the next half-dozen answers. With the real 0.5B, reading first (README, "Where
the requests go"), 12% of requests were withdrawn in that wait; answered without a model wait went from
30.5% to 38.8% with the median.

A model on this machine is not held back at all (unless the mode is fixed). Its stream, superseded while
the server still reads the prompt, reads on for the next request and stops at its first token
(`inline.streams.Stream.supersede`), so asking at once wastes little, and waiting only delays the answer
past the next key. Real 0.5B, three runs each (README, "Where the requests go"): reading first, answered
without a model wait 36.4-38.8% with the adaptive wait and 39.6-42.7% without it; cold, 27.7-30.3% and
25.6-29.9%, within the runs' noise.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field

# Smoothing of the exponential moving averages (weight of the newest sample).
_ALPHA = 0.3
# Gaps longer than this are pauses, not typing rhythm.
_MAX_TYPING_GAP_S = 1.0
_MIN_DELAY_S = 0.0
# A model slower than this many typing intervals cannot keep up: its streams are overtaken mid-word.
_SLOW_MODEL_GAPS = 3.0
# The typing gaps the median interval is taken over.
_RECENT_GAPS = 15
# The model answers the median latency is taken over.
_RECENT_ANSWERS = 7


@dataclass
class AdaptiveDebounce:
    ceiling_s: float
    fixed: bool = False
    typing_gap_s: float | None = None
    _last_keystroke_s: dict[str, float] = field(default_factory=dict)
    _recent_gaps: deque[float] = field(default_factory=lambda: deque(maxlen=_RECENT_GAPS))
    _recent_answers: deque[float] = field(default_factory=lambda: deque(maxlen=_RECENT_ANSWERS))

    def keystroke(self, uri: str, at_s: float) -> None:
        """A request arrived for `uri` at `at_s` (monotonic seconds): learn the typing rhythm."""
        last = self._last_keystroke_s.get(uri)
        self._last_keystroke_s[uri] = at_s
        if last is None:
            return
        gap = at_s - last
        if 0 < gap <= _MAX_TYPING_GAP_S:
            self.typing_gap_s = gap if self.typing_gap_s is None else (1 - _ALPHA) * self.typing_gap_s + _ALPHA * gap
            self._recent_gaps.append(gap)

    @property
    def median_gap_s(self) -> float | None:
        """The median of the last typing gaps: a typing interval that the pauses themselves (after a line,
        a word, a hesitation) do not lengthen, as they do the moving average."""
        return statistics.median(self._recent_gaps) if self._recent_gaps else None

    def model_answered(self, latency_s: float) -> None:
        """A model call took `latency_s` from being asked to its first useful unit."""
        if latency_s > 0:
            self._recent_answers.append(latency_s)

    @property
    def model_latency_s(self) -> float | None:
        """The median of the model's last answers (None before the first)."""
        return statistics.median(self._recent_answers) if self._recent_answers else None

    def delay_s(self, *, local: bool = False) -> float:
        """The wait before a miss asks the model (`local`: a model on this machine, never held back
        unless the mode is fixed)."""
        if self.fixed:
            return self.ceiling_s
        if local:
            return _MIN_DELAY_S
        if self.typing_gap_s is None or self.model_latency_s is None:
            return _MIN_DELAY_S
        if self.model_latency_s <= _SLOW_MODEL_GAPS * self.typing_gap_s:
            return _MIN_DELAY_S
        return max(_MIN_DELAY_S, min(self.ceiling_s, self.typing_gap_s * 1.2))

    def forget(self, uri: str) -> None:
        self._last_keystroke_s.pop(uri, None)
