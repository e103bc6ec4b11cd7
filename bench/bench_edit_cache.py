"""Cached-token share of repeated edits in one file, through tandem's Anthropic backend (`cache_control`).

Edit prompts put stable material first (the context files, then the file, each its own message) and the
volatile part last (the selection and the instruction); the Anthropic backend marks each stable message
with `cache_control`. This sends N edit requests about one real file (a standard-library module, with
another module as context) to `tandem sim`'s `/v1/messages` and reads the usage the backend received, in
two sessions:

    unchanged   N requests before any is applied (different selections and instructions)
    applied     each request's edit applied before the next (the file changes at the last selection)

beside the same requests with the context files and the file in one marked message (the layout before:
a changed file then misses the whole of it), and with no marks at all (the backend before prompt caching;
Anthropic caches nothing unmarked). The simulator's prompt cache is SIMULATED (`sim/prompt_cache.py`:
Anthropic's rules as its guide describes them, whole prefixes ending at a breakpoint or up to 20 blocks
before one, >= 1,024 tokens, 5-minute TTL): the figures show what the prompt layout lets a provider
reuse, not a measurement of Anthropic's service.

    python bench/bench_edit_cache.py [--edits N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sysconfig
from contextlib import aclosing
from pathlib import Path
from typing import Any

from tandem.completion.config.tree import ModelConfig
from tandem.completion.edit.prompt import EditPrompt, edit_messages
from tandem.completion.providers.backends.anthropic import AnthropicBackend
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.http import make_client
from tandem.sim.runner import SimSettings, start_in_thread

STDLIB = Path(sysconfig.get_paths()["stdlib"])
FILE = "asyncio/queues.py"
CONTEXT = "asyncio/locks.py"
INSTRUCTIONS = ("add type hints", "rename the loop variable", "add a docstring", "simplify", "log the size")


class _Unmarked(AnthropicBackend):
    """The backend as it was: no `cache_control` anywhere."""

    def body(self, request: ModelRequest) -> dict[str, object]:
        body = super().body(request)
        system = body.get("system")
        if isinstance(system, list):
            body["system"] = "".join(block["text"] for block in system)
        messages = body["messages"]
        assert isinstance(messages, list)
        body["messages"] = [
            {"role": m["role"], "content": m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]}
            for m in messages
        ]
        return body


def _joined(messages: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """The layout before: the stable user messages (context files, the file) as one message."""
    system, *stable, task = messages
    return (system, ("user", "\n".join(text for _, text in stable)), task)


async def _session(
    base_url: str, *, marked: bool, applied: bool, edits: int, joined: bool = False
) -> list[tuple[int, int]]:
    """(prompt tokens, cached tokens) of each request."""
    text = (STDLIB / FILE).read_text(encoding="utf-8")
    context = {CONTEXT: (STDLIB / CONTEXT).read_text(encoding="utf-8")}
    lines = text.count("\n")
    config = ModelConfig(provider="anthropic", base_url=base_url, model="sim-codex", max_tokens=16)
    seen: list[tuple[int, int]] = []
    async with make_client() as client:
        backend = (AnthropicBackend if marked else _Unmarked)(config, client, env={"ANTHROPIC_API_KEY": "sim"})
        for n in range(edits):
            # Selections spread over the file, from its end towards its start.
            first = max(0, lines - (n + 1) * lines // (edits + 1))
            prompt = EditPrompt(
                path=FILE, text=text, first_line=first, end_line=first + 8, instruction=INSTRUCTIONS[n % 5],
                context=context,
            )  # fmt: skip
            messages = tuple((m["role"], m["content"]) for m in edit_messages(prompt))
            if joined:
                messages = _joined(messages)
            stats = StreamStats()
            request = ModelRequest(prefix="", suffix="", messages=messages, path=FILE, max_tokens=16)
            async with aclosing(backend.stream(request, stats)) as stream:  # type: ignore[type-var]
                async for _ in stream:
                    pass
            seen.append((stats.usage.input_tokens, stats.usage.cached_tokens))
            if applied:
                split = text.splitlines(keepends=True)
                split.insert(first, "    # edited\n")
                text = "".join(split)
    return seen


def _share(seen: list[tuple[int, int]]) -> dict[str, Any]:
    later = seen[1:]
    return {
        "requests": len(seen),
        "prompt_tokens": [p for p, _ in seen],
        "cached_tokens": [c for _, c in seen],
        "cached_share_all": sum(c for _, c in seen) / max(1, sum(p for p, _ in seen)),
        "cached_share_after_first": sum(c for _, c in later) / max(1, sum(p for p, _ in later)),
    }


async def main_async(edits: int) -> dict[str, Any]:
    results: dict[str, Any] = {}
    layouts = (("cache_control", True, False), ("one stable message (before)", True, True), ("no marks", False, False))
    for label, marked, joined in layouts:
        for applied in (False, True):
            # A fresh simulator per session: nothing cached from the one before.
            with start_in_thread(SimSettings(profile="instant", seed=1)) as sim:
                seen = await _session(sim.base_url, marked=marked, applied=applied, edits=edits, joined=joined)
            results[f"{label}, {'applied' if applied else 'unchanged'}"] = _share(seen)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(main_async(args.edits))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"cached-token share, {args.edits} edits in {FILE} (context {CONTEXT}), Anthropic backend -> tandem sim "
        "/v1/messages (SIMULATED prompt cache)"
    )
    for name, r in results.items():
        print(
            f"  {name:<40} after the first request {r['cached_share_after_first']:.0%}, all {r['cached_share_all']:.0%}"
            f"  (prompt tokens {r['prompt_tokens']}, cached {r['cached_tokens']})"
        )


if __name__ == "__main__":
    main()
