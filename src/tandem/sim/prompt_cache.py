"""Simulated provider prompt caching: `cached_tokens` in usage and a shorter time to first token.

Real providers keep the processed prefix of recent prompts and reuse it when a new prompt starts the same
way. `tandem sim` models the behaviour OpenAI documents for automatic prompt caching (Cerebras describes
the same scheme), so a benchmark can show what a stable prompt order is worth. The model, all of it
simulated:

    eligible   prompts of at least 1,024 tokens (shorter ones never report cached tokens)
    match      the longest prefix, in tokens, shared with a prompt seen in the last `ttl_s` seconds
               (5 minutes by default; a hit refreshes it), counted as 1,024 tokens plus whole 128-token
               increments: OpenAI's granularity; 0 below 1,024 matching tokens
    scope      one cache per endpoint and model name the client asks for (providers keep one per
               organisation and model, and each API renders a prompt its own way; the simulator serves one
               account)
    TTFT       time to first token x (1 - 0.8 x cached / prompt): prefill of the cached share is skipped,
               and 0.8 leaves the part of TTFT that does not shrink with the prompt (queueing, the network,
               the first decode step). Providers publish "up to 80%" latency savings; this is the same
               ceiling, applied in proportion to the share cached.
    endpoints  OpenAI-shaped ones (chat.completions, completions, responses) cache every prompt;
               Anthropic's /v1/messages caches only what the client marks (`Ask.cache_blocks`, below);
               without a mark it never hits

Anthropic's cache works by breakpoints, as its prompt-caching guide describes: a request writes the prefix
that ends at each block marked `cache_control`, and reads the longest cached prefix that ends at one of its
breakpoints or at one of the 20 block boundaries before one; a prefix matches only whole, block for block
(a file changed in its last line is a miss for the whole block, not a hit up to the change), and only from
1,024 tokens (some models need more).

OpenAI-style prefixes are remembered as a chain of digests, one per boundary (token 1,024, then every 128 tokens):
the digest at a boundary covers every token before it, so a lookup walks the chain until the first
boundary it has not seen. The store is bounded by `max_boundaries`, least recently used first out.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tandem.sim.tokens import encoding

if TYPE_CHECKING:
    from tandem.sim.answers import Ask

MIN_CACHED_TOKENS = 1024
INCREMENT_TOKENS = 128
DEFAULT_TTL_S = 300.0
# The most of the time to first token a fully cached prompt saves (see the module docstring).
TTFT_SAVING = 0.8
CACHING_ENDPOINTS = frozenset({"chat.completions", "completions", "responses"})
# Anthropic: block boundaries before a breakpoint that a lookup also checks.
LOOKBACK_BLOCKS = 20
# ~100 bytes a boundary: 200,000 boundaries are 25 million cached prompt tokens in ~20 MB.
DEFAULT_MAX_BOUNDARIES = 200_000
# Prompts longer than this are encoded off the event loop (tiktoken releases the GIL while encoding).
_ENCODE_IN_THREAD_CHARS = 64_000


@dataclass(frozen=True, kw_only=True)
class PromptHit:
    """What the simulated cache did for one prompt."""

    prompt_tokens: int
    cached_tokens: int

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def ttft_ms(self, base_ttft_ms: float) -> float:
        """The time to first token of a prompt this much of which was cached."""
        return base_ttft_ms * (1.0 - TTFT_SAVING * self.cached_share)


class PromptCache:
    """Recently seen prompt prefixes per endpoint and model. Use from one thread (the simulator's event loop)."""

    def __init__(
        self,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        max_boundaries: int = DEFAULT_MAX_BOUNDARIES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.max_boundaries = max_boundaries
        self._clock = clock
        # (scope, digest of the tokens before a boundary) -> when it was last seen; oldest first.
        self._seen: OrderedDict[tuple[str, bytes], float] = OrderedDict()
        self.prompts = 0
        self.prompt_tokens = 0
        self.cached_tokens = 0

    def __len__(self) -> int:
        return len(self._seen)

    def lookup(self, scope: str, tokens: Sequence[int]) -> int:
        """Tokens of `tokens` (a prompt's token ids) served from the cache of `scope` (an endpoint and
        model); the prompt's prefixes are remembered (or refreshed) for later prompts either way."""
        now = self._clock()
        self._expire(now)
        self.prompts += 1
        self.prompt_tokens += len(tokens)
        if len(tokens) < MIN_CACHED_TOKENS:
            return 0
        cached = 0
        matching = True
        digest = b""
        start = 0
        for boundary in range(MIN_CACHED_TOKENS, len(tokens) + 1, INCREMENT_TOKENS):
            digest = _chain(digest, tokens, start, boundary)
            start = boundary
            key = (scope, digest)
            if matching and key in self._seen:
                cached = boundary
            else:
                matching = False
            self._seen[key] = now
            self._seen.move_to_end(key)
        while len(self._seen) > self.max_boundaries:
            self._seen.popitem(last=False)
        self.cached_tokens += cached
        return cached

    def _expire(self, now: float) -> None:
        # Last-seen times only grow along the order, so the expired entries are all at the front.
        while self._seen:
            key, seen = next(iter(self._seen.items()))
            if now - seen <= self.ttl_s:
                return
            del self._seen[key]

    async def observe(self, ask: Ask, prompt_tokens: int) -> PromptHit:
        """Look `ask`'s prompt up (and remember it); never a hit on endpoints that do not cache. Where only
        marked prefixes are cached (`Ask.cache_blocks`), by Anthropic's rules (see the module docstring)."""
        if ask.cache_blocks is not None:
            cached = await self._lookup_breakpoints(f"{ask.endpoint} {ask.model}", ask.cache_blocks)
            self.prompts += 1
            self.prompt_tokens += prompt_tokens
            self.cached_tokens += min(cached, prompt_tokens)
            return PromptHit(prompt_tokens=prompt_tokens, cached_tokens=min(cached, prompt_tokens))
        if ask.endpoint not in CACHING_ENDPOINTS:
            return PromptHit(prompt_tokens=prompt_tokens, cached_tokens=0)
        if prompt_tokens < MIN_CACHED_TOKENS:
            # Counted, but never encoded again: a short prompt cannot hit.
            self.prompts += 1
            self.prompt_tokens += prompt_tokens
            return PromptHit(prompt_tokens=prompt_tokens, cached_tokens=0)
        if len(ask.prompt_text) > _ENCODE_IN_THREAD_CHARS:
            tokens = await asyncio.to_thread(_encode, ask.prompt_text)
        else:
            tokens = _encode(ask.prompt_text)
        cached = self.lookup(f"{ask.endpoint} {ask.model}", tokens)
        return PromptHit(prompt_tokens=prompt_tokens, cached_tokens=cached)

    async def _lookup_breakpoints(self, scope: str, blocks: Sequence[tuple[str, str, bool]]) -> int:
        """Tokens served by the longest cached prefix ending at a breakpoint or within `LOOKBACK_BLOCKS`
        boundaries before one; then the prefix at every breakpoint is remembered (or refreshed)."""
        now = self._clock()
        self._expire(now)
        marks = [n for n, (_, _, marked) in enumerate(blocks) if marked]
        if not marks:
            return 0
        digests: list[bytes] = []
        h = hashlib.blake2b(digest_size=16)
        for role, text, _ in blocks[: marks[-1] + 1]:
            h.update(f"{len(role)}:{role}{len(text)}:".encode() + text.encode())
            digests.append(h.digest())
        eligible = sorted({n for m in marks for n in range(max(0, m - LOOKBACK_BLOCKS), m + 1)}, reverse=True)
        hit = next((n for n in eligible if (scope, b"bp" + digests[n]) in self._seen), None)
        text = "".join(t for _, t, _ in blocks[: marks[-1] + 1])
        if len(text) > _ENCODE_IN_THREAD_CHARS:
            counts = await asyncio.to_thread(_block_tokens, blocks[: marks[-1] + 1])
        else:
            counts = _block_tokens(blocks[: marks[-1] + 1])
        through = [sum(counts[: n + 1]) for n in range(len(counts))]
        cached = through[hit] if hit is not None and through[hit] >= MIN_CACHED_TOKENS else 0
        for n in [*marks, *([hit] if cached and hit is not None else [])]:
            if through[n] >= MIN_CACHED_TOKENS:
                key = (scope, b"bp" + digests[n])
                self._seen[key] = now
                self._seen.move_to_end(key)
        while len(self._seen) > self.max_boundaries:
            self._seen.popitem(last=False)
        return cached


def _block_tokens(blocks: Sequence[tuple[str, str, bool]]) -> list[int]:
    return [len(_encode(text)) for _, text, _ in blocks]


def _encode(text: str) -> list[int]:
    return encoding().encode_ordinary(text)


def _chain(previous: bytes, tokens: Sequence[int], start: int, end: int) -> bytes:
    """The digest of every token before `end`, given `previous`, the digest of those before `start`."""
    h = hashlib.blake2b(previous, digest_size=16)
    h.update(array("I", tokens[start:end]).tobytes())
    return h.digest()
