"""When a next edit asks the model: at once after a key press, or after a pause in the typing
(`[next_edit] pause`, `NextEditPause.delay_s`), and how a spent speculation budget lengthens the pause."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tandem.cache.edit_region import ends_a_clause
from tandem.completion.inline.debounce import AdaptiveDebounce
from tandem.completion.next_edit.types import NextEditRequest

if TYPE_CHECKING:
    from tandem.completion.config.tree import NextEditConfig
    from tandem.completion.inline.prefetch import TokenBudget

__all__ = ["NextEditPause"]

# The longest pause a request waits for as the speculation budget runs out.
_TIGHT_PAUSE_S = 1.0


class NextEditPause:
    """The typing rhythm of each document (`keystroke`), and the wait before asking it implies."""

    def __init__(self, *, debounce_ms: int) -> None:
        self._rhythm = AdaptiveDebounce(ceiling_s=debounce_ms / 1000)

    def configure(self, *, debounce_ms: int) -> None:
        self._rhythm.ceiling_s = debounce_ms / 1000

    def keystroke(self, uri: str, at_s: float) -> None:
        self._rhythm.keystroke(uri, at_s)

    def delay_s(self, request: NextEditRequest, settings: NextEditConfig, budget: TokenBudget) -> float:
        """How long to wait before asking, by `[next_edit] pause`. "interval": a rewrite of the region takes
        longer than a typing interval, so a request made mid-typing would be overtaken by the next key press
        and its prompt paid for nothing: wait for a pause of `pause_gaps` typing intervals (2.5 by default; at
        most `debounce_ms`; until the rhythm is known, ask at once). "typed": the same, except that a key
        press that ends a clause (`ends_a_clause`: a closing bracket or quote, `:`, `,`, `;`, or a new line
        begun) asks at once: a change often ends there, and waiting for the pause would put the pause in the
        user's wait. "none" (the default): at once after every key. With `rebase` a request overtaken by the
        next key is not paid for nothing: its rewrite answers that key too while it agrees with it, so the
        pause saves few tokens and costs the user its length at the end of every change that ends inside a
        word (`tandem replay --next-edits` on black and flask: more suggested exactly, the wait's p95 about
        half, some 20% more tokens and about the same per accepted character). Without `rebase`, "typed"
        spends far less.

        All three hold only while half the minute's speculation budget is left. Past that, every key waits
        for the pause, and the pause may pass `debounce_ms`, up to the whole `pause_gaps` intervals as the
        budget runs out (at most `_TIGHT_PAUSE_S`): at a human rhythm (~170 ms a key) a pause of
        `debounce_ms` is only 1.5 intervals, which one key in eight exceeds in the middle of a change, and
        those requests, overtaken by the next key, spent the budget the change's end needed. Waiting longer
        at the end of a change costs a few hundred milliseconds; an empty budget costs the suggestion."""
        roomy = budget.spent() <= budget.per_minute // 2
        if roomy and settings.pause == "none":
            return 0.0
        if roomy and settings.pause == "typed" and 0 <= request.line < request.document.line_count:
            if ends_a_clause(request.document.line_content(request.line)[: request.character]):
                return 0.0
        gap_s = self._rhythm.median_gap_s
        if gap_s is None:
            return 0.0
        ceiling_s = settings.debounce_ms / 1000
        if not roomy:
            # From `debounce_ms` at half the budget spent to `_TIGHT_PAUSE_S` at all of it: the pause
            # lengthens as the budget runs down, and the spending settles where the budget holds.
            spent_share = min(budget.spent() / max(budget.per_minute, 1), 1.0)
            ceiling_s += (spent_share - 0.5) * 2 * max(_TIGHT_PAUSE_S - ceiling_s, 0.0)
        return min(ceiling_s, settings.pause_gaps * gap_s)
