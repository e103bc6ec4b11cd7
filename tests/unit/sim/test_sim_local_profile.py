"""The simulator's local-server profile: one slot, and a prompt costs the tokens after its common prefix with
the last one read (over real loopback HTTP, through the simulator's own server)."""

from __future__ import annotations

import json
import time

import httpx
from fixtures_sim import SimFactory

from tandem.sim.prompt_reading import read_fim


def _ask(client: httpx.Client, url: str, prompt: str) -> tuple[float, dict[str, object]]:
    started = time.perf_counter()
    usage: dict[str, object] = {}
    with client.stream(
        "POST",
        f"{url}/completions",
        json={
            "model": "m",
            "prompt": prompt,
            "max_tokens": 2,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as response:
        first = None
        for line in response.iter_lines():
            if first is None and line.startswith("data: {"):
                first = time.perf_counter() - started
            if '"usage"' in line and '"prompt_tokens"' in line:
                usage = json.loads(line[len("data: ") :])["usage"]
    assert first is not None
    return first, usage


def test_a_prompt_that_extends_the_last_one_reads_only_its_new_tokens(sim_factory: SimFactory) -> None:
    body = "".join(f"def f{i}(x):\n    return x * {i}\n" for i in range(60))  # ~1,000 tokens
    sim = sim_factory(profile="llama-0.5b", error_rate=0.0)
    with httpx.Client(timeout=60) as client:
        cold_s, cold = _ask(client, sim.base_url, body)
        warm_s, warm = _ask(client, sim.base_url, body + "def g(")
    details = warm["prompt_tokens_details"]
    assert isinstance(details, dict) and details["cached_tokens"] >= int(str(cold["prompt_tokens"])) - 1
    # ~1,000 tokens at 120 tokens/s: the first prompt was read for seconds (a lower bound holds under load).
    assert cold_s >= 5.0
    del warm_s


def test_a_begun_middle_reads_as_part_of_the_prefix() -> None:
    assert read_fim("<|fim_prefix|>a = <|fim_suffix|>\nprint(a)<|fim_middle|>su") == ("a = su", "\nprint(a)")
    assert read_fim("<|fim_prefix|>a = <|fim_suffix|>\nprint(a)<|fim_middle|>") == ("a = ", "\nprint(a)")
