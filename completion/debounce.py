"""How long a cache miss waits before asking a model, adapted to the user and the model.

A miss that is asked at once while the user is still typing is usually superseded by the next keystroke:
its tokens are wasted and it delays nothing useful. So a miss waits roughly one typing interval (the
user's recent gap between keystrokes, smoothed), since a pause longer than that is when a suggestion is
wanted; it waits less when the model is slow (the wait would add to a long answer anyway) and never more
than the configured ceiling. Cache hits never come here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Smoothing of the exponential moving averages (weight of the newest sample).
_ALPHA = 0.3
# Gaps longer than this are pauses, not typing rhythm.
_MAX_TYPING_GAP_S = 1.0
_MIN_DELAY_S = 0.0


@dataclass
class AdaptiveDebounce:
    ceiling_s: float
    fixed: bool = False
    typing_gap_s: float | None = None
    model_latency_s: float | None = None
    _last_keystroke_s: dict[str, float] = field(default_factory=dict)

    def keystroke(self, uri: str, at_s: float) -> None:
        """A request arrived for `uri` at `at_s` (monotonic seconds): learn the typing rhythm."""
        last = self._last_keystroke_s.get(uri)
        self._last_keystroke_s[uri] = at_s
        if last is None:
            return
        gap = at_s - last
        if 0 < gap <= _MAX_TYPING_GAP_S:
            self.typing_gap_s = gap if self.typing_gap_s is None else (1 - _ALPHA) * self.typing_gap_s + _ALPHA * gap

    def model_answered(self, latency_s: float) -> None:
        """A model call took `latency_s` from request to first useful unit."""
        if latency_s > 0:
            self.model_latency_s = (
                latency_s if self.model_latency_s is None else (1 - _ALPHA) * self.model_latency_s + _ALPHA * latency_s
            )

    def delay_s(self) -> float:
        if self.fixed:
            return self.ceiling_s
        if self.typing_gap_s is None:
            return min(self.ceiling_s, 0.05)
        delay = self.typing_gap_s * 1.2
        if self.model_latency_s is not None and self.model_latency_s > 1.0:
            # A slow model: waiting as long again would double what the user sees.
            delay *= 0.5
        return max(_MIN_DELAY_S, min(self.ceiling_s, delay))

    def forget(self, uri: str) -> None:
        self._last_keystroke_s.pop(uri, None)
