"""Latency figures of the spine (issue 2), measured end to end over stdio against `tandem sim` on loopback.

    1. server overhead: request received -> model request sent (from the trace), p50/p99, while typing into
       a 1 MB document; beside the same figure for a 10 KB document, and the client-side latency of both
    2. added latency: inline completion end to end over stdio, minus a direct streaming HTTP request to the
       same simulator for the same prompt (time to its first complete line, which is when tandem answers),
       interleaved request by request; the simulator has a fixed time to first token and no jitter
    3. relay ceiling: tokens/s that pass from an unpaced simulator through the server, multi-line, large
       max_tokens; beside a direct HTTP reader of the same stream (the simulator's own ceiling)

The simulator runs as its own process (`tandem sim`), so it shares no interpreter with the client. The
benchmark prints what it measured; it passes or fails nothing. Every figure is against a simulated provider.

    python bench/bench_latency.py [--requests N] [--figures 1,2,3] [--profile-server FILE] [--json]

`--profile-server FILE` runs figure 2's tandem under cProfile, over its measured keys only, and writes its
profile to FILE (read it with `python -m pstats FILE`); the CPU figures are then the profiled server's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

ROOT = pathlib.Path(__file__).resolve().parent.parent

from tandem.completion.config.tree import ModelConfig  # noqa: E402
from tandem.completion.inline.prompts import completion_request  # noqa: E402
from tandem.completion.providers.backends.openai_chat import OpenAIChatBackend  # noqa: E402
from tandem.eval.replay.client import OpenDocument, ReplayClient  # noqa: E402
from tandem.eval.replay.sources import stdlib_files  # noqa: E402
from tandem.eval.trace_report import percentile, read_trace  # noqa: E402

TTFT_MS = 20.0
# The floor: a pygls server that answers every inline completion at once, driven by the same client.
FLOOR_SERVER = """
import logging
from lsprotocol import types
from pygls.lsp.server import LanguageServer

logging.getLogger("pygls").setLevel(logging.WARNING)
server = LanguageServer("floor", "0")


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
async def inline(ls, params):
    here = types.Range(start=params.position, end=params.position)
    return types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text="value", range=here)])


server.start_io()
"""
# `tandem serve` under cProfile, from SIGUSR1 on (the benchmark sends it when its measured keys begin, so
# start-up and the first request's one-time work stay out); the server leaves with os._exit, so the
# profile is written just before.
PROFILED_SERVER = """
import cProfile, os, signal, sys
profile, out, real_exit = cProfile.Profile(), sys.argv[1], os._exit
def leave(code):
    profile.disable()
    profile.dump_stats(out)
    real_exit(code)
os._exit = leave
signal.signal(signal.SIGUSR1, lambda *_: profile.enable())
from tandem.cli import main
main(sys.argv[2:])
"""
# Prompts shorter than the simulator's prompt caching threshold (1,024 tokens), so no request of figure 2
# gets a cache-shortened time to first token and the direct and tandem requests wait alike.
UNCACHED_BUDGET_TOKENS = 900
# 1 MB, and no more: tandem sends nothing from a file over `privacy.max_file_bytes` (1,000,000 by default).
ONE_MB = 1_000_000


def _quantiles(values: list[float]) -> dict[str, float]:
    return {q: round(percentile(values, p), 3) for q, p in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99))} | {
        "n": len(values)
    }


@contextlib.contextmanager
def sim_process(*args: str) -> Iterator[str]:
    """`tandem sim` in its own process; yields its base URL."""
    command = [sys.executable, "-P", "-m", "tandem", "sim", "--port", "0", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if "listening on " not in line:
            raise RuntimeError(f"tandem sim did not start: {line!r}")
        yield line.rsplit("listening on ", 1)[1].strip()
    finally:
        process.terminate()
        process.wait(10)


def real_code(min_chars: int, *, max_bytes: int | None = None) -> str:
    """At least `min_chars` of the standard library's own source, whole files in a stable order; cut at a
    line end to at most `max_bytes` of UTF-8 if given."""
    parts: list[str] = []
    size = 0
    for path in stdlib_files():
        text = path.read_text(encoding="utf-8", errors="replace").replace("\r", "")
        parts.append(text)
        size += len(text) + 1
        if size >= min_chars:
            break
    text = "\n".join(parts)
    if max_bytes is not None:
        data = text.encode("utf-8")[:max_bytes]
        text = data[: data.rfind(b"\n") + 1].decode("utf-8")
    return text


def cursor_line(text: str, near: int) -> int:
    """Offset just after the first `return ...` line's text at or after `near` (a spot inside a function)."""
    at = text.find("\n        return ", near)
    return text.find("\n", at + 1)


