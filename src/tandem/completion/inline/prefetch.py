"""Speculative prefetch: ask for the completion the user will want next, before they ask.

Triggers (the engine calls `Prefetcher.after_shown` / `after_accepted`, the edge calls `at_position`):
a suggestion shown or accepted -> the completion for the state after accepting it; Enter at the end of
a line -> the new line's start. The stream of the suggestion itself usually covers the first case (it runs
on past what was shown), so a prefetch is only started when it does not.

Prefetch never delays a real request: it runs at most `max_concurrent` at a time, a real request for the
same document cancels prefetches it does not use (the engine's `cancel_others`), and it spends within a
token budget per minute, because a prefetcher that burns the user's quota is a known failure of peers.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from tandem.completion.inline.request import TextSource


@dataclass(frozen=True)
class AfterAccepting:
    """A document as it will read once `inserted` is accepted at (line, character)."""

    document: TextSource
    line: int
    character: int
    inserted: str

    @property
    def cursor(self) -> tuple[int, int]:
        """Where the cursor lands after accepting."""
        lines = self.inserted.split("\n")
        if len(lines) == 1:
            return self.line, self.character + len(self.inserted)
        return self.line + len(lines) - 1, len(lines[-1])

    def text_before(self, line: int, char: int, max_chars: int) -> str:
        assert (line, char) == self.cursor, "only the accepted cursor is readable"
        head = self.document.text_before(self.line, self.character, max_chars)
        return (head + self.inserted)[-max_chars:]

    def text_after(self, line: int, char: int, max_chars: int) -> str:
        assert (line, char) == self.cursor, "only the accepted cursor is readable"
        return self.document.text_after(self.line, self.character, max_chars)

    def line_content(self, index: int) -> str:
        original = self.document.line_content(self.line)
        lines = self.inserted.split("\n")
        end_line = self.line + len(lines) - 1
        if index == end_line:
            last = lines[-1] if len(lines) > 1 else original[: self.character] + lines[0]
            return last + original[self.character :]
        if index == self.line:
            return original[: self.character] + lines[0]
        if self.line < index < end_line:
            return lines[index - self.line]
        if index > end_line:
            return self.document.line_content(index - (end_line - self.line))
        return self.document.line_content(index)


class Charge:
    """One charge against a `TokenBudget`: an estimate made before a request, settled to what it spent."""

    __slots__ = ("at_s", "tokens")

    def __init__(self, at_s: float, tokens: int) -> None:
        self.at_s = at_s
        self.tokens = tokens


@dataclass
class TokenBudget:
    """Tokens spent in the last minute, against a ceiling. A request is charged its estimate before it
    goes out (its prompt and its `max_tokens`) and settled to what it spent once its stream has ended: a
    stream cancelled after a few tokens, as most speculation is, does not keep its whole `max_tokens`
    charged for the rest of the minute."""

    per_minute: int
    _spent: deque[Charge] = field(default_factory=deque)

    def spent(self, now_s: float | None = None) -> int:
        now_s = time.monotonic() if now_s is None else now_s
        while self._spent and self._spent[0].at_s < now_s - 60:
            self._spent.popleft()
        return sum(charge.tokens for charge in self._spent)

    def allows(self, tokens: int, now_s: float | None = None) -> bool:
        return self.spent(now_s) + tokens <= self.per_minute

    def charge(self, tokens: int, now_s: float | None = None) -> Charge:
        charge = Charge(time.monotonic() if now_s is None else now_s, tokens)
        self._spent.append(charge)
        return charge

    @staticmethod
    def settle(charge: Charge, tokens: int, *, sent: bool = True) -> None:
        """`charge`'s request has ended having spent `tokens` (prompt and output): count that instead of
        the estimate, at the time it was charged. A request that went out (`sent`) yet reports no tokens
        (a provider without usage) keeps the estimate; one that never went out costs nothing."""
        if tokens > 0 or not sent:
            charge.tokens = max(tokens, 0)
