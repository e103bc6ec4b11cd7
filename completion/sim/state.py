"""One running simulator's state: its settings, truth index, armed faults and counters.

Created before the server starts and shared by every endpoint. Everything here is used from the
server's event loop, except `faults` and `stats`, which are also safe to use from other threads.
"""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

from completion.sim.answers import Answer, Ask, compose_answer
from completion.sim.faults import FaultPlan, Stats
from completion.sim.pacing import Pace, Pacer
from completion.sim.tokens import count_tokens, encoding

if TYPE_CHECKING:
    from completion.sim.settings import Profile, SimSettings
    from completion.sim.truth import TruthIndex

# Prompts longer than this are counted off the event loop (tiktoken releases the GIL while encoding).
_COUNT_IN_THREAD_CHARS = 64_000


class SimState:
    """What every endpoint of one simulator shares."""

    def __init__(self, settings: SimSettings, *, truth: TruthIndex | None) -> None:
        self.settings = settings
        self.truth = truth
        self.faults = FaultPlan(settings.faults)
        self.stats = Stats()
        # Set when the server is stopping: paced and stalled responses end at once instead of holding
        # the shutdown up. Only set from the server's loop (the runner uses call_soon_threadsafe).
        self.stopping = asyncio.Event()
        self._profile = settings.resolved_profile()
        self._requests_seen = 0
        encoding()  # load the tokenizer now, not on the first request

    @property
    def profile(self) -> Profile:
        """This server's profile: every request gets it, whatever `model` it names."""
        return self._profile

    @property
    def model_id(self) -> str:
        return self._profile.model_id

    async def count_prompt_tokens(self, ask: Ask) -> int:
        if len(ask.prompt_text) > _COUNT_IN_THREAD_CHARS:
            return await asyncio.to_thread(count_tokens, ask.prompt_text)
        return count_tokens(ask.prompt_text)

    def answer(self, ask: Ask) -> Answer:
        return compose_answer(
            ask,
            truth=self.truth,
            profile=self._profile.name,
            error_rate=self.settings.error_rate,
            seed=self.settings.seed,
        )

    def pacer_for(self, ask: Ask) -> Pacer:
        """A pacer with this request's timing and its own seeded jitter."""
        profile = self._profile
        # Where prompt caching lands, a cached prefix will shorten the time to first token here.
        pace = Pace(tokens_per_s=profile.tokens_per_s, ttft_ms=profile.ttft_ms, jitter=self.settings.jitter)
        self._requests_seen += 1
        rng = random.Random(self.settings.seed * 1_000_003 + self._requests_seen)
        return Pacer(pace, rng=rng, stop=self.stopping)

    async def stall(self) -> None:
        """Wait as a stalled provider does: until the stall time is over or the server stops."""
        try:
            await asyncio.wait_for(self.stopping.wait(), timeout=self.settings.stall_s)
        except TimeoutError:
            pass
