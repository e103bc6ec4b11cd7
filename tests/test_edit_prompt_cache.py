"""Prompt caching of edit prompts through the Anthropic backend: `cache_control` on the stable part, and
the simulator's `/v1/messages` serving that prefix from its (simulated) cache, over loopback HTTP."""

from __future__ import annotations

import inspect
import pathlib
from contextlib import aclosing

import httpx
from fixtures_sim import SimFactory
from tandem.completion.backends.anthropic import AnthropicBackend
from tandem.completion.backends.base import ModelRequest, StreamStats
from tandem.completion.config import ModelConfig
from tandem.completion.edits import EditPrompt, edit_messages
from tandem.completion.http import make_client
from tandem.sim.prompt_cache import MIN_CACHED_TOKENS

# Real code nobody here wrote: a file long enough for a prompt past 1,024 tokens.
TEXT = pathlib.Path(inspect.getfile(inspect)).read_text(encoding="utf-8")[:12_000]


def request(first_line: int, instruction: str) -> ModelRequest:
    prompt = EditPrompt(path="inspect.py", text=TEXT, first_line=first_line, end_line=first_line + 5,
                        instruction=instruction, context={"other.py": "def helper():\n    return 1\n"})  # fmt: skip
    messages = tuple((m["role"], m["content"]) for m in edit_messages(prompt))
    return ModelRequest(prefix="", suffix="", messages=messages, path="inspect.py", max_tokens=8)


def test_the_stable_part_is_marked_and_the_last_message_is_not() -> None:
    backend = AnthropicBackend(ModelConfig(provider="anthropic", base_url="http://x.invalid/v1"), httpx.AsyncClient())
    body = backend.body(request(10, "add type hints"))
    [system] = body["system"]  # type: ignore[misc]
    assert system["cache_control"] == {"type": "ephemeral"}
    stable, task = body["messages"]  # type: ignore[misc]
    assert stable["content"][0]["cache_control"] == {"type": "ephemeral"} and TEXT[:200] in stable["content"][0]["text"]
    assert isinstance(task["content"], str) and "add type hints" in task["content"]


async def test_a_second_edit_in_the_same_file_reads_the_stable_part_from_the_cache(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    config = ModelConfig(provider="anthropic", base_url=sim.base_url, model="sim-codex", max_tokens=8)
    usages = []
    async with make_client() as client:
        backend = AnthropicBackend(config, client, env={"ANTHROPIC_API_KEY": "sim"})
        for first_line, instruction in ((200, "add type hints"), (40, "rename the loop variable")):
            stats = StreamStats()
            async with aclosing(backend.stream(request(first_line, instruction), stats)) as stream:  # type: ignore[type-var]
                async for _ in stream:
                    pass
            usages.append(stats.usage)
    assert usages[0].cached_tokens == 0
    # Everything but the selection and the instruction came from the cache (in 128-token increments).
    assert usages[1].cached_tokens >= MIN_CACHED_TOKENS
    assert usages[1].cached_tokens / usages[1].input_tokens > 0.9


def test_unmarked_messages_are_never_cached(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    body = {"model": "sim-codex", "max_tokens": 8, "messages": [{"role": "user", "content": TEXT}]}
    headers = {"anthropic-version": "2023-06-01"}
    with httpx.Client(base_url=sim.base_url) as client:
        usages = [client.post("/messages", json=body, headers=headers).json()["usage"] for _ in range(2)]
    assert [u["cache_read_input_tokens"] for u in usages] == [0, 0]
