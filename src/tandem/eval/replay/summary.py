"""The replay summary: what the client counted, joined with what the server's trace file recorded.

Definitions (every fraction is in [0, 1]; None when its denominator is 0):

    requests                     inline completion requests the client sent
    answered_without_model_wait  of the trace records of those requests (kind "inline"), the share answered
                                 from model output that already existed (source "stream": a model stream
                                 running or finished; or "cache": the completion cache), with outcome shown
                                 or empty, without waiting for any model output (waited_for_model false).
                                 The denominator is every inline record, withdrawn and superseded included.
    latency_ms                   client side, request sent -> response received, over answered requests
    keystrokes_saved             1 - key presses made / key presses the same text takes with no suggestions
                                 (Enter with its auto-indent is one press; accepting a suggestion is one)
    accepted_chars_fraction      accepted_chars / (accepted_chars + typed_chars)
    tokens_out                   model output tokens, summed over all the run's trace records (the requests'
                                 streams and speculative prefetch streams; prefetch_tokens_out: the latter)
    tokens_per_accepted_char     tokens_out / accepted_chars
"""

from __future__ import annotations

import math
import pathlib
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

from tandem.eval.edit_cost import REPLAY_PRICES, cost_usd
from tandem.eval.replay.session import Tally
from tandem.eval.trace_report import TraceFile, percentile


@dataclass(frozen=True, kw_only=True)
class Provider:
    """Where completions came from; `simulated` labels every figure as coming from `tandem sim`."""

    simulated: bool
    label: str
    base_url: str
    model: str
    # A model on this machine: it costs no money.
    local: bool = False


