"""What the replay benchmarks share: real files to type, a simulator sped up like the typist, one replay
run per strategy with the client's tally, the server's trace and the provider's own counts.

Not a benchmark itself (bench_strategies.py and bench_prompt_cache.py import it). Every model answer comes
from `tandem sim` running in this process, so every figure is against a simulated provider.
"""

from __future__ import annotations

import os
import pathlib
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

from lsprotocol import types  # noqa: E402

from tandem.eval.edit_cost import cost_usd  # noqa: E402
from tandem.eval.replay.client import ReplayClient  # noqa: E402
from tandem.eval.replay.runner import ReplayOptions, replay  # noqa: E402
from tandem.eval.replay.session import Tally  # noqa: E402
from tandem.eval.replay.sources import Task, make_tasks, sample_files  # noqa: E402
from tandem.eval.replay.summary import without_model_wait  # noqa: E402
from tandem.eval.trace_report import percentile, read_trace  # noqa: E402
from tandem.sim.runner import SimHandle, SimSettings, start_in_thread  # noqa: E402
from tandem.sim.settings import PROFILES  # noqa: E402

# This repository's own Python, as the replay's standard-library sample filters it (4 KB to 120 KB).
REPO_DIRS = ("src/tandem/cache", "src/tandem/completion", "src/tandem/lsp")
_MIN_BYTES, _MAX_BYTES = 4_000, 120_000


