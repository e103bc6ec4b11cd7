"""A whole replay: sources -> simulator (unless a provider is given) -> `tandem serve` -> sessions -> summary.

Without a base URL the simulator runs in this process (truth = the replayed files), and `time_scale`
applies to it too: its time to first token is multiplied and its token rate divided by the same factor
as the typist's pauses, so a replay at time scale 0.25 is the same race between typist and model as one
in real time, four times as fast. The server's debounce is scaled the same way. A real provider cannot
be sped up: with a base URL only the typist and the debounce are.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import math
import os
import pathlib
import random
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tandem.completion.config.tree import CompletionConfig
from tandem.eval.replay.client import ReplayClient
from tandem.eval.replay.keystrokes import Rhythm
from tandem.eval.replay.session import Progress, Tally, type_span
from tandem.eval.replay.sources import Task, make_tasks, sample_files
from tandem.eval.replay.summary import Provider, Summary, build_summary
from tandem.eval.trace_report import TraceFile, read_trace

# How long to wait, after the last session, for the server to write the last trace records.
_TRACE_WAIT_S = 10.0
_TRACE_POLL_S = 0.02


@dataclass(frozen=True, kw_only=True)
class ReplayOptions:
    files: tuple[pathlib.Path, ...] = ()
    sessions: int = 6
    seed: int = 0
    time_scale: float = 0.25
    chars_per_s: float = 6.0
    # A provider to use instead of the built-in simulator.
    base_url: str = ""
    model: str = ""
    provider: str = "openai-chat"
    api_key_env: str = ""
    fim_template: str = ""
    local: bool = False
    # The built-in simulator's speed profile and the chance that a truth answer is wrong.
    profile: str = "spark"
    error_rate: float = 0.1
    max_tokens: int = 96
    trace_path: pathlib.Path | None = None
    # Stop typing after this many seconds (the demo's budget); None: type every span to its end.
    budget_s: float | None = None
    # Settings merged over the replay's own initializationOptions (e.g. a strategy's completion settings).
    settings: Mapping[str, Any] = field(default_factory=dict)
    # A patient typist waits for every answer before the next key (tests: no race with the model).
    patient: bool = False
    # Before typing in each file, wait up to this long for a completion at the cursor (the user reading the
    # file; not counted as a key). 0: start typing at once.
    warm_s: float = 0.0
    # Before typing in each file, rest the cursor this long (the user looking at the file), telling the server
    # where it rests (`tandem/warm`, as the VS Code extension does) unless `rest_warm` is off. 0: no rest.
    rest_s: float = 0.0
    rest_warm: bool = True


def default_trace_path() -> pathlib.Path:
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    return pathlib.Path(tempfile.gettempdir()) / "tandem-replay" / f"trace-{stamp}-{os.getpid()}.jsonl"


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        current = merged.get(key)
        merged[key] = _merge(current, value) if isinstance(current, dict) and isinstance(value, Mapping) else value
    return merged


def _start_sim(options: ReplayOptions, tasks: list[Task]) -> tuple[Any, Provider]:
    """The in-process simulator, sped up by the time scale, and how it is labelled."""
    from tandem.sim.runner import SimSettings, start_in_thread
    from tandem.sim.settings import PROFILES

    profile = PROFILES[options.profile]
    truth = tuple(sorted({str(task.path) for task in tasks}))
    settings = SimSettings(
        profile=options.profile,
        truth=truth,
        tokens_per_s=profile.tokens_per_s / options.time_scale,
        ttft_ms=profile.ttft_ms * options.time_scale,
        jitter=0.2,
        error_rate=options.error_rate,
        seed=options.seed,
    )
    handle = start_in_thread(settings)
    from tandem.sim.local_errors import calibrated

    rate = "unpaced" if math.isinf(profile.tokens_per_s) else f"{profile.tokens_per_s:g} tokens/s"
    errors = f"error rate {options.error_rate:g}"
    if calibrated(options.profile) and options.error_rate > 0:
        errors = "error model fitted to the real model"
    label = (
        f"simulated provider (tandem sim, profile {profile.name}: {rate}, {profile.ttft_ms:g} ms to first token, "
        f"{errors}; run at time scale {options.time_scale:g})"
    )
    return handle, Provider(simulated=True, label=label, base_url=handle.base_url, model=profile.model_id)


def _read_new_records(path: pathlib.Path, offset: int) -> TraceFile:
    return read_trace(path, offset_bytes=offset) if path.exists() else TraceFile(records=[], bad_lines=0)


async def _wait_for_trace(path: pathlib.Path, offset: int, expected: int) -> None:
    """Return once the run's trace holds `expected` inline records (or the wait runs out)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + _TRACE_WAIT_S
    while True:
        trace = await asyncio.to_thread(_read_new_records, path, offset)
        if sum(1 for r in trace.records if r.get("kind") == "inline") >= expected or loop.time() >= give_up:
            return
        # sleep-ok: the server appends records from another process; there is no event to wait on.
        await asyncio.sleep(_TRACE_POLL_S)