@dataclass(frozen=True, kw_only=True)
class Summary:
    provider: Provider
    sessions: int
    files: list[str]
    requests: int
    answered: int
    cancelled: int
    errors: int
    shown: int
    accepted: int
    accept_commands: int
    answered_without_model_wait: float | None
    latency_ms: dict[str, float | None]
    keystrokes_saved: float | None
    key_presses: int
    key_presses_unassisted: int
    accepted_chars_fraction: float | None
    accepted_chars: int
    typed_chars: int
    tokens_out: int
    prefetch_tokens_out: int
    tokens_per_accepted_char: float | None
    trace_file: str
    # Every record's prompt and answer tokens at the fast tier's list price (`eval.edit_cost`), USD.
    cost_usd: float = 0.0
    usd_per_accepted_char: float | None = None
    trace_records: int
    trace_outcomes: dict[str, int]
    trace_sources: dict[str, int]
    trace_kinds: dict[str, int]
    time_scale: float
    duration_s: float
    # Server time from a key to its shown suggestion when that key waited for a model (no stream or cache
    # had it), leaving out each file's first model request (which reads the whole prompt): p50, p95, count.
    model_wait_ms: dict[str, float | None] = field(default_factory=dict)
    # Of the prompt tokens the provider reported, the share its prompt cache served.
    prompt_cache_reuse: float | None = None
    # A local llama-server's own counts over the run (`--metrics`): prompt tokens it read, and those its
    # prompt cache served.
    server_prompt_read: int | None = None
    server_prompt_cached: int | None = None
    notes: list[str] = field(default_factory=list)
    # Every suggestion shown to the typist beside the true text (`session.Shown.to_json`), for fitting the
    # simulator's error model; in the JSON only.
    shown_log: list[dict[str, object]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["simulated_provider"] = self.provider.simulated
        return data


def _fraction(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _ms(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 3)


# Where an answer comes from when it was already produced: a model stream running or finished, or the
# completion cache.
EXISTING_OUTPUT = ("stream", "cache")


def without_model_wait(records: list[dict[str, Any]]) -> tuple[int, int]:
    """(inline records answered without waiting for a model, all inline records); see the module docstring."""
    inline = [r for r in records if r.get("kind") == "inline"]
    hits = sum(
        1
        for r in inline
        if r.get("source") in EXISTING_OUTPUT
        and r.get("waited_for_model") is False
        and r.get("outcome") in ("shown", "empty")
    )
    return hits, len(inline)


def _tokens_in(record: dict[str, Any]) -> int:
    usage = record.get("tokens")
    value = usage.get("in", 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) else 0


def _tokens_out(record: dict[str, Any]) -> int:
    usage = record.get("tokens")
    value = usage.get("out", 0) if isinstance(usage, dict) else 0
    return value if isinstance(value, int) else 0


def model_waits_ms(records: list[dict[str, Any]]) -> list[float]:
    """See `Summary.model_wait_ms`."""
    seen_files: set[str] = set()
    waits: list[float] = []
    for record in records:
        if record.get("kind") != "inline":
            continue
        if record.get("source") == "model":
            first = str(record.get("file")) not in seen_files
            seen_files.add(str(record.get("file")))
            if first:
                continue
        if not record.get("waited_for_model") or record.get("outcome") != "shown":
            continue
        answered = (record.get("ms") or {}).get("answered")
        if isinstance(answered, int | float):
            waits.append(float(answered))
    return waits


def prompt_cache_share(records: list[dict[str, Any]]) -> float | None:
    reported = [r.get("tokens") or {} for r in records]
    reported = [t for t in reported if isinstance(t, dict) and not t.get("estimated")]
    read = sum(int(t.get("in", 0) or 0) for t in reported)
    cached = sum(int(t.get("cached", 0) or 0) for t in reported)
    return _fraction(cached, read)


def build_summary(
    *,
    tally: Tally,
    trace: TraceFile,
    trace_path: pathlib.Path,
    provider: Provider,
    files: list[pathlib.Path],
    time_scale: float,
    duration_s: float,
    server_prompt_tokens: tuple[int, int] | None = None,
) -> Summary:
    records = [r for r in trace.records if r.get("kind") == "inline"]
    hits, total = without_model_wait(trace.records)
    # Every record of the run counts: the requests' own streams and speculative (prefetch) ones.
    tokens_out = sum(_tokens_out(r) for r in trace.records)
    prefetch_tokens_out = sum(_tokens_out(r) for r in trace.records if r.get("kind") == "prefetch")
    cost = 0.0 if provider.local else cost_usd("fast", sum(_tokens_in(r) for r in trace.records), tokens_out)
    waits = model_waits_ms(trace.records)
    notes = []
    if len(records) < tally.requests:
        notes.append(f"the trace holds {len(records)} records for {tally.requests} requests")
    estimated = sum(1 for r in records if (r.get("tokens") or {}).get("estimated"))
    if estimated:
        notes.append(
            f"{estimated} streams were stopped before the provider reported usage; their tokens were counted "
            "by tandem (what was sent, what arrived)"
        )
    if tally.command_errors:
        notes.append(f"{len(tally.command_errors)} accept commands failed; the first: {tally.command_errors[0]}")
    if trace.bad_lines:
        notes.append(f"{trace.bad_lines} trace lines were not trace records")
    return Summary(
        provider=provider,
        sessions=tally.sessions,
        files=sorted({str(p) for p in files}),
        requests=tally.requests,
        answered=tally.answered,
        cancelled=tally.cancelled,
        errors=tally.errors,
        shown=tally.shown,
        accepted=tally.accepted,
        accept_commands=tally.commands,
        answered_without_model_wait=_fraction(hits, total),
        latency_ms={
            "p50": _ms(percentile(tally.latencies_ms, 0.50)),
            "p95": _ms(percentile(tally.latencies_ms, 0.95)),
            "count": len(tally.latencies_ms),
        },
        keystrokes_saved=_fraction(tally.key_presses_unassisted - tally.key_presses, tally.key_presses_unassisted),
        key_presses=tally.key_presses,
        key_presses_unassisted=tally.key_presses_unassisted,
        accepted_chars_fraction=_fraction(tally.accepted_chars, tally.accepted_chars + tally.typed_chars),
        accepted_chars=tally.accepted_chars,
        typed_chars=tally.typed_chars,
        tokens_out=tokens_out,
        prefetch_tokens_out=prefetch_tokens_out,
        tokens_per_accepted_char=_fraction(tokens_out, tally.accepted_chars),
        cost_usd=round(cost, 6),
        usd_per_accepted_char=cost / tally.accepted_chars if tally.accepted_chars else None,
        trace_file=str(trace_path),
        trace_records=len(records),
        trace_outcomes=dict(sorted(Counter(str(r.get("outcome")) for r in records).items())),
        trace_sources=dict(sorted(Counter(str(r.get("source")) for r in records).items())),
        trace_kinds=dict(sorted(Counter(str(r.get("kind")) for r in trace.records).items())),
        time_scale=time_scale,
        duration_s=round(duration_s, 2),
        model_wait_ms={"p50": _ms(percentile(waits, 0.50)), "p95": _ms(percentile(waits, 0.95)), "count": len(waits)},
        prompt_cache_reuse=prompt_cache_share(trace.records),
        server_prompt_read=server_prompt_tokens[0] if server_prompt_tokens else None,
        server_prompt_cached=server_prompt_tokens[1] if server_prompt_tokens else None,
        notes=notes,
        shown_log=[item.to_json() for item in tally.shown_log],
    )


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _number(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.2f}{unit}"


def format_summary(summary: Summary) -> str:
    """The summary as a few aligned lines of text."""
    s = summary
    latency = s.latency_ms
    per_1000 = s.usd_per_accepted_char * 1000 if s.usd_per_accepted_char is not None else None
    lines = [
        f"provider:                    {s.provider.label}",
        f"sessions:                    {s.sessions} ({len(s.files)} files), {s.duration_s:.1f} s at time scale "
        f"{s.time_scale:g}",
        f"requests:                    {s.requests} (answered {s.answered}, withdrawn {s.cancelled}, "
        f"errors {s.errors}); shown {s.shown}, accepted {s.accepted}",
        f"answered without model wait: {_percent(s.answered_without_model_wait)}",
        f"latency (client):            p50 {_number(latency['p50'], ' ms')}, p95 {_number(latency['p95'], ' ms')}",
        f"keystrokes saved:            {_percent(s.keystrokes_saved)} ({s.key_presses} key presses instead of "
        f"{s.key_presses_unassisted})",
        f"accepted characters:         {_percent(s.accepted_chars_fraction)} ({s.accepted_chars} accepted, "
        f"{s.typed_chars} typed)",
        f"tokens out:                  {s.tokens_out} ({_number(s.tokens_per_accepted_char)} per accepted char; "
        f"{s.prefetch_tokens_out} by prefetch)",
        (
            "cost:                        none (a model on this machine costs no money)"
            if s.provider.local
            else f"cost:                        ${s.cost_usd:.4f} (${_number(per_1000)} per 1,000 accepted chars; "
            f"prompt and answer at {REPLAY_PRICES['fast'].model}'s list price)"
        ),
        f"key to ghost, model waits:   p50 {_number(s.model_wait_ms.get('p50'), ' ms')}, p95 "
        f"{_number(s.model_wait_ms.get('p95'), ' ms')} ({s.model_wait_ms.get('count', 0)} keys that waited for a "
        "model, each file's first request left out)",
        f"prompt-cache reuse:          {_percent(s.prompt_cache_reuse)} of the prompt tokens the provider reported"
        + (
            f"; the server read {s.server_prompt_read:,} prompt tokens and served {s.server_prompt_cached:,} "
            f"from its cache ({_percent(_fraction(s.server_prompt_cached, s.server_prompt_read + s.server_prompt_cached))})"  # noqa: E501
            if s.server_prompt_read is not None and s.server_prompt_cached is not None
            else ""
        ),
        f"trace file:                  {s.trace_file} ({s.trace_records} records)",
    ]
    if s.provider.simulated:
        lines.append("all model output above came from a simulated provider (tandem sim), not a real model")
    lines += [f"note: {note}" for note in s.notes]
    return "\n".join(lines) + "\n"
