"""Fixtures that start `tandem sim` on loopback, in a background thread of the test process.

    sim_factory          start simulators with given settings; all are stopped at teardown
    module_sim_factory   the same for a module-scoped fixture (an editor run shared by the module's tests)
    spark_sim            one simulator with the spark profile, made quick for tests (5 ms TTFT, 20,000 tokens/s)

`sse_data` reads the `data:` payloads of a streamed response, for tests that look at the wire.
`HeldTransport` is an httpx transport to a simulator that counts the model requests sent and can hold them
before they reach it, so a test decides when a request is in flight and when it is answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx
import pytest

from tandem.sim.runner import SimHandle, SimSettings, start_in_thread

SimFactory = Callable[..., SimHandle]


def _factory() -> Iterator[SimFactory]:
    handles: list[SimHandle] = []

    def start(settings: SimSettings | None = None, **fields: Any) -> SimHandle:
        handle = start_in_thread(settings if settings is not None else SimSettings(**fields))
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        handle.stop()


@pytest.fixture
def sim_factory() -> Iterator[SimFactory]:
    """`sim_factory(settings)` or `sim_factory(**SimSettings fields)` starts a simulator."""
    yield from _factory()


@pytest.fixture(scope="module")
def module_sim_factory() -> Iterator[SimFactory]:
    """`sim_factory` for a module-scoped fixture (an editor run shared by a module's tests)."""
    yield from _factory()


@pytest.fixture
def spark_sim(sim_factory: SimFactory) -> SimHandle:
    """A spark-profile simulator without truth files, fast enough that tests never wait on it."""
    return sim_factory(profile="spark", ttft_ms=5.0, tokens_per_s=20_000.0)


def sse_data(lines: Iterable[str]) -> list[str]:
    """The `data:` payloads of an SSE stream, in order (`[DONE]` included, as sent)."""
    return [line[len("data:") :].strip() for line in lines if line.startswith("data:")]


class HeldTransport(httpx.AsyncBaseTransport):
    """Loopback HTTP to a simulator, through a gate: `hold()` keeps each request that arrives from being sent
    until `release()`; `sent` counts the requests that got past the gate (what reached the model), and
    `arrived` the ones that reached the gate (`wait_arrived(n)` returns once n have, held or not)."""

    def __init__(self) -> None:
        # Plain HTTP on loopback: no CA certificates to load (loading them holds the test's event loop for
        # 100 ms or more on a busy machine, which the loop watch fails a test for).
        self._inner = httpx.AsyncHTTPTransport(verify=False)
        self._open = asyncio.Event()
        self._open.set()
        self._changed = asyncio.Condition()
        self.arrived = 0
        self.sent = 0

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    async def wait_arrived(self, count: int, timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s), self._changed:
            await self._changed.wait_for(lambda: self.arrived >= count)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        async with self._changed:
            self.arrived += 1
            self._changed.notify_all()
        await self._open.wait()
        self.sent += 1
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()
