"""Superseded WebSocket turns: read to their end (drain) or their connection closed (a fresh socket).

The `openai-responses` WebSocket backend against `tests/responses_ws_standin.py` (a stand-in written from
OpenAI's documentation of the protocol, not tandem's simulator), paced as a model: a time to first token,
then one token per 1/rate seconds, until the turn ends or the client closes its connection. Model output
is SIMULATED (the stand-in's fixed answer); times are measured on loopback.

Four ways to leave a turn that nobody will read, each run in the same process one after the other:

    drain       the turn is read to its end in the background; its connection (and the conversation the
                server holds on it) serves again afterwards. Every token of the answer is generated.
    close       the connection is closed at once; a new one opens in the background for the next turn.
    busy-close  an edit's turn (`max_tokens` over 512) is closed; a completion's is drained while the next
                turn need not wait for it (a connection idle, or one more may be opened), and closed
                otherwise (the rule shipped before the race).
    shipped     what the backend does (`responses_ws.DRAIN_MAX_TOKENS`, `WHEN_BUSY = "race"`): as
                busy-close, but with every connection busy the drain races one more connection's handshake
                and whichever is ready first serves (the drained connection is closed if the handshake wins).

Two sessions, each under every way:

    typing  `--keys` completions (`max_tokens` 256, a 200-token answer) at the fast profile's speed (100 ms
            to first token, 1,000 tokens/s or `--fast-tokens-per-s`), one per key press `--gap-ms` apart,
            each superseded by the next key press (the task reading it is cancelled, as the server cancels
            a superseded request).
    edits   `--edits` hedged edits, the accurate half of each (`max_tokens` 16,384, a 1,200-token answer
            at the accurate profile's 600 ms and 65 tokens/s) abandoned 1.0 s in, when the fast answer
            passed its checks; the next edit starts `--edit-gap-s` later.

Figures, per session and way: tokens the stand-in generated (all turns; what a provider that bills
generated tokens would bill), their price at the replay's list output price (input tokens are billed the
same either way and are left out), connections opened, and each turn's wait from `stream()` to its first
text (p50 / max, of the turns that showed any) and how many turns showed text before they were superseded
(a turn that finds both pooled connections busy draining waits for one, and may show nothing).

What a real provider bills after a client closes mid-answer is not documented (OpenAI's documentation
says neither that generation stops nor that it continues): `close`'s token figure assumes generation stops
when the close arrives; `drain`'s is billed whatever the provider does. `--handshake-ms` delays each
opening handshake (a real provider's TLS and upgrade, ~100-300 ms from a laptop; loopback is ~1 ms).

    python bench/bench_ws_superseded.py [--keys 40] [--gap-ms 150] [--edits 3] [--handshake-ms 0]
        [--pool-size 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pathlib
import statistics
import sys
import time
from contextlib import aclosing
from dataclasses import dataclass, field

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from responses_ws_standin import StandIn, start  # noqa: E402

from tandem.completion.config.tree import ModelConfig  # noqa: E402
from tandem.completion.inline.prompts import completion_request, warm_request  # noqa: E402
from tandem.completion.providers.backends import responses_ws  # noqa: E402
from tandem.completion.providers.backends.base import ModelRequest, StreamStats  # noqa: E402
from tandem.completion.providers.backends.factory import make_backend  # noqa: E402
from tandem.eval.edit_cost import REPLAY_PRICES  # noqa: E402

ENV = {"TANDEM_BENCH_KEY": "sk-bench-not-a-key"}
# Each way sets the backend's edge (drain every abandoned turn, close every one, or the shipped edge) and
# what it does when every connection is busy.
WAYS = {
    "drain": (10**9, "drain"),
    "close": (-1, "close"),
    "busy-close": (responses_ws.DRAIN_MAX_TOKENS, "close"),
    "shipped": (responses_ws.DRAIN_MAX_TOKENS, responses_ws.WHEN_BUSY),
}
POOL_SIZE = responses_ws.POOL_SIZE


@dataclass
class Figures:
    session: str
    way: str
    turns: int = 0
    generated: int = 0
    usd: float = 0.0
    connections: int = 0
    waits_ms: list[float] = field(default_factory=list)

    def row(self) -> dict[str, object]:
        waits = self.waits_ms
        return {
            "session": self.session,
            "way": self.way,
            "turns": self.turns,
            "tokens generated": self.generated,
            "output $": round(self.usd, 5),
            "connections": self.connections,
            "wait p50 ms": round(statistics.median(waits), 1) if waits else None,
            "wait max ms": round(max(waits), 1) if waits else None,
            "text before superseded": f"{len(waits)}/{self.turns}",
        }


def _backend(base_url: str) -> responses_ws.ResponsesWebSocketBackend:
    config = ModelConfig(
        provider="openai-responses",
        base_url=base_url,
        model="gpt-5.3-codex",
        api_key_env="TANDEM_BENCH_KEY",
        transport="websocket",
        timeout_s=120.0,
        connect_timeout_s=10.0,
    )
    backend = make_backend(config, None, env=ENV)  # type: ignore[arg-type]
    assert isinstance(backend, responses_ws.ResponsesWebSocketBackend)
    return backend


async def _read(backend: responses_ws.ResponsesWebSocketBackend, request: ModelRequest, waits: list[float]) -> None:
    started = time.perf_counter()
    async with aclosing(backend.stream(request, StreamStats())) as texts:  # type: ignore[type-var]
        first = True
        async for _ in texts:
            if first:
                waits.append((time.perf_counter() - started) * 1000)
                first = False


async def _session(
    name: str,
    way: str,
    *,
    turns: int,
    gap_s: float,
    abandon_s: float,
    stand_in: StandIn,
    max_tokens: int,
    tier: str,
    pool_size: int,
) -> Figures:
    responses_ws.DRAIN_MAX_TOKENS, responses_ws.WHEN_BUSY = WAYS[way]  # type: ignore[assignment]
    responses_ws.POOL_SIZE = pool_size
    server, base_url = await start(stand_in)
    backend = _backend(base_url)
    figures = Figures(session=name, way=way, turns=turns)
    config = ModelConfig(provider="openai-responses", max_tokens=max_tokens)
    request = completion_request(config, prefix="def f(x):\n    ", suffix="", path="m.py", language="python")
    try:
        # As the server does when it starts: one connection open before the first key.
        await backend.warm(warm_request())
        stand_in.deltas_sent = 0
        for _ in range(turns):
            reader = asyncio.ensure_future(_read(backend, request, figures.waits_ms))
            await asyncio.wait([reader], timeout=abandon_s)
            reader.cancel()  # superseded: nobody reads the rest
            await asyncio.gather(reader, return_exceptions=True)
            await asyncio.sleep(max(0.0, gap_s - abandon_s))
        await asyncio.wait_for(backend.pool.settled(), 120)
    finally:
        await backend.aclose()
        server.close()
        await server.wait_closed()
    figures.generated = stand_in.deltas_sent
    figures.connections = stand_in.connections
    figures.usd = stand_in.deltas_sent * REPLAY_PRICES[tier].output_per_mtok / 1e6
    return figures


async def run(args: argparse.Namespace) -> list[Figures]:
    results: list[Figures] = []
    handshake_s = args.handshake_ms / 1000
    for way in WAYS:
        typing = StandIn(
            answer="x = 1;" * 133 + "xx", ttft_s=0.1, tokens_per_s=args.fast_tokens_per_s, handshake_s=handshake_s
        )
        gap = args.gap_ms / 1000
        results.append(
            await _session(
                "typing",
                way,
                turns=args.keys,
                gap_s=gap,
                abandon_s=gap,
                stand_in=typing,
                max_tokens=256,
                tier="fast",
                pool_size=args.pool_size,
            )
        )
    for way in WAYS:
        edits = StandIn(answer="y = 2;\n" * 685 + "yy", ttft_s=0.6, tokens_per_s=65.0, handshake_s=handshake_s)
        results.append(
            await _session(
                "edits",
                way,
                turns=args.edits,
                gap_s=args.edit_gap_s,
                abandon_s=1.0,
                stand_in=edits,
                max_tokens=16384,
                tier="accurate",
                pool_size=args.pool_size,
            )
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--gap-ms", type=float, default=150.0)
    parser.add_argument("--edits", type=int, default=3)
    parser.add_argument("--edit-gap-s", type=float, default=3.0)
    parser.add_argument("--handshake-ms", type=float, default=0.0)
    parser.add_argument("--fast-tokens-per-s", type=float, default=1000.0, help="the typing session's model speed")
    parser.add_argument("--pool-size", type=int, default=POOL_SIZE, help="connections per model (shipped: %(default)s)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(run(args))
    rows = [figures.row() for figures in results]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"superseded WebSocket turns, SIMULATED model output (stand-in), loopback; {args.pool_size} connections "
        f"per model; handshake delay {args.handshake_ms:g} ms; key every {args.gap_ms:g} ms; typing model"
        f" {args.fast_tokens_per_s:g} tokens/s;"
        f" output prices: fast ${REPLAY_PRICES['fast'].output_per_mtok:g}, accurate "
        f"${REPLAY_PRICES['accurate'].output_per_mtok:g} per Mtok (close assumes generation stops at the close)"
    )
    headers = list(rows[0])
    print(" | ".join(headers))
    for row in rows:
        print(" | ".join(str(row[h]) for h in headers))


if __name__ == "__main__":
    main()
