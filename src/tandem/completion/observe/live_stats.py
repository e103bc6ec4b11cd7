"""What the last few minutes of trace records say, for the live status: a tracer sink.

    no_wait_share   of the completion requests (kinds inline and completion) traced in the window, the
                    share answered from model output that already existed, without waiting for more (source
                    "stream" or "cache", outcome shown or empty, waited_for_model false: the definition the
                    trace report and the replay summary use)
    requests        completion requests traced in the window
    errors          records of any kind with outcome "error" in the window

The window is `WINDOW_S` seconds. A request that started a model stream is traced when the stream ends, so
its record joins the window a moment after its answer.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tandem.completion.observe.trace import TraceRecord

WINDOW_S = 300.0
_COMPLETION_KINDS = frozenset({"inline", "completion"})


@dataclass(frozen=True, kw_only=True)
class LiveFigures:
    window_s: float
    requests: int
    no_wait_share: float | None  # None without requests
    errors: int
    # Prefetch tokens still allowed this minute ([prefetch] tokens_per_minute less what was spent).
    budget_tokens_left: int | None = None
    # Today's spend on every model (`completion.observe.spend`): USD at the configured prices (None when no model
    # has a price: the money is unknown, not zero), and tokens in and out.
    spend_today_usd: float | None = None
    spend_today_tokens: int | None = None


class LiveStats:
    """Keeps (time, was a completion, answered without a wait, failed) per record for the last `window_s`."""

    def __init__(self, *, window_s: float = WINDOW_S) -> None:
        self.window_s = window_s
        self._events: deque[tuple[float, bool, bool, bool]] = deque()
        # The window's sums, kept as events come and go: the status asks for them on every keystroke, and
        # a busy five minutes holds thousands of events.
        self._requests = self._no_wait = self._errors = 0

    def record(self, record: TraceRecord, now_s: float | None = None) -> None:
        """The tracer sink: remember what `record` says (cheap: one tuple appended)."""
        completion = record.kind in _COMPLETION_KINDS
        no_wait = (
            completion
            and record.source in ("stream", "cache")
            and record.outcome in ("shown", "empty")
            and not record.waited_for_model
        )
        now_s = time.monotonic() if now_s is None else now_s
        failed = record.outcome == "error"
        self._events.append((now_s, completion, no_wait, failed))
        self._count((completion, no_wait, failed), 1)
        self._forget(now_s)

    def _count(self, event: tuple[bool, bool, bool], sign: int) -> None:
        completion, no_wait, failed = event
        self._requests += sign * completion
        self._no_wait += sign * no_wait
        self._errors += sign * failed

    def _forget(self, now_s: float) -> None:
        while self._events and self._events[0][0] < now_s - self.window_s:
            _, completion, no_wait, failed = self._events.popleft()
            self._count((completion, no_wait, failed), -1)

    def figures(self, now_s: float | None = None) -> LiveFigures:
        self._forget(time.monotonic() if now_s is None else now_s)
        requests = self._requests
        return LiveFigures(
            window_s=self.window_s,
            requests=requests,
            no_wait_share=round(self._no_wait / requests, 4) if requests else None,
            errors=self._errors,
        )