@contextlib.asynccontextmanager
async def tandem(
    base_url: str,
    trace: pathlib.Path,
    *,
    max_tokens: int,
    python_args: tuple[str, ...] = ("-P", "-m", "tandem"),
    budget_tokens: int | None = None,
) -> AsyncIterator[ReplayClient]:
    env = {**os.environ, "XDG_CONFIG_HOME": str(trace.parent)}
    client = ReplayClient(trace_path=trace, env=env, python_args=python_args)
    model = {"provider": "openai-chat", "base_url": base_url, "model": "sim-spark", "max_tokens": max_tokens}
    # Every request goes to the model: these figures are about the model path, not about reuse.
    settings: dict[str, Any] = {
        "models": {"fast": model},
        "completion": {"debounce_ms": 0, "deadline_s": 30},
        "cache": {"reuse": "off"},
        "prefetch": {"enabled": False},
    }
    if budget_tokens is not None:
        settings["context"] = {"budget_tokens": budget_tokens}
    await client.start(settings)
    try:
        yield client
    finally:
        await client.stop()


async def ask(client: ReplayClient, document: OpenDocument, key: str) -> float:
    """Type `key`, ask for an inline completion, wait for the answer; the client-side latency in ms."""
    client.insert(document, key)
    pending = client.request_inline(document)
    await asyncio.wait_for(pending.answered.wait(), 30)
    return pending.latency_ms


