"""Cache-hit latency end to end over stdio (issue 3): p50/p99, beside a do-nothing pygls server (the floor).

A cache hit is what happens when the user types one character of a suggestion they were shown and the
editor asks again: tandem answers with the rest of that suggestion from the completion it already has
(a live or finished stream, or the completion cache), before any debounce and without a model. The client
(`tandem.eval.replay.client.ReplayClient`, VS Code's capabilities) types spans of real standard-library files
back: where it has a suggestion it types the suggestion's first character and asks again (measured);
where it has none it types the file's next key and waits for the model (not measured). Every measured
request is checked against tandem's trace: only those answered from a stream or the cache, shown, without
waiting for model output, count as hits.

The floor is a pygls server that answers every inline completion at once with a fixed item, driven by a
second client of the same kind with the same edits and requests, interleaved request by request with
tandem's (the order alternates), so both see the same machine load. tandem runs with its default
settings (prefetch included); the simulator (its own process: 20 ms to first token, unpaced, no errors)
answers with the true continuation. It prints what it measured; it passes or fails nothing.

    python bench/bench_cache_hit.py [--hits N] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import pathlib
import tempfile
import time
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent

from bench_latency import FLOOR_SERVER, PROFILED_SERVER, sim_process  # noqa: E402

from tandem.eval.replay.client import OpenDocument, Pending, ReplayClient  # noqa: E402
from tandem.eval.replay.keystrokes import next_key  # noqa: E402
from tandem.eval.replay.sources import Task, make_tasks, sample_files  # noqa: E402
from tandem.eval.trace_report import percentile, read_trace  # noqa: E402

_ANSWER_TIMEOUT_S = 30.0
_WARMUP = 20


def quantiles(values: list[float]) -> dict[str, float | int]:
    return {
        "p50": round(percentile(values, 0.50), 3),
        "p90": round(percentile(values, 0.90), 3),
        "p99": round(percentile(values, 0.99), 3),
        "n": len(values),
    }


async def answer(pending: Pending) -> float:
    await asyncio.wait_for(pending.answered.wait(), _ANSWER_TIMEOUT_S)
    return pending.latency_ms


def trace_id_of(pending: Pending) -> str:
    _, command = pending.suggestion()
    if command is None or not command.arguments:
        return ""
    payload = command.arguments[0]
    return str(payload.get("trace_id", "")) if isinstance(payload, dict) else ""


def _holds(trace: pathlib.Path, needle: str) -> bool:
    return trace.exists() and needle in trace.read_text(encoding="utf-8")


async def wait_for_record(trace: pathlib.Path, trace_id: str) -> None:
    """Until the trace holds `trace_id`'s record (a model request's is written when its stream ends)."""
    needle = f'"id":"{trace_id}"'
    give_up = time.monotonic() + _ANSWER_TIMEOUT_S
    # The server appends the trace from another process: there is no event to wait on, so poll.
    while time.monotonic() < give_up:
        if _holds(trace, needle):
            return
        await asyncio.sleep(0.005)  # sleep-ok: polling a file another process writes


class Pair:
    """tandem and the floor, each with the same document open at the same cursor."""

    def __init__(self, tandem: ReplayClient, floor: ReplayClient, task: Task) -> None:
        self.tandem, self.floor = tandem, floor
        self.doc: OpenDocument = tandem.open(
            uri=task.uri, language_id=task.language_id, text=task.opened_text, cursor=task.start
        )
        self.floor_doc: OpenDocument = floor.open(
            uri=task.uri, language_id=task.language_id, text=task.opened_text, cursor=task.start
        )

    def insert(self, key: str) -> None:
        self.tandem.insert(self.doc, key)
        self.floor.insert(self.floor_doc, key)

    async def measured(self, tandem_first: bool) -> tuple[Pending, float, float]:
        """Ask both (one after the other, in the given order); (tandem's request, its ms, the floor's ms)."""
        if tandem_first:
            pending = self.tandem.request_inline(self.doc)
            tandem_ms = await answer(pending)
            floor_ms = await answer(self.floor.request_inline(self.floor_doc))
        else:
            floor_ms = await answer(self.floor.request_inline(self.floor_doc))
            pending = self.tandem.request_inline(self.doc)
            tandem_ms = await answer(pending)
        return pending, tandem_ms, floor_ms

    def close(self) -> None:
        self.tandem.close(self.doc)
        self.floor.close(self.floor_doc)


async def run(hits_wanted: int, *, profile: pathlib.Path | None = None) -> dict[str, Any]:
    tasks = make_tasks(sample_files(60, seed=3), 60, seed=3)
    truth = sorted({str(t.path) for t in tasks})
    samples: list[tuple[str, float, float]] = []  # (trace id, tandem ms, floor ms)
    misses = 0
    with tempfile.TemporaryDirectory(prefix="tandem-bench-hit-") as tmp:
        workdir = pathlib.Path(tmp)
        trace = workdir / "trace.jsonl"
        env = {**os.environ, "XDG_CONFIG_HOME": str(workdir)}
        sim_args = ("--ttft-ms", "20", "--tokens-per-s", "inf", "--jitter", "0", "--error-rate", "0")
        with sim_process(*sim_args, "--truth", *truth) as base_url:
            tandem_args = ("-c", PROFILED_SERVER, str(profile)) if profile else ("-P", "-m", "tandem")
            tandem = ReplayClient(trace_path=trace, env=env, python_args=tandem_args)
            floor = ReplayClient(trace_path=workdir / "floor.jsonl", env=env, python_args=("-c", FLOOR_SERVER))
            model = {"provider": "openai-chat", "base_url": base_url, "model": "sim-spark", "max_tokens": 96}
            await tandem.start({"models": {"fast": model}})
            await floor.start({})
            load_before = os.getloadavg()
            try:
                for task in tasks:
                    if len(samples) >= hits_wanted + _WARMUP:
                        break
                    pair = Pair(tandem, floor, task)
                    span, at, suggestion = task.span, 0, ""
                    while at < len(span) and len(samples) < hits_wanted + _WARMUP:
                        if suggestion and span.startswith(suggestion[0], at):
                            pair.insert(suggestion[0])
                            at += 1
                            pending, one_ms, floor_one_ms = await pair.measured(tandem_first=len(samples) % 2 == 0)
                            samples.append((trace_id_of(pending), one_ms, floor_one_ms))
                            suggestion = pending.text()
                            continue
                        key = next_key(span, at)
                        pair.insert(key)
                        at += len(key)
                        pending = tandem.request_inline(pair.doc)
                        await answer(pending)
                        misses += 1
                        suggestion = pending.text()
                        if suggestion:
                            # The suggestion's stream has ended once its record is written: the next
                            # request then finds the whole completion, as after any pause.
                            await wait_for_record(trace, trace_id_of(pending))
                    pair.close()
                load_after = os.getloadavg()
            finally:
                await tandem.stop()
                await floor.stop()
        records = {r["id"]: r for r in read_trace(trace).records}
    measured = samples[_WARMUP:]
    hits = [
        (records[tid], t, f)
        for tid, t, f in measured
        if tid in records
        and records[tid].get("source") in ("stream", "cache")
        and records[tid].get("outcome") == "shown"
        and records[tid].get("waited_for_model") is False
    ]
    hit_ms = [t for _, t, _ in hits]
    floor_ms = [f for _, _, f in hits]
    server_ms = [float(r["ms"]["answered"]) for r, _, _ in hits if "answered" in r["ms"]]
    sources: dict[str, int] = {}
    for r, _, _ in hits:
        sources[r["source"]] = sources.get(r["source"], 0) + 1
    t99, f99 = percentile(hit_ms, 0.99), percentile(floor_ms, 0.99)
    return {
        "provider": "simulated (tandem sim, separate process: 20 ms to first token, unpaced, error rate 0)",
        "measured_requests": len(measured),
        "hits": len(hits),
        "not_hits_excluded": len(measured) - len(hits),
        "hit_sources": sources,
        "unmeasured_model_requests": misses,
        "tandem_hit_ms": quantiles(hit_ms),
        "floor_ms": quantiles(floor_ms),
        "tandem_server_received_to_answered_ms": quantiles(server_ms),
        "p50_ratio": round(percentile(hit_ms, 0.5) / percentile(floor_ms, 0.5), 3) if floor_ms else None,
        "p99_ratio": round(t99 / f99, 3) if floor_ms else None,
        "load_average_before": "{:.2f} {:.2f} {:.2f}".format(*load_before),
        "load_average_after": "{:.2f} {:.2f} {:.2f}".format(*load_after),
    }


def _q(d: dict[str, Any]) -> str:
    return f"p50 {d['p50']:.3f} ms, p90 {d['p90']:.3f}, p99 {d['p99']:.3f} (n={d['n']})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hits", type=int, default=1500, help="measured requests wanted (default 1500)")
    parser.add_argument(
        "--profile-server", type=pathlib.Path, metavar="FILE", help="run tandem's server under cProfile into FILE"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    logging.getLogger("pygls").setLevel(logging.ERROR)
    results = asyncio.run(run(args.hits, profile=args.profile_server))
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"provider: {results['provider']}")
    print(f"load average (1/5/15 min): before {results['load_average_before']}, after {results['load_average_after']}")
    print(
        f"measured requests: {results['measured_requests']} (after {_WARMUP} warm-up), cache hits per the trace: "
        f"{results['hits']} {results['hit_sources']}, excluded (not hits): {results['not_hits_excluded']}"
    )
    print(f"    tandem, cache hit, end to end over stdio          {_q(results['tandem_hit_ms'])}")
    print(f"    do-nothing pygls server, same requests (floor)    {_q(results['floor_ms'])}")
    server = _q(results["tandem_server_received_to_answered_ms"])
    print(f"    tandem in-server, received -> answered             {server}")
    print(f"    tandem / floor: p50 {results['p50_ratio']}x, p99 {results['p99_ratio']}x")


if __name__ == "__main__":
    main()
