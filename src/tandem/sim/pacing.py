"""Token pacing by the clock: a stream's first token after the time to first token, then one token every
1/rate seconds, with optional seeded jitter.

The pacer does not sleep once per token (timer resolution would cap the rate far below 1,000 tokens/s);
it sleeps until the next token is due and then hands over every token that is due by now, so a fast
profile sends several tokens per wake-up and the average rate stays right.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

# Tokens handed over per wake-up at most, so an instant stream still arrives in pieces and the event
# loop serves other connections in between.
MAX_BATCH_TOKENS = 256


@dataclass(frozen=True, kw_only=True)
class Pace:
    """The timing of one response."""

    tokens_per_s: float
    ttft_ms: float
    jitter: float = 0.0

    @property
    def instant(self) -> bool:
        return math.isinf(self.tokens_per_s)


class Pacer:
    """Yields how many tokens are due, batch by batch, for a response of `total` tokens."""

    def __init__(self, pace: Pace, *, rng: random.Random, stop: asyncio.Event | None = None) -> None:
        self._pace = pace
        self._rng = rng
        self._stop = stop

    def _spread(self, value: float) -> float:
        if self._pace.jitter <= 0:
            return value
        return value * (1.0 + self._pace.jitter * self._rng.uniform(-1.0, 1.0))

    async def wait_first(self) -> None:
        """Sleep for the time to first token (returns early if the server is stopping)."""
        await self._sleep(self._spread(self._pace.ttft_ms / 1000.0))

    async def wait_tokens(self, total: int) -> None:
        """Sleep as long as generating `total` tokens takes after the first (for a whole response)."""
        if not self._pace.instant and total > 1:
            await self._sleep(self._spread((total - 1) / self._pace.tokens_per_s))

    async def batches(self, total: int) -> AsyncIterator[int]:
        """Counts of tokens due, summing to `total` (less if the server stops); the first is due now
        (call `wait_first` before)."""
        loop = asyncio.get_running_loop()
        sent = 0
        if self._pace.instant:
            while sent < total:
                batch = min(MAX_BATCH_TOKENS, total - sent)
                sent += batch
                yield batch
            return
        gap_s = 1.0 / self._pace.tokens_per_s
        due_s = loop.time()  # when token `sent` is due
        while sent < total:
            now = loop.time()
            if due_s > now:
                await self._sleep(due_s - now)
                if self.stopping:
                    return
                now = loop.time()
            batch = 0
            while sent + batch < total and due_s <= now and batch < MAX_BATCH_TOKENS:
                batch += 1
                due_s += self._spread(gap_s)
            if batch:
                sent += batch
                yield batch

    @property
    def stopping(self) -> bool:
        """True once the server is shutting down: streams end early rather than hold it up."""
        return self._stop is not None and self._stop.is_set()

    async def _sleep(self, delay_s: float) -> None:
        if delay_s <= 0:
            return
        if self._stop is None:
            await asyncio.sleep(delay_s)  # sleep-ok: pacing a simulated model is the point
            return
        try:
            await asyncio.wait_for(self._stop.wait(), timeout=delay_s)
        except TimeoutError:
            pass