class RootedClient(ReplayClient):
    """The replay client, naming a workspace folder at initialize as an editor with a folder open does
    (`tandem.eval.replay` names none; a `root` option there would make this wrapper unnecessary)."""

    def __init__(self, *, root: pathlib.Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        client = self._client
        initialize = client.initialize_async

        async def with_root(params: types.InitializeParams) -> types.InitializeResult:
            params.root_uri = root.as_uri()
            params.workspace_folders = [types.WorkspaceFolder(uri=root.as_uri(), name=root.name)]
            return await initialize(params)

        client.initialize_async = with_root  # type: ignore[method-assign]


def repo_files() -> list[pathlib.Path]:
    found = []
    for directory in REPO_DIRS:
        for path in sorted((ROOT / directory).rglob("*.py")):
            if "__pycache__" not in path.parts and _MIN_BYTES <= path.stat().st_size <= _MAX_BYTES:
                found.append(path)
    return found


def pick_tasks(*, stdlib_sessions: int, repo_sessions: int, seed: int) -> list[Task]:
    """Spans to type: from a seeded sample of the standard library, then of this repository's own files."""
    tasks: list[Task] = []
    if stdlib_sessions:
        tasks += make_tasks(sample_files(stdlib_sessions, seed=seed), stdlib_sessions, seed=seed)
    if repo_sessions:
        pool = repo_files()
        paths = random.Random(f"tandem-bench-repo:{seed}").sample(pool, min(repo_sessions, len(pool)))
        tasks += make_tasks(paths, repo_sessions, seed=seed)
    return tasks


def scaled_sim(
    truth: list[pathlib.Path], *, profile: str, time_scale: float, error_rate: float, seed: int, jitter: float = 0.2
) -> SimHandle:
    """A simulator in this process answering from `truth`, its clock scaled like the replay's typist
    (as `tandem replay` scales its built-in one)."""
    base = PROFILES[profile]
    settings = SimSettings(
        profile=profile,
        truth=tuple(sorted({str(p) for p in truth})),
        tokens_per_s=base.tokens_per_s / time_scale,
        ttft_ms=base.ttft_ms * time_scale,
        jitter=jitter,
        error_rate=error_rate,
        seed=seed,
    )
    return start_in_thread(settings)


def sim_label(profile: str, *, time_scale: float, error_rate: float) -> str:
    base = PROFILES[profile]
    return (
        f"simulated provider (tandem sim, profile {base.name}: {base.tokens_per_s:g} tokens/s, {base.ttft_ms:g} ms "
        f"to first token, jitter 0.2, error rate {error_rate:g}, simulated prompt caching; all of it run at time "
        f"scale {time_scale:g})"
    )


@dataclass
class Provider:
    """The simulator's own counts for a run (deltas over the run)."""

    completion_tokens: int = 0
    prompts: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0


def provider_counts(sim: SimHandle) -> Provider:
    cache = sim.state.prompt_cache
    return Provider(
        completion_tokens=int(sim.stats()["completion_tokens_sent"]),
        prompts=cache.prompts,
        prompt_tokens=cache.prompt_tokens,
        cached_tokens=cache.cached_tokens,
    )


@dataclass
class Totals:
    """One strategy's runs, merged: the client's tallies, the server's trace records, the provider's counts."""

    name: str
    settings: Mapping[str, Any]
    tallies: list[Tally] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    provider: Provider = field(default_factory=Provider)
    duration_s: float = 0.0
    trace_path: pathlib.Path | None = None
    notes: list[str] = field(default_factory=list)

    def add(self, tally: Tally, records: list[dict[str, Any]], before: Provider, after: Provider) -> None:
        self.tallies.append(tally)
        self.records += records
        p = self.provider
        p.completion_tokens += after.completion_tokens - before.completion_tokens
        p.prompts += after.prompts - before.prompts
        p.prompt_tokens += after.prompt_tokens - before.prompt_tokens
        p.cached_tokens += after.cached_tokens - before.cached_tokens

    def total(self, name: str) -> int:
        return sum(int(getattr(t, name)) for t in self.tallies)

    def figures(self) -> dict[str, Any]:
        latencies = [ms for t in self.tallies for ms in t.latencies_ms]
        hits, inline = without_model_wait(self.records)
        # The same, counting only answers that showed something (an empty answer at once counts above).
        shown_hits = sum(
            1
            for r in self.records
            if r.get("kind") == "inline"
            and r.get("source") in ("stream", "cache")
            and r.get("waited_for_model") is False
            and r.get("outcome") == "shown"
        )
        presses, unassisted = self.total("key_presses"), self.total("key_presses_unassisted")
        accepted_chars = self.total("accepted_chars")
        traced_out = sum(_tokens(r, "out") for r in self.records)
        prefetch_out = sum(_tokens(r, "out") for r in self.records if r.get("kind") == "prefetch")
        sources: dict[str, int] = {}
        for r in self.records:
            if r.get("kind") == "inline":
                key = f"{r.get('source')}/{r.get('outcome')}" + ("/waited" if r.get("waited_for_model") else "")
                sources[key] = sources.get(key, 0) + 1
        return {
            "strategy": self.name,
            "settings": dict(self.settings),
            "sessions": self.total("sessions"),
            "requests": self.total("requests"),
            "answered": self.total("answered"),
            "withdrawn": self.total("cancelled"),
            "shown": self.total("shown"),
            "accepted": self.total("accepted"),
            "answered_without_model_wait": _share(hits, inline),
            "inline_records": inline,
            "shown_without_model_wait": _share(shown_hits, inline),
            "latency_ms": {
                "p50": _round(percentile(latencies, 0.50)),
                "p95": _round(percentile(latencies, 0.95)),
                "n": len(latencies),
            },
            "keystrokes_saved": _share(unassisted - presses, unassisted),
            "key_presses": presses,
            "key_presses_unassisted": unassisted,
            "accepted_chars": accepted_chars,
            "typed_chars": self.total("typed_chars"),
            # The provider's count: every stream, including those withdrawn before their usage was traced.
            "tokens_out_provider": self.provider.completion_tokens,
            "tokens_out_per_accepted_char": _ratio(self.provider.completion_tokens, accepted_chars),
            "tokens_out_traced": traced_out,
            "prefetch_tokens_out_traced": prefetch_out,
            # Every prompt and answer token the provider counted, at the fast tier's list price (`eval.edit_cost`).
            "cost_usd": round(cost_usd("fast", self.provider.prompt_tokens, self.provider.completion_tokens), 6),
            "usd_per_1000_accepted_chars": _ratio(
                1000 * cost_usd("fast", self.provider.prompt_tokens, self.provider.completion_tokens), accepted_chars
            ),
            "prompt_tokens_provider": self.provider.prompt_tokens,
            "prompt_tokens_per_accepted_char": _ratio(self.provider.prompt_tokens, accepted_chars),
            "model_requests_provider": self.provider.prompts,
            "cached_prompt_share_provider": _share(self.provider.cached_tokens, self.provider.prompt_tokens),
            "prefetch_streams": sum(1 for r in self.records if r.get("kind") == "prefetch"),
            "inline_sources": dict(sorted(sources.items())),
            "accept_command_errors": sum(len(t.command_errors) for t in self.tallies),
            "duration_s": round(self.duration_s, 1),
            "trace_file": str(self.trace_path) if self.trace_path else "",
        }


def _tokens(record: dict[str, Any], key: str) -> int:
    usage = record.get("tokens")
    value = usage.get(key, 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) else 0


def _share(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 3) if whole else None


def _round(value: float) -> float | None:
    return None if value != value else round(value, 2)


def _size(path: pathlib.Path) -> int:
    return path.stat().st_size if path.exists() else 0


async def run_once(
    totals: Totals,
    tasks: list[Task],
    sim: SimHandle,
    *,
    time_scale: float,
    seed: int,
    trace_path: pathlib.Path,
    settings: Mapping[str, Any],
) -> None:
    """One `tandem.eval.replay.runner.replay` of `tasks` against `sim`, added to `totals`."""
    captured: list[Tally] = []

    def progress(tally: Tally) -> None:
        if not captured:
            captured.append(tally)  # the replay's own tally object: read it whole when the run ends

    offset = _size(trace_path)
    before = provider_counts(sim)
    options = ReplayOptions(
        base_url=sim.base_url,
        model=sim.state.model_id,
        provider="openai-chat",
        time_scale=time_scale,
        seed=seed,
        trace_path=trace_path,
        settings=settings,
    )
    summary = await replay(options, tasks=tasks, progress=progress)
    after = provider_counts(sim)
    records = read_trace(trace_path, offset_bytes=offset).records
    tally = captured[0] if captured else Tally()
    totals.add(tally, records, before, after)
    totals.duration_s += summary.duration_s
    totals.trace_path = trace_path
    # Per-run notes on streams stopped before their usage arrived are moot here: tokens are the provider's count.
    totals.notes += [n for n in summary.notes if "withdrawn after starting" not in n and "before the provider" not in n]


def load_average() -> str:
    """The 1, 5 and 15-minute load averages (this machine is shared: figures move with them)."""
    return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
