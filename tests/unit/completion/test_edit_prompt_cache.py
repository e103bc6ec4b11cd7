"""Prompt caching of edit prompts through the Anthropic backend: `cache_control` on each stable part, and
the simulator's `/v1/messages` serving marked prefixes from its (simulated) cache by Anthropic's rules
(whole prefixes ending at a breakpoint), over loopback HTTP."""

from __future__ import annotations

import inspect
import pathlib
from contextlib import aclosing

import httpx
from fixtures_sim import SimFactory

from tandem.completion.config.tree import ModelConfig
from tandem.completion.edit.prompt import EditPrompt, edit_messages
from tandem.completion.providers.backends.anthropic import AnthropicBackend
from tandem.completion.providers.backends.base import ModelRequest, StreamStats, Usage
from tandem.completion.providers.http import make_client
from tandem.sim.prompt_cache import MIN_CACHED_TOKENS

# Real code nobody here wrote: a file long enough for a prompt past 1,024 tokens.
TEXT = pathlib.Path(inspect.getfile(inspect)).read_text(encoding="utf-8")[:12_000]


HELPER = "def helper():\n    return 1\n"


def request(first_line: int, instruction: str, *, text: str = TEXT, context: str = HELPER) -> ModelRequest:
    prompt = EditPrompt(path="inspect.py", text=text, first_line=first_line, end_line=first_line + 5,
                        instruction=instruction, context={"other.py": context})  # fmt: skip
    messages = tuple((m["role"], m["content"]) for m in edit_messages(prompt))
    return ModelRequest(prefix="", suffix="", messages=messages, path="inspect.py", max_tokens=8)


def test_each_stable_part_is_marked_and_the_last_message_is_not() -> None:
    backend = AnthropicBackend(ModelConfig(provider="anthropic", base_url="http://x.invalid/v1"), httpx.AsyncClient())
    body = backend.body(request(10, "add type hints"))
    [system] = body["system"]  # type: ignore[misc]
    assert system["cache_control"] == {"type": "ephemeral"}
    context, file, task = body["messages"]  # type: ignore[misc]
    assert context["content"][0]["cache_control"] == {"type": "ephemeral"} and HELPER in context["content"][0]["text"]
    assert file["content"][0]["cache_control"] == {"type": "ephemeral"} and TEXT[:200] in file["content"][0]["text"]
    assert isinstance(task["content"], str) and "add type hints" in task["content"]


async def _usages(sim_url: str, requests: list[ModelRequest]) -> list[Usage]:
    config = ModelConfig(provider="anthropic", base_url=sim_url, model="sim-codex", max_tokens=8)
    usages = []
    async with make_client() as client:
        backend = AnthropicBackend(config, client, env={"ANTHROPIC_API_KEY": "sim"})
        for one in requests:
            stats = StreamStats()
            async with aclosing(backend.stream(one, stats)) as stream:  # type: ignore[type-var]
                async for _ in stream:
                    pass
            usages.append(stats.usage)
    return usages


async def test_a_second_edit_in_the_same_file_reads_the_stable_part_from_the_cache(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    usages = await _usages(sim.base_url, [request(200, "add type hints"), request(40, "rename the loop variable")])
    assert usages[0].cached_tokens == 0
    # Everything but the selection and the instruction came from the cache.
    assert usages[1].cached_tokens >= MIN_CACHED_TOKENS
    assert usages[1].cached_tokens / usages[1].input_tokens > 0.9


async def test_after_an_edit_to_the_file_only_the_context_before_it_is_served(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    # The context file is long enough to be cached on its own; the edited file changes in its last line.
    edited = HELPER * 40
    first, changed = (
        request(2, "add type hints", text=edited, context=TEXT),
        request(2, "add type hints", text=edited + "X = 1\n", context=TEXT),
    )
    usages = await _usages(sim.base_url, [first, changed, changed])
    context_only = usages[1].cached_tokens
    assert usages[0].cached_tokens == 0
    # Served whole up to the context file's breakpoint, not up to the change inside the file's block.
    assert MIN_CACHED_TOKENS <= context_only < usages[1].input_tokens - len(edited) // 8
    assert usages[2].cached_tokens > context_only  # the changed file's own breakpoint was written


def test_a_marked_block_is_served_only_whole(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    headers = {"anthropic-version": "2023-06-01"}

    def body(marked: str) -> dict[str, object]:
        block = {"type": "text", "text": marked, "cache_control": {"type": "ephemeral"}}
        return {"model": "sim-codex", "max_tokens": 8, "messages": [
            {"role": "user", "content": [block]}, {"role": "user", "content": "and now?"}]}  # fmt: skip

    with httpx.Client(base_url=sim.base_url) as client:
        usages = [
            client.post("/messages", json=body(text), headers=headers).json()["usage"]
            for text in (TEXT, TEXT, TEXT[:-1] + "#", TEXT + "\n# more")
        ]
    assert usages[1]["cache_read_input_tokens"] > MIN_CACHED_TOKENS  # the same block: a hit
    # One character changed at its end, or text added after it: the block is no longer the same, so
    # nothing is served (Anthropic matches whole blocks; an OpenAI-style cache would serve the shared part).
    assert usages[2]["cache_read_input_tokens"] == 0
    assert usages[3]["cache_read_input_tokens"] == 0


def test_unmarked_messages_are_never_cached(sim_factory: SimFactory) -> None:
    sim = sim_factory(profile="instant")
    body = {"model": "sim-codex", "max_tokens": 8, "messages": [{"role": "user", "content": TEXT}]}
    headers = {"anthropic-version": "2023-06-01"}
    with httpx.Client(base_url=sim.base_url) as client:
        usages = [client.post("/messages", json=body, headers=headers).json()["usage"] for _ in range(2)]
    assert [u["cache_read_input_tokens"] for u in usages] == [0, 0]
