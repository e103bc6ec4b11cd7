"""`tandem sim`'s simulated prompt caching: eligibility, 128-token increments, TTL, per-model scope, the
shorter time to first token, and `cached_tokens` in every OpenAI-shaped API's usage over loopback HTTP."""

from __future__ import annotations

import inspect
import json
import pathlib
from contextlib import aclosing
from typing import Any

import httpx
import pytest
from fixtures_sim import SimFactory, sse_data

from tandem.completion.config.tree import ModelConfig
from tandem.completion.inline.prompts import chat_messages, completion_request
from tandem.completion.providers.backends.base import StreamStats
from tandem.completion.providers.backends.factory import make_backend
from tandem.completion.providers.http import make_client
from tandem.sim.answers import Ask
from tandem.sim.prompt_cache import (
    INCREMENT_TOKENS,
    MIN_CACHED_TOKENS,
    TTFT_SAVING,
    PromptCache,
    PromptHit,
)
from tandem.sim.runner import SimHandle, SimSettings
from tandem.sim.state import SimState
from tandem.sim.tokens import count_tokens

# Real code nobody here wrote, long enough for a prompt past 1,024 tokens.
CONTEXT = pathlib.Path(inspect.getfile(inspect)).read_text(encoding="utf-8")[:12_000]


class Clock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s


def tokens(n: int, *, start: int = 0) -> list[int]:
    return list(range(start, start + n))


# -- the cache itself --------------------------------------------------------------------------


def test_short_prompts_never_hit() -> None:
    cache = PromptCache()
    prompt = tokens(MIN_CACHED_TOKENS - 1)
    assert cache.lookup("m", prompt) == 0
    assert cache.lookup("m", prompt) == 0


def test_a_repeated_prompt_hits_in_whole_increments_past_1024() -> None:
    cache = PromptCache()
    prompt = tokens(1500)
    assert cache.lookup("m", prompt) == 0  # first sight: nothing cached yet
    # 1,500 tokens: 1,024 + 3 x 128 = 1,408 are whole increments; the last 92 are not cached.
    assert cache.lookup("m", prompt) == 1408
    assert cache.prompts == 2 and cache.cached_tokens == 1408


def test_a_shared_prefix_counts_up_to_the_last_whole_increment_before_the_first_difference() -> None:
    cache = PromptCache()
    cache.lookup("m", tokens(3000))
    # Same first 1,300 tokens, then different: 1,024 + 2 x 128 = 1,280 match.
    changed = tokens(1300) + tokens(1700, start=100_000)
    assert cache.lookup("m", changed) == 1280
    # Agreeing on fewer than 1,024 tokens is a miss, however long the prompts.
    assert cache.lookup("m", tokens(1000) + tokens(2000, start=200_000)) == 0


def test_a_difference_early_in_the_prompt_spoils_everything_after_it() -> None:
    cache = PromptCache()
    prompt = tokens(4096)
    cache.lookup("m", prompt)
    early = [*prompt]
    early[10] = 999_999
    assert cache.lookup("m", early) == 0


def test_the_cache_is_per_model() -> None:
    cache = PromptCache()
    prompt = tokens(2048)
    cache.lookup("fast", prompt)
    assert cache.lookup("other", prompt) == 0
    assert cache.lookup("fast", prompt) == 2048


def test_entries_expire_after_the_ttl_and_a_hit_refreshes_them() -> None:
    clock = Clock()
    cache = PromptCache(ttl_s=300.0, clock=clock)
    prompt = tokens(1024)
    cache.lookup("m", prompt)
    clock.now_s += 299.0
    assert cache.lookup("m", prompt) == 1024  # a hit: seen again now
    clock.now_s += 299.0
    assert cache.lookup("m", prompt) == 1024  # 598 s after the first sight, 299 after the last
    clock.now_s += 301.0
    assert cache.lookup("m", prompt) == 0
    assert len(cache) == 1  # the expired boundary was dropped before the new one was stored


def test_the_store_is_bounded_least_recently_used_first() -> None:
    cache = PromptCache(max_boundaries=3)
    first, second = tokens(1024), tokens(1024, start=50_000)
    cache.lookup("m", tokens(1024 + 2 * INCREMENT_TOKENS, start=90_000))  # three boundaries
    cache.lookup("m", first)
    assert len(cache) == 3
    cache.lookup("m", second)
    assert cache.lookup("m", first) == 1024
    assert cache.lookup("m", second) == 1024


def test_time_to_first_token_shrinks_in_proportion_to_the_cached_share() -> None:
    assert PromptHit(prompt_tokens=2000, cached_tokens=0).ttft_ms(100.0) == 100.0
    assert PromptHit(prompt_tokens=2000, cached_tokens=1000).ttft_ms(100.0) == pytest.approx(
        100 * (1 - TTFT_SAVING / 2)
    )
    assert PromptHit(prompt_tokens=2048, cached_tokens=2048).ttft_ms(100.0) == pytest.approx(100 * (1 - TTFT_SAVING))
    assert PromptHit(prompt_tokens=0, cached_tokens=0).ttft_ms(50.0) == 50.0


