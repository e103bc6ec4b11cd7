"""Pool slots after many cancelled requests: httpx's own pool against the remedies in completion.transport.

Each run starts streaming requests to `tandem sim` on loopback (HTTP/1.1, 16 connections) and cancels each
after a random number of event-loop turns (0-40: before, during and after connecting, and mid-stream), as a
typist superseding completions does. After the run it prints the pool: connections stuck half-open (NEW,
owned by no request), usable slots, and how long one more request then takes to get its first byte.

    python bench/bench_pool_cancel.py [--requests N] [--seed S]
    python bench/bench_pool_cancel.py --crowd N

Candidates: `plain` (httpx.AsyncHTTPTransport), `shield` (the request phase shielded from cancellation),
`recycle` (unshielded, the pool replaced when the health check finds stuck connections, checked every
100 requests). Simulated provider; it passes or fails nothing.

`--crowd N` cancels nothing: it starts N streams at once against the 16 slots, so most wait for a slot
until their pool timeout (2 s); a request that gives up just as a slot is handed to it leaves httpcore a
connection nobody can use. Candidates: `shield, no prune` (the shipped transport without `prune`) and
`shield + prune` (shipped). It prints the outcomes, the connections left that sent nothing, and the next
request's time to its first byte.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import pathlib
import random
import time

import httpx

ROOT = pathlib.Path(__file__).resolve().parent.parent

from tandem.completion.providers.transport import ResilientTransport  # noqa: E402
from tandem.sim.runner import SimSettings, start_in_thread  # noqa: E402

MAX_CONNECTIONS = 16
BODY = {"model": "sim", "messages": [{"role": "user", "content": "def f():"}], "stream": True, "max_tokens": 40}


async def run(candidate: str, base_url: str, requests: int, seed: int) -> dict[str, object]:
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=8)
    transport = ResilientTransport(
        lambda: httpx.AsyncHTTPTransport(limits=limits),
        max_connections=MAX_CONNECTIONS,
        shield=candidate == "shield",
        stuck_after_s=0.5,
    )
    plain = candidate == "plain"
    client = httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(limits=limits) if plain else transport,
        timeout=httpx.Timeout(5.0, pool=2.0),
    )
    url = base_url + "/chat/completions"

    async def one() -> None:
        async with client.stream("POST", url, json=BODY) as response:
            async for _ in response.aiter_bytes():
                pass

    rng = random.Random(seed)
    started = time.perf_counter()
    for n in range(requests):
        task = asyncio.create_task(one())
        for _ in range(rng.randint(0, 40)):
            await asyncio.sleep(0)
        task.cancel()
        try:
            await task
        except BaseException:
            pass
        if candidate == "recycle" and n % 100 == 99:
            await asyncio.sleep(0.6)  # let a NEW connection age past stuck_after_s (time, not an event: a bench)
            await transport.recover()
    seconds = time.perf_counter() - started
    await asyncio.sleep(0.6)
    if plain:
        inner = client._transport  # the bench inspects httpx's pool the same way the health check does
        connections = list(getattr(getattr(inner, "_pool", None), "connections", []))
        stuck = sum("NEW" in c.info() or "CONNECTING" in c.info() for c in connections)
        usable = MAX_CONNECTIONS - stuck
        recycled = 0
    else:
        health = transport.health()
        stuck, usable, recycled = health.stuck, health.usable, health.recycled
    probe_start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=BODY) as response:
            await response.aread()
        probe = f"{(time.perf_counter() - probe_start) * 1000:.1f} ms"
    except httpx.PoolTimeout:
        probe = f"PoolTimeout after {(time.perf_counter() - probe_start) * 1000:.0f} ms"
    await client.aclose()
    return {
        "candidate": candidate,
        "requests_cancelled": requests,
        "seconds": round(seconds, 1),
        "stuck_slots": stuck,
        "usable_slots": f"{usable}/{MAX_CONNECTIONS}",
        "pool_recycled": recycled,
        "next_request": probe,
    }


async def crowd(prune: bool, base_url: str, streams: int) -> dict[str, object]:
    limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=8)
    transport = ResilientTransport(
        lambda: httpx.AsyncHTTPTransport(limits=limits), max_connections=MAX_CONNECTIONS, prune=prune
    )
    client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(5.0, pool=2.0))
    url = base_url + "/chat/completions"
    outcomes: collections.Counter[str] = collections.Counter()

    async def one() -> None:
        try:
            async with client.stream("POST", url, json=BODY | {"max_tokens": 200}) as response:
                async for _ in response.aiter_bytes():
                    pass
            outcomes["read"] += 1
        except httpx.HTTPError as error:
            outcomes[type(error).__name__] += 1

    started = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(streams)))
    await transport.drain()
    seconds = time.perf_counter() - started
    connections = list(getattr(getattr(transport._inner, "_pool", None), "connections", []))
    unused = sum("NEW" in c.info() or "CONNECTING" in c.info() for c in connections)
    probe_start = time.perf_counter()
    try:
        async with client.stream("POST", url, json=BODY) as response:
            await response.aread()
        probe = f"{(time.perf_counter() - probe_start) * 1000:.1f} ms"
    except httpx.PoolTimeout:
        probe = f"PoolTimeout after {(time.perf_counter() - probe_start) * 1000:.0f} ms"
    await client.aclose()
    return {
        "candidate": "shield + prune" if prune else "shield, no prune",
        "streams_at_once": streams,
        "seconds": round(seconds, 1),
        "outcomes": dict(outcomes),
        "connections_left_that_sent_nothing": unused,
        "usable_slots": f"{MAX_CONNECTIONS - unused}/{MAX_CONNECTIONS}",
        "pruned": transport.pruned,
        "pool_recycled": transport.recycled,
        "next_request": probe,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--crowd", type=int, default=0, help="N streams at once, nothing cancelled")
    args = parser.parse_args()
    with start_in_thread(SimSettings(profile="spark", ttft_ms=5)) as sim:
        if args.crowd:
            print(f"simulated provider {sim.base_url} (spark profile, ttft 5 ms); {args.crowd} streams at once")
            for prune in (False, True):
                print(json.dumps(await crowd(prune, sim.base_url, args.crowd)))
            return
        print(f"simulated provider {sim.base_url} (spark profile, ttft 5 ms); {args.requests} cancelled requests each")
        for candidate in ("plain", "shield", "recycle"):
            print(json.dumps(await run(candidate, sim.base_url, args.requests, args.seed)))


if __name__ == "__main__":
    asyncio.run(main())
