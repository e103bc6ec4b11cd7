"""The `openai-responses` backend over one persistent WebSocket beside HTTP + SSE, against `tandem sim` on
loopback (issue 15). Every model answer is simulated.

One typing session over a real file (a function of the standard library's `json/decoder.py`, typed back one
character at a time, one completion per keystroke, each read to its end) is sent through each transport in
the same run, the order of the transports alternating between rounds:

    http (warm)         tandem's HTTP backend on its kept-alive, pre-warmed httpx pool
    http (cold)         the same, but a new connection per request (what a client without a pool pays)
    ws (full)           the WebSocket backend, every prompt sent whole (continuation turned off)
    ws (continued)      the WebSocket backend as shipped: continuation where it sends less

Figures, per transport:

    time to first token   backend.stream() called -> first text, p50/p90 (ms). The simulator runs with no
                          pacing (`instant`: no simulated time to first token, no token rate), so this is
                          the time tandem's client, the loopback transport and the simulator's own request
                          handling add before a model could start; it is not any provider's TTFT.
    bytes sent/request    HTTP: request line + headers + JSON body as sent; WebSocket: the turn's JSON plus
                          its frame header (the one-off handshake, ~300 bytes per connection, not counted)
    input tokens/request  what the simulator billed as input (a continuation bills the held conversation),
                          and how many of them its simulated prompt cache served (sim/prompt_cache.py)

The same session end to end through `tandem serve` over stdio (the fast model on each transport, cache reuse
and prefetch off so that every keystroke asks the model), from the server's trace: received -> model request
sent, received -> first token (tandem's added time before the first token, the simulator adding none of its
own), and the client's latency.

Then a socket dropped mid-completion (`truncate` fault: the simulator aborts the TCP connection half-way
through the answer) and before answering (`reset`): what the completion got, and the next one. And the
typing session again with every completion abandoned after its first text (the next keystroke supersedes
it): the first-token times and how many connections each transport needed.

    python bench/bench_websocket.py [--rounds N] [--chars N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import sysconfig
import tempfile
import time
from contextlib import aclosing
from pathlib import Path
from typing import Any

import httpx

from tandem.completion.config.tree import ModelConfig
from tandem.completion.inline.prompts import completion_request, warm_request
from tandem.completion.providers.backends import continuation as continuation_rules
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.backends.openai_responses import OpenAIResponsesBackend
from tandem.completion.providers.backends.responses_ws import ResponsesWebSocketBackend
from tandem.completion.providers.errors import CompletionError
from tandem.completion.providers.http import make_client
from tandem.eval.replay.client import ReplayClient
from tandem.eval.trace_report import read_trace
from tandem.sim import SimSettings, start_in_thread
from tandem.sim.prompt_cache import PromptCache

SOURCE = Path(sysconfig.get_paths()["stdlib"]) / "json" / "decoder.py"
ANCHOR = "def py_scanstring"
MODES = ("http (warm)", "http (cold)", "ws (full)", "ws (continued)")
PREFIX_CHARS = 6000
SUFFIX_CHARS = 2000


def session(chars: int) -> list[ModelRequest]:
    """One request per keystroke typing the `chars` characters after the anchor's line."""
    text = SOURCE.read_text(encoding="utf-8")
    start = text.index("\n", text.index(ANCHOR)) + 1
    # The prompt's window starts at a fixed line, as tandem's does while the cursor stays in one place.
    window = text.rfind("\n", 0, max(0, start - PREFIX_CHARS)) + 1
    suffix = text[start + chars : start + chars + SUFFIX_CHARS]
    config = ModelConfig(provider="openai-responses", max_tokens=64)
    return [
        completion_request(config, prefix=text[window : start + n], suffix=suffix, path="decoder.py", language="python")
        for n in range(chars)
    ]


def http_bytes(request: httpx.Request) -> int:
    line = len(request.method) + 1 + len(request.url.raw_path) + len(" HTTP/1.1\r\n")
    headers = sum(len(k) + 2 + len(v) + 2 for k, v in request.headers.raw) + 2
    return line + headers + len(request.content)