def ask(text: str, *, endpoint: str = "chat.completions", model: str = "sim-spark") -> Ask:
    return Ask(endpoint=endpoint, model=model, prefix=text, suffix="", prompt_text=text, max_tokens=8)


async def test_the_simulator_paces_a_cached_prompt_with_the_shorter_time_to_first_token() -> None:
    state = SimState(SimSettings(profile="spark", ttft_ms=200.0), truth=None)
    request = ask(CONTEXT)
    prompt_tokens = count_tokens(CONTEXT)
    first = await state.prompt_cache.observe(request, prompt_tokens)
    second = await state.prompt_cache.observe(request, prompt_tokens)
    assert first.cached_tokens == 0 and second.cached_tokens > 0
    # The pace is the pacer's own; reading it is the only way to see the TTFT without timing a test.
    assert state.pacer_for(request, cache=first)._pace.ttft_ms == 200.0
    assert state.pacer_for(request, cache=second)._pace.ttft_ms == pytest.approx(second.ttft_ms(200.0))
    assert second.ttft_ms(200.0) < 200.0 * (1 - TTFT_SAVING * 0.9)


async def test_anthropic_messages_never_hit_without_cache_control() -> None:
    cache = PromptCache()
    request = ask(CONTEXT, endpoint="messages")
    for _ in range(2):
        hit = await cache.observe(request, count_tokens(CONTEXT))
        assert hit.cached_tokens == 0
    assert len(cache) == 0


# -- over loopback HTTP -----------------------------------------------------------------------


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    return sim_factory(profile="instant")


def chat(sim: SimHandle, prefix: str, **extra: Any) -> dict[str, Any]:
    body = {"model": "sim-spark", "messages": chat_messages(prefix, "\n", path="a.py", context=CONTEXT), **extra}
    with httpx.Client(base_url=sim.base_url) as client:
        if not extra.get("stream"):
            response = client.post("/chat/completions", json={**body, "max_tokens": 8})
            return dict(response.json()["usage"])
        with client.stream("POST", "/chat/completions", json={**body, "max_tokens": 8}) as response:
            return dict(json.loads(sse_data(response.iter_lines())[-2])["usage"])


def test_chat_completions_reports_cached_tokens_for_a_shared_stable_prefix(sim: SimHandle) -> None:
    first = chat(sim, "def f():\n    return 1", stream=True, stream_options={"include_usage": True})
    second = chat(sim, "def f():\n    return 2", stream=True, stream_options={"include_usage": True})
    assert first["prompt_tokens_details"] == {"cached_tokens": 0}
    cached = second["prompt_tokens_details"]["cached_tokens"]
    # The context comes first, so everything up to the changed prefix can be cached, in whole increments.
    assert cached >= MIN_CACHED_TOKENS and (cached - MIN_CACHED_TOKENS) % INCREMENT_TOKENS == 0
    assert cached <= second["prompt_tokens"] - 5
    assert second["prompt_tokens"] - cached < INCREMENT_TOKENS + 40
    # A whole (non-streaming) body reports it the same way.
    assert chat(sim, "def f():\n    return 3")["prompt_tokens_details"]["cached_tokens"] == cached


def test_completions_and_responses_report_cached_tokens_too(sim: SimHandle) -> None:
    with httpx.Client(base_url=sim.base_url) as client:
        bodies = [{"model": "sim-spark", "prompt": CONTEXT + tail, "max_tokens": 4} for tail in ("a", "b")]
        usages = [client.post("/completions", json=body).json()["usage"] for body in bodies]
        assert usages[0]["prompt_tokens_details"]["cached_tokens"] == 0
        assert usages[1]["prompt_tokens_details"]["cached_tokens"] >= MIN_CACHED_TOKENS
        inputs = [{"model": "sim-spark", "input": CONTEXT + tail, "max_output_tokens": 16} for tail in ("a", "b")]
        usages = [client.post("/responses", json=body).json()["usage"] for body in inputs]
        assert usages[0]["input_tokens_details"]["cached_tokens"] == 0
        assert usages[1]["input_tokens_details"]["cached_tokens"] >= MIN_CACHED_TOKENS


async def test_tandems_chat_backend_reads_the_cached_tokens(sim: SimHandle) -> None:
    config = ModelConfig(provider="openai-chat", base_url=sim.base_url, model="sim-spark", max_tokens=8)
    seen: list[int] = []
    async with make_client() as client:
        backend = make_backend(config, client, env={})
        for end in ("1", "2"):
            stats = StreamStats()
            request = completion_request(config, prefix=f"x = {end}", suffix="\n", context=CONTEXT, path="a.py")
            async with aclosing(backend.stream(request, stats)) as stream:  # type: ignore[type-var]
                async for _ in stream:
                    pass
            seen.append(stats.usage.cached_tokens)
    assert seen[0] == 0 and seen[1] >= MIN_CACHED_TOKENS
