"""`tandem check`: before opening an editor, ask each configured model what tandem will ask of it.

For `[models.fast]` and `[models.accurate]` of the user's config (or `--config FILE`), through the same
backends `tandem serve` uses:

- **answers**: a short completion comes back (or the error, in words);
- **first token** and **tokens/s**: from a 64-token answer;
- **prompt cache**: the same ~1,000-token prompt twice; the second's first token and the provider's count of
  cached tokens say whether the server kept what it read (a local server that does not is unusable);
- **fill-in-the-middle**: `total = ▮(values)` must be filled with a name that fits before `(values)`. A model
  that never saw the suffix writes the call out; one that saw it and repeats it is reported too.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import pathlib
import sys
import time
import tomllib
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

from tandem.completion.config.tree import Config, Layer, ModelConfig, merge_layers
from tandem.completion.inline.answer import answer_cleaner
from tandem.completion.inline.prompts import completion_request
from tandem.completion.providers.backends.base import StreamStats
from tandem.completion.providers.backends.factory import describe_model, make_backend
from tandem.completion.providers.errors import CompletionError, describe

FIM_PREFIX = "values = [4, 8, 15, 16, 23, 42]\ntotal = "
FIM_SUFFIX = "(values)\nprint(total)\n"
# Names that fit before `(values)` on the right of `total =`.
FIM_FITS = ("sum", "len", "max", "min", "sorted", "list", "tuple", "float", "int", "math.fsum", "statistics.mean")
_CACHE_PROMPT_LINES = 40
CHECK_TIMEOUT_S = 120.0


@dataclass(kw_only=True)
class ModelCheck:
    tier: str
    model: str
    answers: bool = False
    error: str = ""
    first_token_ms: float | None = None
    tokens_per_s: float | None = None
    cold_first_token_ms: float | None = None
    warm_first_token_ms: float | None = None
    cached_tokens: int | None = None
    prompt_tokens: int | None = None
    fim: str = ""
    fim_answer: str = ""
    notes: list[str] = field(default_factory=list)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=pathlib.Path, help="a config.toml (default: the user's)")
    parser.add_argument("--json", action="store_true", help="print JSON")


def _user_config_path() -> pathlib.Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(pathlib.Path.home() / ".config")
    return pathlib.Path(base) / "tandem" / "config.toml"


def load_config(path: pathlib.Path | None) -> Config:
    path = path or _user_config_path()
    try:
        values = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise SystemExit(f"tandem check: error: cannot read {path}: {error}") from None
    config, problems = merge_layers([Layer(str(path), values)])
    for problem in problems:
        sys.stderr.write(f"tandem check: {problem}\n")
    return config


async def _ask(
    model: ModelConfig, client: httpx.AsyncClient, prefix: str, suffix: str, *, max_tokens: int
) -> tuple[str, StreamStats, float]:
    """A completion between `prefix` and `suffix`, asked and cleaned as `tandem serve` asks and cleans one."""
    asked = dataclasses.replace(model, max_tokens=max_tokens, temperature=0.0)
    request = completion_request(asked, prefix=prefix, suffix=suffix)
    cleaner = answer_cleaner(request)
    backend = make_backend(model, client)
    stats = StreamStats()
    started = time.perf_counter_ns()
    text = ""
    try:
        async for chunk in backend.stream(request, stats):
            text += chunk if cleaner is None else cleaner.feed(chunk)
    finally:
        await backend.aclose()
    if cleaner is not None:
        text += cleaner.finish()
    sent = stats.request_sent_ns or started
    first = stats.first_token_ns
    return text, stats, (first - sent) / 1e6 if first else float("nan")


def _cache_prompt() -> str:
    """About 1,000 tokens (cl100k) / 900 (Qwen) of plain Python that no model has cached."""
    stamp = time.time_ns()
    rows = [
        f"def step_{i}_{stamp % 9973}(value):\n    return value * {i} + {i * 7 % 13}\n"
        for i in range(_CACHE_PROMPT_LINES)
    ]
    return "".join(rows) + "\ndef step_total(value):\n    return "


async def check_model(tier: str, model: ModelConfig) -> ModelCheck:
    result = ModelCheck(tier=tier, model=describe_model(model))
    # A local server reads ~100 tokens/s: the ~1,000-token prompt may take it 10 s before its first token.
    model = dataclasses.replace(model, timeout_s=max(model.timeout_s, CHECK_TIMEOUT_S))
    timeout = httpx.Timeout(model.timeout_s, connect=model.connect_timeout_s)
    async with httpx.AsyncClient(timeout=timeout) as client:
        try:
            text, stats, ttft = await _ask(model, client, "def add(a, b):\n    return ", "\n", max_tokens=64)
        except CompletionError as error:
            result.error = describe(error)
            return result
        result.answers = bool(text.strip())
        result.first_token_ms = round(ttft, 1)
        if stats.first_token_ns and stats.usage.output_tokens > 1:
            # Tokens after the first, over the time after the first (the stream ended just now).
            elapsed_s = (time.perf_counter_ns() - stats.first_token_ns) / 1e9
            result.tokens_per_s = round((stats.usage.output_tokens - 1) / max(elapsed_s, 1e-6), 1)
        prompt = _cache_prompt()
        try:
            cold = await _ask(model, client, prompt, "\n", max_tokens=8)
            warm = await _ask(model, client, prompt, "\n", max_tokens=8)
        except CompletionError as error:
            result.notes.append(f"prompt-cache check failed: {describe(error)}")
        else:
            result.cold_first_token_ms, result.warm_first_token_ms = round(cold[2], 1), round(warm[2], 1)
            result.prompt_tokens = warm[1].usage.input_tokens or None
            result.cached_tokens = warm[1].usage.cached_tokens
        try:
            fim_text, _, _ = await _ask(model, client, FIM_PREFIX, FIM_SUFFIX, max_tokens=24)
        except CompletionError as error:
            result.fim = f"failed: {describe(error)}"
        else:
            result.fim_answer = fim_text[:60]
            result.fim = judge_fim(fim_text)
    return result


def judge_fim(answer: str) -> str:
    """'works', 'works, then repeats the suffix', 'ignores the suffix' or 'wrong'."""
    head = answer.strip().split("\n", 1)[0]
    name = head.split("(", 1)[0].strip()
    if name in FIM_FITS and "(" not in head:
        return "works"
    if name in FIM_FITS and head.startswith(name + "(values)"):
        rest = answer.strip()[len(name) :]
        if rest.startswith(FIM_SUFFIX.strip()[: len("(values)")]) and "print(total)" in rest:
            return "works, then repeats the suffix (tandem trims a repeated suffix)"
        return "ignores the suffix (it writes the call itself)"
    return "wrong (no name that fits before the suffix)"


def _format(checks: list[ModelCheck]) -> str:
    lines = []
    for c in checks:
        lines.append(f"[models.{c.tier}] {c.model}")
        if c.error:
            lines.append(f"  does not answer: {c.error}")
            continue
        lines.append(f"  answers:                 {'yes' if c.answers else 'empty answer'}")
        lines.append(f"  first token:             {c.first_token_ms} ms")
        lines.append(f"  tokens/s:                {c.tokens_per_s if c.tokens_per_s is not None else '-'}")
        cache = f"{c.cold_first_token_ms} ms first, {c.warm_first_token_ms} ms again" + (
            f" ({c.cached_tokens} of {c.prompt_tokens} prompt tokens cached)" if c.prompt_tokens else ""
        )
        lines.append(f"  prompt cache (same ~1,000-token prompt twice): {cache}")
        lines.append(f"  fill-in-the-middle:      {c.fim} (answered {c.fim_answer!r})")
        lines += [f"  note: {note}" for note in c.notes]
    return "\n".join(lines) + "\n"


def run_check(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    models = [(tier, getattr(config.models, tier)) for tier in ("fast", "accurate")]
    models = [(tier, model) for tier, model in models if model is not None and model.base_url]
    if not models:
        sys.stderr.write("tandem check: no model is configured ([models.fast] / [models.accurate] with a base_url)\n")
        return 1
    checks = [asyncio.run(check_model(tier, model)) for tier, model in models]
    if args.json:
        payload: list[dict[str, Any]] = [asdict(c) for c in checks]
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        sys.stdout.write(_format(checks))
    return 0 if all(c.answers for c in checks) else 1