def ws_frame_bytes(payload: int) -> int:
    """A client's text frame: 2 header bytes, the extended length, 4 mask bytes, the payload."""
    extended = 0 if payload < 126 else 2 if payload < 65536 else 8
    return 2 + extended + 4 + payload


async def run_one(backend: Any, request: ModelRequest) -> tuple[float, StreamStats, str, str]:
    stats = StreamStats()
    texts: list[str] = []
    started = time.perf_counter()
    first_s = 0.0
    error = ""
    try:
        async with aclosing(backend.stream(request, stats)) as stream:
            async for text in stream:
                if not first_s:
                    first_s = time.perf_counter() - started
                texts.append(text)
    except CompletionError as exc:
        error = f"{type(exc).__name__}: {exc}"
    return first_s * 1000, stats, "".join(texts), error


async def measure(sim: Any, requests: list[ModelRequest], rounds: int) -> dict[str, dict[str, list[float]]]:
    base_url = sim.base_url
    config = ModelConfig(provider="openai-responses", base_url=base_url, model="sim-instant", timeout_s=10.0)
    ws_config = ModelConfig(**{**config.__dict__, "transport": "websocket"})
    figures: dict[str, dict[str, list[float]]] = {
        mode: {"ttft": [], "bytes": [], "tokens": [], "cached": []} for mode in MODES
    }
    sent: list[int] = []

    async def hook(request: httpx.Request) -> None:
        sent.append(http_bytes(request))

    warm_client = make_client()
    warm_client.event_hooks["request"] = [hook]
    http_warm = OpenAIResponsesBackend(config, warm_client, env={})
    await http_warm.warm(warm_request())
    ws_full = ResponsesWebSocketBackend(ws_config, env={}, continue_turns=False)
    ws_cont = ResponsesWebSocketBackend(ws_config, env={})
    await ws_full.warm(warm_request())
    await ws_cont.warm(warm_request())
    try:
        for round_number in range(rounds):
            order = MODES if round_number % 2 == 0 else tuple(reversed(MODES))
            for mode in order:
                # Each session starts from an empty simulated prompt cache, whichever transport went before.
                sim.state.prompt_cache = PromptCache()
                for request in requests:
                    sent.clear()
                    if mode == "http (cold)":
                        async with httpx.AsyncClient(event_hooks={"request": [hook]}, timeout=10.0) as cold:
                            ttft, stats, _, error = await run_one(OpenAIResponsesBackend(config, cold, env={}), request)
                        wire = sum(sent)
                    elif mode == "http (warm)":
                        ttft, stats, _, error = await run_one(http_warm, request)
                        wire = sum(sent)
                    else:
                        backend = ws_cont if mode == "ws (continued)" else ws_full
                        ttft, stats, _, error = await run_one(backend, request)
                        wire = ws_frame_bytes(stats.bytes_sent)
                    if error:
                        raise SystemExit(f"{mode}: {error}")
                    figures[mode]["ttft"].append(ttft)
                    figures[mode]["bytes"].append(wire)
                    figures[mode]["tokens"].append(stats.usage.input_tokens)
                    figures[mode]["cached"].append(stats.usage.cached_tokens)
    finally:
        await ws_full.aclose()
        await ws_cont.aclose()
        await warm_client.aclose()
    return figures


async def drops(sim: Any, request: ModelRequest) -> list[str]:
    config = ModelConfig(
        provider="openai-responses", base_url=sim.base_url, model="sim-spark", timeout_s=10.0, transport="websocket"
    )
    lines: list[str] = []
    async with make_client() as client:
        for transport in ("websocket", "http"):
            backend: Any = (
                ResponsesWebSocketBackend(config, env={})
                if transport == "websocket"
                else OpenAIResponsesBackend(ModelConfig(**{**config.__dict__, "transport": "http"}), client, env={})
            )
            await backend.warm(warm_request())
            for fault in ("truncate", "reset"):
                sim.arm_fault(fault, 1)
                started = time.perf_counter()
                _, _, text, error = await run_one(backend, request)
                took_ms = (time.perf_counter() - started) * 1000
                outcome = error or f"answered in full ({len(text)} chars)"
                lines.append(f"  {transport:9} {fault:8} -> {outcome[:110]}; {len(text)} chars kept, {took_ms:.0f} ms")
                ttft, stats, text, error = await run_one(backend, request)
                how = f"{stats.continuation or 'http'}, reused connection: {stats.connection_reused}"
                lines.append(
                    f"  {'':9} {'next':8} -> {'error ' + error if error else 'served'} ({len(text)} chars, "
                    f"first token {ttft:.0f} ms, {how})"
                )
            await backend.aclose()
    return lines


