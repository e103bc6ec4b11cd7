"""One running simulator's state: its settings, truth index, edit truth, armed faults and counters.

Created before the server starts and shared by every endpoint. Everything here is used from the
server's event loop, except `faults`, `stats` and the edit truth (`set_edit_truth`, `edit_draws`), which
are also safe to use from other threads.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import random
import threading
from collections import deque
from typing import TYPE_CHECKING, Any

from tandem.sim import next_edit
from tandem.sim.answers import FINISH_LENGTH, FINISH_STOP, Answer, Ask, compose_answer
from tandem.sim.edit_reading import read_edit_task
from tandem.sim.edits import EditDraw, EditTruth, answer_edit
from tandem.sim.faults import FaultPlan, Stats
from tandem.sim.pacing import Pace, Pacer
from tandem.sim.prompt_cache import PromptCache, PromptHit
from tandem.sim.request_log import RequestLog
from tandem.sim.tokens import count_tokens, encoding, split_tokens

if TYPE_CHECKING:
    from tandem.sim.edit_reading import EditTask
    from tandem.sim.settings import Profile, SimSettings
    from tandem.sim.truth import TruthIndex

# Prompts longer than this are counted off the event loop (tiktoken releases the GIL while encoding).
_COUNT_IN_THREAD_CHARS = 64_000
# Endpoints whose requests may be edit prompts (conversations); FIM completions never are.
EDIT_ENDPOINTS = frozenset({"chat.completions", "messages", "responses"})
# Edit draws kept for `GET /_sim/edits` (a benchmark reads them after each task).
_DRAWS_KEPT = 10_000


class SimState:
    """What every endpoint of one simulator shares."""

    def __init__(self, settings: SimSettings, *, truth: TruthIndex | None) -> None:
        self.settings = settings
        self.truth = truth
        self.faults = FaultPlan(settings.faults)
        self.stats = Stats()
        # Every generation request's body as it arrived (GET /_sim/requests).
        self.requests = RequestLog()
        # Set when the server is stopping: paced and stalled responses end at once instead of holding
        # the shutdown up. Only set from the server's loop (the runner uses call_soon_threadsafe).
        self.stopping = asyncio.Event()
        self._profile = settings.resolved_profile()
        self._requests_seen = 0
        self._edit_lock = threading.Lock()
        self._edit_truth = EditTruth()
        # Files after the user's real next changes, for next-edit prompts (see tandem.sim.next_edit).
        self.next_edit_truth = next_edit.NextEditTruth()
        # Edit requests seen per prompt (by hash) since the truth was set: a retry is a fresh draw.
        self._edit_attempts: dict[bytes, int] = {}
        self._edit_draws: deque[EditDraw] = deque(maxlen=_DRAWS_KEPT)
        # The last prompt counted: an API that reports input tokens before the answer counts once.
        self._counted: tuple[str, int] = ("", 0)
        # Simulated provider prompt caching (cached_tokens in usage, shorter TTFT): see prompt_cache.py.
        self.prompt_cache = PromptCache()
        # A local server's one slot (`Profile.prompt_tokens_per_s`): one request at a time, and the tokens of
        # the last prompt it read, whose common prefix with the next prompt it need not read again.
        self._slot: asyncio.Lock | None = None
        self._slot_tokens: list[int] = []
        encoding()  # load the tokenizer now, not on the first request

    @property
    def local(self) -> bool:
        """This server plays a model on the user's machine (`Profile.prompt_tokens_per_s` is finite)."""
        return self._profile.prompt_tokens_per_s != float("inf")

    @property
    def slot(self) -> asyncio.Lock:
        if self._slot is None:
            self._slot = asyncio.Lock()
        return self._slot

    def slot_hit(self, ask: Ask) -> PromptHit:
        """Called holding `slot`: how much of `ask`'s prompt the slot holds from the last prompt it read; the
        slot then holds this prompt (read whole: a request stopped while reading is counted as read)."""
        tokens = encoding().encode(ask.prompt_text, disallowed_special=())
        last = self._slot_tokens
        common = 0
        for a, b in zip(tokens, last, strict=False):
            if a != b:
                break
            common += 1
        # llama.cpp evaluates at least one token of every prompt.
        common = min(common, max(len(tokens) - 1, 0))
        self._slot_tokens = tokens
        return PromptHit(prompt_tokens=len(tokens), cached_tokens=common)

    @property
    def profile(self) -> Profile:
        """This server's profile: every request gets it, whatever `model` it names."""
        return self._profile

    @property
    def model_id(self) -> str:
        return self._profile.model_id

    async def count_prompt_tokens(self, ask: Ask) -> int:
        text, count = self._counted
        if text is ask.prompt_text:
            return count
        if len(ask.prompt_text) > _COUNT_IN_THREAD_CHARS:
            count = await asyncio.to_thread(count_tokens, ask.prompt_text)
        else:
            count = count_tokens(ask.prompt_text)
        self._counted = (ask.prompt_text, count)
        return count

    @property
    def edit_truth(self) -> EditTruth:
        return self._edit_truth

    def set_edit_truth(self, truth: EditTruth) -> None:
        """Replace the edit truth; attempts are counted afresh from here (the draws stay until `reset`)."""
        with self._edit_lock:
            self._edit_truth = truth
            self._edit_attempts.clear()

    def edit_draws(self) -> list[dict[str, Any]]:
        """What was drawn for each edit request since the last reset, oldest first (JSON-ready, simulated)."""
        with self._edit_lock:
            return [dataclasses.asdict(draw) for draw in self._edit_draws]

    def reset_edits(self) -> None:
        """Forget the edit draws and attempt counts (the truth stays)."""
        with self._edit_lock:
            self._edit_draws.clear()
            self._edit_attempts.clear()

    def answer(self, ask: Ask) -> Answer:
        next_edit_prompt = next_edit.read_prompt(ask.prompt_text)
        if next_edit_prompt is not None:
            return self._answer_next_edit(ask, next_edit_prompt)
        if ask.endpoint in EDIT_ENDPOINTS and self._edit_truth.files:
            prompt = read_edit_task(ask.prompt_text)
            if prompt is not None:
                return self._answer_edit(ask, prompt)
        return compose_answer(
            ask,
            truth=self.truth,
            profile=self._profile.name,
            error_rate=self.settings.error_rate,
            seed=self.settings.seed,
        )

    def _answer_edit(self, ask: Ask, prompt: EditTask) -> Answer:
        key = hashlib.blake2b(ask.prompt_text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._edit_lock:
            truth = self._edit_truth
            attempt = self._edit_attempts.get(key, 0)
            self._edit_attempts[key] = attempt + 1
        text, draw = answer_edit(
            prompt,
            truth,
            profile=self._profile.name,
            attempt=attempt,
            seed=self.settings.seed,
            prompt_text=ask.prompt_text,
        )
        with self._edit_lock:
            self._edit_draws.append(dataclasses.replace(draw, endpoint=ask.endpoint))
        cut = split_tokens(text, max_tokens=ask.max_tokens)
        return Answer(
            pieces=cut.pieces,
            finish_reason=FINISH_LENGTH if cut.truncated else FINISH_STOP,
            truth_matched=True,
            corrupted=draw.mistake is not None,
        )

    def _answer_next_edit(self, ask: Ask, prompt: next_edit.NextEditPrompt) -> Answer:
        text, known, corrupted = next_edit.answer(
            ask.prompt_text,
            prompt,
            self.next_edit_truth,
            profile=self._profile.name,
            error_rate=self.settings.error_rate,
            seed=self.settings.seed,
        )
        cut = split_tokens(text, max_tokens=ask.max_tokens)
        return Answer(
            pieces=cut.pieces,
            finish_reason=FINISH_LENGTH if cut.truncated else FINISH_STOP,
            truth_matched=known,
            corrupted=corrupted,
        )

    def pacer_for(self, ask: Ask, *, cache: PromptHit | None = None) -> Pacer:
        """A pacer with this request's timing and its own seeded jitter; a cached prompt prefix (`cache`)
        shortens the time to first token."""
        profile = self._profile
        ttft_ms = cache.ttft_ms(profile.ttft_ms) if cache is not None else profile.ttft_ms
        if self.local:
            uncached = cache.prompt_tokens - cache.cached_tokens if cache is not None else 0
            ttft_ms = profile.ttft_ms + 1000.0 * uncached / profile.prompt_tokens_per_s
        pace = Pace(tokens_per_s=profile.tokens_per_s, ttft_ms=ttft_ms, jitter=self.settings.jitter)
        self._requests_seen += 1
        rng = random.Random(self.settings.seed * 1_000_003 + self._requests_seen)
        return Pacer(pace, rng=rng, stop=self.stopping)

    async def stall(self) -> None:
        """Wait as a stalled provider does: until the stall time is over or the server stops."""
        try:
            await asyncio.wait_for(self.stopping.wait(), timeout=self.settings.stall_s)
        except TimeoutError:
            pass