def cpu_ms(pid: int | None) -> float:
    """CPU time (user + system) a process has used so far, in ms (Linux /proc; NaN elsewhere)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def _new_records(trace: pathlib.Path, offset: int) -> list[dict[str, Any]]:
    return read_trace(trace, offset_bytes=offset).records if trace.exists() else []


async def wait_records(trace: pathlib.Path, offset: int, count: int) -> list[dict[str, Any]]:
    give_up = time.monotonic() + 30
    # The server appends the trace from another process: there is no event to wait on, so poll.
    while len(records := _new_records(trace, offset)) < count and time.monotonic() < give_up:  # noqa: ASYNC110
        await asyncio.sleep(0.005)  # sleep-ok: polling a file another process writes
    return records


async def typing_overhead(base_url: str, workdir: pathlib.Path, *, size: int, requests: int) -> dict[str, Any]:
    """Figure 1 for a document of about `size` bytes: type `requests` keys mid-document."""
    text = real_code(size, max_bytes=size - 100) if size >= ONE_MB else real_code(size)
    cursor = cursor_line(text, len(text) // 2)
    trace = workdir / f"overhead-{size}.jsonl"
    async with tandem(base_url, trace, max_tokens=16) as client:
        document = client.open(uri=(workdir / f"doc{size}.py").as_uri(), language_id="python", text=text, cursor=cursor)
        client.insert(document, "\n        value = ")
        latencies = [await ask(client, document, "abcdefghij"[i % 10]) for i in range(requests)]
        client.close(document)
        records = await wait_records(trace, 0, requests)
    overhead = [r["ms"]["request_sent"] for r in records if "request_sent" in r["ms"]]
    return {
        "document_bytes": len(text.encode("utf-8")),
        "server_overhead_ms": _quantiles(overhead),
        "client_latency_ms": _quantiles(latencies),
        "model_requests": len(overhead),
    }


async def added_latency(
    base_url: str, workdir: pathlib.Path, *, requests: int, tandem_args: tuple[str, ...] = ("-P", "-m", "tandem")
) -> dict[str, Any]:
    """Figure 2: tandem end to end vs a direct request to the simulator, interleaved."""
    text = real_code(10_000)
    cursor = cursor_line(text, len(text) // 2)
    trace = workdir / "added.jsonl"
    backend = OpenAIChatBackend(ModelConfig(base_url=base_url, model="sim-spark", max_tokens=16), httpx.AsyncClient())
    direct_ms: list[float] = []
    tandem_ms: list[float] = []
    mismatched = 0
    floor_ms: list[float] = []
    path = str(workdir / "small.py")
    uri = pathlib.Path(path).as_uri()
    async with (
        httpx.AsyncClient(timeout=30) as http,
        tandem(base_url, trace, max_tokens=16, python_args=tandem_args, budget_tokens=UNCACHED_BUDGET_TOKENS) as client,
        tandem(base_url, workdir / "floor.jsonl", max_tokens=16, python_args=("-c", FLOOR_SERVER)) as floor,
    ):
        document = client.open(uri=uri, language_id="python", text=text, cursor=cursor)
        floor_document = floor.open(uri=uri, language_id="python", text=text, cursor=cursor)
        client.insert(document, "\n        value = ")
        floor.insert(floor_document, "\n        value = ")
        typed = text[:cursor] + "\n        value = "
        cpu_before = {"tandem": cpu_ms(client.server_pid), "floor": cpu_ms(floor.server_pid)}
        if tandem_args[:2] == ("-c", PROFILED_SERVER) and client.server_pid:
            os.kill(client.server_pid, signal.SIGUSR1)
        for i in range(requests):
            key = "abcdefghij"[i % 10]
            typed += key
            tandem_ms.append(await ask(client, document, key))
            # The same prompt tandem sent: the simulator reports the last request's prefix and suffix sizes.
            last = (await http.get(base_url.removesuffix("/v1") + "/_sim/stats")).json()["last_request"]
            prefix, suffix = typed[len(typed) - last["prefix_chars"] :], text[cursor:][: last["suffix_chars"]]
            config = ModelConfig(max_tokens=16)
            asked = completion_request(config, prefix=prefix, suffix=suffix, path=path, language="python")
            body = backend.body(asked)
            direct_ms.append(await first_line_ms(http, base_url, body))
            # Checked after the direct request: the same number of prompt tokens means the same prompt size.
            again = (await http.get(base_url.removesuffix("/v1") + "/_sim/stats")).json()["last_request"]
            mismatched += again["prompt_tokens"] != last["prompt_tokens"]
            floor_ms.append(await ask(floor, floor_document, key))
        cpu = {
            "tandem": (cpu_ms(client.server_pid) - cpu_before["tandem"]) / requests,
            "floor": (cpu_ms(floor.server_pid) - cpu_before["floor"]) / requests,
        }
        client.close(document)
        records = await wait_records(trace, 0, requests)
    # Where tandem's time goes, from its own trace: before the model request, and after the first line.
    phases = [_with_first_line(r["ms"]) for r in records if {"request_sent", "answered"} <= r["ms"].keys()]
    return {
        "sim_ttft_setting_ms": TTFT_MS,
        "server_before_request_ms": _quantiles([ms["request_sent"] for ms in phases]),
        "server_first_line_to_answer_ms": _quantiles([ms["answered"] - ms["first_line"] for ms in phases]),
        "server_request_to_first_line_ms": _quantiles([ms["first_line"] - ms["request_sent"] for ms in phases]),
        "outside_server_ms": _quantiles(
            [t - ms["answered"] for t, ms in zip(tandem_ms, [r["ms"] for r in records], strict=False)]
        ),
        "direct_first_line_ms": _quantiles(direct_ms),
        "tandem_end_to_end_ms": _quantiles(tandem_ms),
        "floor_server_round_trip_ms": _quantiles(floor_ms),
        "direct_prompt_size_mismatches": mismatched,
        # CPU the server process spent per keystroke (didChange + inlineCompletion): robust to a busy machine.
        "server_cpu_ms_per_request": {name: round(value, 3) for name, value in cpu.items()},
        "added_p50_ms": round(statistics.median(tandem_ms) - statistics.median(direct_ms), 3),
        "added_paired_p50_ms": round(statistics.median(t - d for t, d in zip(tandem_ms, direct_ms, strict=True)), 3),
    }


def _with_first_line(ms: dict[str, float]) -> dict[str, float]:
    """Phases with `first_line` set to when the stream ended if the answer was shorter than a line."""
    return {**ms, "first_line": ms.get("first_line", ms.get("done", ms["answered"]))}


async def first_line_ms(http: httpx.AsyncClient, base_url: str, body: dict[str, object]) -> float:
    """ms from sending a streaming chat request until its content holds a complete line (or ends)."""
    started = time.perf_counter_ns()
    content = ""
    async with http.stream("POST", base_url + "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: {"):
                continue
            choices = json.loads(line[6:]).get("choices") or [{}]
            content += (choices[0].get("delta") or {}).get("content") or ""
            if "\n" in content:
                break
    return (time.perf_counter_ns() - started) / 1e6


async def relay_ceiling(base_url: str, workdir: pathlib.Path, *, requests: int, max_tokens: int) -> dict[str, Any]:
    """Figure 3: tokens/s from an unpaced simulator through tandem, beside a direct reader of the same stream."""
    text = real_code(10_000)
    cursor = cursor_line(text, len(text) // 2)
    trace = workdir / "relay.jsonl"
    through: list[float] = []
    async with tandem(base_url, trace, max_tokens=max_tokens) as client:
        document = client.open(uri=(workdir / "relay.py").as_uri(), language_id="python", text=text, cursor=cursor)
        client.insert(document, "\n        ")
        for i in range(requests):
            # A new line each time: multi-line mode, and never a continuation of the previous stream.
            await ask(client, document, "\n        " if i else "")
            # The request's record is written when its stream ends.
            record = (await wait_records(trace, 0, i + 1))[-1]
            ms = record["ms"]
            if "done" in ms and "request_sent" in ms and record["tokens"]["out"] > 1:
                through.append(record["tokens"]["out"] / ((ms["done"] - ms["request_sent"]) / 1000))
        client.close(document)
    tokens_out = max(int(record["tokens"]["out"]), 1)
    direct: list[float] = []
    config = ModelConfig(base_url=base_url, model="sim-spark", max_tokens=max_tokens)
    asked = completion_request(config, prefix=text[:cursor][-6000:], suffix=text[cursor:][:2000])
    body = OpenAIChatBackend(config, httpx.AsyncClient()).body(asked)
    async with httpx.AsyncClient(timeout=30) as http:
        for _ in range(requests):
            started = time.perf_counter_ns()
            async with http.stream("POST", base_url + "/chat/completions", json=body) as response:
                async for _chunk in response.aiter_bytes():
                    pass
            direct.append(tokens_out / ((time.perf_counter_ns() - started) / 1e9))
    return {
        "max_tokens": max_tokens,
        "tokens_per_request": tokens_out,
        "through_tandem_tokens_per_s": _quantiles(through),
        "direct_reader_tokens_per_s": _quantiles(direct),
    }


async def main(requests: int, *, figures: set[str], profile: pathlib.Path | None) -> dict[str, Any]:
    results: dict[str, Any] = {"provider": "simulated (tandem sim, separate process)"}
    # `python -m cProfile` takes no -P and writes nothing when the server leaves with os._exit.
    tandem_args = ("-c", PROFILED_SERVER, str(profile)) if profile else ("-P", "-m", "tandem")
    with tempfile.TemporaryDirectory(prefix="tandem-bench-") as tmp:
        workdir = pathlib.Path(tmp)
        fixed = ("--ttft-ms", str(TTFT_MS), "--tokens-per-s", "inf", "--jitter", "0")
        with sim_process(*fixed) as base_url:
            if "1" in figures:
                results["overhead_1mb"] = await typing_overhead(base_url, workdir, size=ONE_MB, requests=requests)
                results["overhead_10kb"] = await typing_overhead(base_url, workdir, size=10_000, requests=requests)
            if "2" in figures:
                added = await added_latency(base_url, workdir, requests=requests, tandem_args=tandem_args)
                results["added_latency"] = added
        if "3" not in figures:
            return results
        for chunk_tokens in ("1", "8"):
            with sim_process("--profile", "instant", "--chunk-tokens", chunk_tokens) as base_url:
                relay = await relay_ceiling(base_url, workdir, requests=max(requests // 10, 10), max_tokens=4096)
                results[f"relay_ceiling_{chunk_tokens}_token_events"] = relay
    return results


def _q(d: dict[str, float], unit: str = "ms") -> str:
    return f"p50 {d['p50']:.3f} {unit}, p90 {d['p90']:.3f}, p99 {d['p99']:.3f} (n={d['n']})"


def _row(label: str, text: str) -> None:
    print(f"    {label:<48}{text}")


def _print(results: dict[str, Any]) -> None:
    print(f"provider: {results['provider']}; cache reuse and prefetch off, so every request asks the model")
    for name in ("overhead_1mb", "overhead_10kb"):
        if name in results:
            r = results[name]
            print(f"[1] typing into a document of {r['document_bytes']:,} bytes")
            _row("server overhead, received -> request sent", _q(r["server_overhead_ms"]))
            _row("client-side latency, same requests", _q(r["client_latency_ms"]))
    if "added_latency" in results:
        a = results["added_latency"]
        print(
            f"[2] added latency (simulator TTFT set to {a['sim_ttft_setting_ms']:g} ms, no jitter, unpaced tokens; "
            f"prompts under {UNCACHED_BUDGET_TOKENS} tokens, below the simulator's prompt caching)"
        )
        same = f"{a['direct_prompt_size_mismatches']} of {a['direct_first_line_ms']['n']} prompts differ in size"
        _row("direct HTTP to the simulator, first line", f"{_q(a['direct_first_line_ms'])}; {same}")
        _row("tandem end to end over stdio", _q(a["tandem_end_to_end_ms"]))
        _row("  in the server: before the model request", _q(a["server_before_request_ms"]))
        _row("  in the server: model request -> first line", _q(a["server_request_to_first_line_ms"]))
        _row("  in the server: first line -> answered", _q(a["server_first_line_to_answer_ms"]))
        _row("  outside the server (stdio, JSON-RPC)", _q(a["outside_server_ms"]))
        _row("do-nothing pygls server, same client (floor)", _q(a["floor_server_round_trip_ms"]))
        cpu = a["server_cpu_ms_per_request"]
        _row("server CPU per keystroke: tandem; floor", f"{cpu['tandem']:.3f} ms; {cpu['floor']:.3f} ms")
        _row(
            "added by tandem (p50 difference; paired p50)",
            f"{a['added_p50_ms']:.3f} ms; {a['added_paired_p50_ms']:.3f} ms",
        )
    for key in ("relay_ceiling_1_token_events", "relay_ceiling_8_token_events"):
        if key in results:
            r = results[key]
            events, tokens = key.split("_")[2], r["tokens_per_request"]
            print(f"[3] relay ceiling, unpaced simulator, {events} token(s) per event, {tokens} tokens each")
            _row("through tandem", _q(r["through_tandem_tokens_per_s"], "tokens/s"))
            _row("direct HTTP reader of the same stream", _q(r["direct_reader_tokens_per_s"], "tokens/s"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="requests per figure (default 300)")
    parser.add_argument("--figures", default="1,2,3", help="which figures to measure (default 1,2,3)")
    parser.add_argument(
        "--profile-server", type=pathlib.Path, metavar="FILE", help="run figure 2's server under cProfile into FILE"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    measured = asyncio.run(main(args.requests, figures=set(args.figures.split(",")), profile=args.profile_server))
    if args.json:
        print(json.dumps(measured, indent=2))
    else:
        _print(measured)