async def replay(
    options: ReplayOptions, *, tasks: list[Task] | None = None, progress: Progress | None = None
) -> Summary:
    """Run a replay as `options` say (or of the given `tasks`); raises SourceError, SimConfigError,
    ServerFailed, TraceReadError."""
    if tasks is None:
        paths = list(options.files) or sample_files(options.sessions, seed=options.seed)
        tasks = make_tasks(paths, options.sessions, seed=options.seed)
    trace_path = options.trace_path or default_trace_path()
    trace_path.parent.mkdir(parents=True, exist_ok=True)
    offset = trace_path.stat().st_size if trace_path.exists() else 0

    sim = None
    if options.base_url:
        label = f"{options.provider} at {options.base_url} (model {options.model or 'default'})"
        if options.local:
            label += ", on this machine"
        provider = Provider(
            simulated=False, label=label, base_url=options.base_url, model=options.model, local=options.local
        )
    else:
        sim, provider = await asyncio.to_thread(_start_sim, options, tasks)
    model: dict[str, Any] = {
        "provider": options.provider,
        "base_url": provider.base_url,
        "model": provider.model,
        "max_tokens": options.max_tokens,
    }
    if sim is not None and _local_profile(options.profile):
        # A simulated local server is asked as the real one is (`tandem local serve`'s settings).
        model.update(provider="fim", fim_template="qwen2.5-coder", local=True)
        provider = dataclasses.replace(provider, local=True)
    if options.api_key_env:
        model["api_key_env"] = options.api_key_env
    if options.fim_template:
        model["fim_template"] = options.fim_template
    if options.local:
        model["local"] = True
    # The server's own debounce, scaled like the typist: a keystroke gap means the same at any time scale.
    debounce_ms = round(CompletionConfig().debounce_ms * options.time_scale)
    init = _merge({"models": {"fast": model}, "completion": {"debounce_ms": debounce_ms}}, options.settings)

    counts_before = await asyncio.to_thread(_server_counts, options)
    tally = Tally(planned_chars=sum(len(task.span) for task in tasks))
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tandem-replay-") as empty:
        # The user's own config.toml must not change what a replay measures.
        env = {**os.environ, "XDG_CONFIG_HOME": empty}
        client = ReplayClient(trace_path=trace_path, env=env)
        try:
            await client.start(init)
            loop = asyncio.get_running_loop()
            stop_at = loop.time() + options.budget_s if options.budget_s is not None else None
            rhythm = Rhythm(chars_per_s=options.chars_per_s, time_scale=options.time_scale)
            for index, task in enumerate(tasks):
                if stop_at is not None and loop.time() >= stop_at:
                    break
                rng = random.Random(f"tandem-replay-typist:{options.seed}:{index}")
                await type_span(
                    client,
                    task,
                    rhythm=rhythm,
                    rng=rng,
                    tally=tally,
                    stop_at=stop_at,
                    patient=options.patient,
                    warm_s=options.warm_s,
                    rest_s=options.rest_s * options.time_scale,
                    rest_warm=options.rest_warm,
                    progress=progress,
                )
            # Every request's record first; then, once the server has exited, whatever else it wrote
            # (records of speculative streams end with the server at the latest).
            await _wait_for_trace(trace_path, offset, tally.requests)
        finally:
            await client.stop()
            if sim is not None:
                await asyncio.to_thread(sim.stop)
    trace = await asyncio.to_thread(_read_new_records, trace_path, offset)
    counts_after = await asyncio.to_thread(_server_counts, options)
    server_prompt = None
    if counts_before is not None and counts_after is not None:
        server_prompt = (counts_after[0] - counts_before[0], counts_after[1] - counts_before[1])
    return build_summary(
        server_prompt_tokens=server_prompt,
        tally=tally,
        trace=trace,
        trace_path=trace_path,
        provider=provider,
        files=[task.path for task in tasks[: max(tally.sessions, 1)]],
        time_scale=options.time_scale,
        duration_s=time.perf_counter() - started,
    )


def _server_counts(options: ReplayOptions) -> tuple[int, int] | None:
    """A local llama-server's own prompt-token counters (read, served from its cache), if it exposes them."""
    if not (options.local and options.base_url):
        return None
    from tandem.local.servers import prompt_counts

    return prompt_counts(options.base_url)


def _local_profile(name: str) -> bool:
    """Whether the simulator's profile `name` plays a local server (its prompt reading is paced)."""
    from tandem.sim.settings import PROFILES

    return not math.isinf(PROFILES[name].prompt_tokens_per_s)