def superseded(requests: list[ModelRequest]) -> list[str]:
    """Fast typing: every completion is abandoned after its first text (the next keystroke supersedes it).
    Over HTTP the abandoned response's connection cannot be reused; the WebSocket drains its turn instead.
    A fresh simulator per transport, so that none finds the prompts already in the simulated prompt cache."""
    lines: list[str] = []
    for mode in ("http", "ws (full)", "ws (continued)"):
        with start_in_thread(SimSettings(profile="spark", truth=(str(SOURCE),))) as sim:
            config = ModelConfig(provider="openai-responses", base_url=sim.base_url, model="sim-spark", timeout_s=10.0)
            lines.append(asyncio.run(superseded_run(sim, config, requests, mode)))
    return lines


async def superseded_run(sim: Any, config: ModelConfig, requests: list[ModelRequest], mode: str) -> str:
    ports: set[int] = set()

    async def hook(response: httpx.Response) -> None:
        ports.add(response.extensions["network_stream"].get_extra_info("client_addr")[1])

    client = make_client()
    client.event_hooks["response"] = [hook]
    ws_config = ModelConfig(**{**config.__dict__, "transport": "websocket"})
    backend: Any = (
        OpenAIResponsesBackend(config, client, env={})
        if mode == "http"
        else ResponsesWebSocketBackend(ws_config, env={}, continue_turns=mode == "ws (continued)")
    )
    await backend.warm(warm_request())
    connects_before = sim.stats()["requests"].get("responses.websocket.connect", 0)
    ttfts: list[float] = []
    for request in requests:
        stats = StreamStats()
        started = time.perf_counter()
        async with aclosing(backend.stream(request, stats)) as stream:
            async for _ in stream:
                ttfts.append((time.perf_counter() - started) * 1000)
                break
    if mode == "http":
        used = len(ports)
        kept = "each abandoned response's connection closed"
    else:
        await backend.pool.settled()
        used = sim.stats()["requests"].get("responses.websocket.connect", 0) - connects_before
        kept = f"{backend.pool.opened} open in all (warm-up's included), {backend.pool.idle} idle after the drains"
    await backend.aclose()
    await client.aclose()
    p50, p90 = summary(ttfts)
    return (
        f"  {mode:15} first token p50 {p50:.0f} ms, p90 {p90:.0f} ms over {len(ttfts)} completions; "
        f"new connections: {used}; {kept}"
    )


async def end_to_end(base_url: str, transport: str, workdir: Path, chars: int) -> dict[str, list[float]]:
    """`tandem serve` over stdio with the fast model on `transport`: the typing session typed for real, an
    inline completion asked on every keystroke (cache reuse and prefetch off, so each asks the model)."""
    text = SOURCE.read_text(encoding="utf-8")
    start = text.index("\n", text.index(ANCHOR)) + 1
    trace = workdir / f"e2e-{transport}.jsonl"
    model = {"provider": "openai-responses", "base_url": base_url, "model": "sim-instant", "transport": transport}
    settings: dict[str, Any] = {
        "models": {"fast": model},
        "completion": {"debounce_ms": 0, "debounce": "fixed", "deadline_s": 30},
        "cache": {"reuse": "off"},
        "prefetch": {"enabled": False},
    }
    client = ReplayClient(trace_path=trace, env={**os.environ, "XDG_CONFIG_HOME": str(workdir)})
    await client.start(settings)
    latencies: list[float] = []
    try:
        document = client.open(
            uri=(workdir / "decoder.py").as_uri(),
            language_id="python",
            text=text[:start] + text[start + chars :],
            cursor=start,
        )
        for key in text[start : start + chars]:
            client.insert(document, key)
            pending = client.request_inline(document)
            await asyncio.wait_for(pending.answered.wait(), 30)
            latencies.append(pending.latency_ms)
        client.close(document)
    finally:
        await client.stop()
    records = [r for r in read_trace(trace).records if r.get("source") == "model" and "first_token" in r["ms"]]
    return {
        "client": latencies,
        "first_token": [r["ms"]["first_token"] for r in records],
        "request_sent": [r["ms"]["request_sent"] for r in records],
        "continued": [1.0 if r["transport"]["continuation"] == "continued" else 0.0 for r in records],
    }


def summary(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2, help="typing sessions per transport (default 2)")
    parser.add_argument("--chars", type=int, default=60, help="characters typed per session (default 60)")
    ns = parser.parse_args()
    requests = session(ns.chars)
    print("SIMULATED: every answer comes from tandem sim on loopback; no provider was reached.")
    print(f"typing session: {ns.chars} keystrokes into {SOURCE} after {ANCHOR!r}, {ns.rounds} round(s) per transport")
    print(
        f"continuation rules: edit <= {continuation_rules.MAX_EDIT_SHARE:.0%} of the prompt, held conversation <= "
        f"{continuation_rules.MAX_HELD_GROWTH:g}x the prompt, <= {continuation_rules.MAX_CHAIN_TURNS} turns"
    )
    with start_in_thread(SimSettings(profile="instant", truth=(str(SOURCE),))) as sim:
        figures = asyncio.run(measure(sim, requests, ns.rounds))
    print()
    print("profile instant (no simulated TTFT or token rate): what sits in front of a model")
    print(
        f"{'transport':16} {'TTFT p50 ms':>12} {'p90 ms':>8} {'bytes sent/req':>15} {'input tokens/req':>17} "
        f"{'of them cached':>15}"
    )
    for mode in MODES:
        p50, p90 = summary(figures[mode]["ttft"])
        nbytes = statistics.mean(figures[mode]["bytes"])
        tokens = statistics.mean(figures[mode]["tokens"])
        cached = statistics.mean(figures[mode]["cached"])
        print(f"{mode:16} {p50:12.2f} {p90:8.2f} {nbytes:15.0f} {tokens:17.0f} {cached:15.0f}")
    full_bytes = statistics.mean(figures["ws (full)"]["bytes"])
    cont_bytes = statistics.mean(figures["ws (continued)"]["bytes"])
    print(f"continuation: {1 - cont_bytes / full_bytes:.0%} fewer bytes sent per request than whole prompts")
    print()
    print("end to end over stdio: tandem serve, fast model openai-responses, profile instant (no simulated TTFT);")
    print("received -> first token is the time tandem (server path, transport, the simulator's own handling) adds")
    print(
        f"{'transport':10} {'received->sent p50':>19} {'received->first token p50':>26} {'p90':>7} "
        f"{'client latency p50':>19} {'continued':>10}"
    )
    with (
        start_in_thread(SimSettings(profile="instant", truth=(str(SOURCE),))) as sim,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for transport in ("http", "websocket"):
            run = asyncio.run(end_to_end(sim.base_url, transport, Path(tmp), ns.chars))
            sent50, _ = summary(run["request_sent"])
            first50, first90 = summary(run["first_token"])
            client50, _ = summary(run["client"])
            share = statistics.mean(run["continued"]) if run["continued"] else 0.0
            print(f"{transport:10} {sent50:19.2f} {first50:26.2f} {first90:7.2f} {client50:19.2f} {share:10.0%}")
    print()
    print("a socket dropped (profile spark: 100 ms simulated TTFT, 1,000 tokens/s; 64-token answers)")
    with start_in_thread(SimSettings(profile="spark", truth=(str(SOURCE),))) as sim:
        for line in asyncio.run(drops(sim, requests[len(requests) // 2])):
            print(line)
    print()
    print("every completion superseded after its first text (profile spark, the same typing session; the")
    print("simulated TTFT shrinks with the share of the prompt the simulator's modelled prompt cache serves, and")
    print("only prompts of 1,024 tokens or more are cached: a continued conversation passes that sooner)")
    for line in superseded(requests):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
