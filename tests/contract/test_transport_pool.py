"""The HTTP pool under cancellation, against the simulator on loopback: httpcore leaves a connection half
open (NEW, owned by no request) when a request is cancelled between connecting and sending; the shielded
transport leaves none, and the health check replaces a pool that has some."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpcore
import httpx
import pytest
from fixtures_sim import SimFactory

from tandem.completion.providers.transport import ResilientTransport
from tandem.sim.runner import SimHandle

pytestmark = pytest.mark.contract

BODY = {"model": "sim", "messages": [{"role": "user", "content": "def f():"}], "stream": True, "max_tokens": 20}
SLOTS = 4


@pytest.fixture
def sim(sim_factory: SimFactory) -> SimHandle:
    return sim_factory(profile="spark", ttft_ms=2)


def _client(*, shield: bool, prune: bool = True) -> tuple[httpx.AsyncClient, ResilientTransport]:
    limits = httpx.Limits(max_connections=SLOTS, max_keepalive_connections=SLOTS)
    transport = ResilientTransport(
        lambda: httpx.AsyncHTTPTransport(limits=limits),
        max_connections=SLOTS,
        shield=shield,
        prune=prune,
        stuck_after_s=0.0,
    )
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(5.0, pool=1.0)), transport


def _cancel_at(event: str) -> tuple[dict[str, Any], list[bool]]:
    """Request extensions whose httpcore trace hook cancels the task running the request once, when httpcore
    reports `event` (e.g. "connection.connect_tcp.complete"), while `armed[0]` is true: the cancellation
    then lands at the request's next suspension, the point a racing `$/cancelRequest` or keystroke reaches
    only now and then."""
    armed = [True]

    async def trace(name: str, info: dict[str, Any]) -> None:
        if name == event and armed[0]:
            armed[0] = False
            task = asyncio.current_task()
            assert task is not None
            task.cancel()

    return {"trace": trace}, armed


async def _cancel_many(client: httpx.AsyncClient, url: str, transport: ResilientTransport, rounds: int) -> int:
    """Start and cancel requests at every point of their life; the most stuck slots seen at once (once
    the request phases the shield let finish have finished)."""

    async def one() -> None:
        async with client.stream("POST", url, json=BODY) as response:
            async for _ in response.aiter_bytes():
                pass

    worst = 0
    for n in range(rounds):
        task = asyncio.create_task(one())
        for _ in range(n % 30):
            await asyncio.sleep(0)  # sleep-ok: event-loop turns, not time: where in the request the cancel lands
        task.cancel()
        with contextlib.suppress(BaseException):  # cancelled (or, rarely, already finished)
            await task
        await transport.drain()
        worst = max(worst, transport.health().stuck)
    return worst


async def test_shielded_requests_leave_no_stuck_slot(sim: SimHandle) -> None:
    client, transport = _client(shield=True)
    async with client:
        assert await _cancel_many(client, sim.base_url + "/chat/completions", transport, 150) == 0
        async with client.stream("POST", sim.base_url + "/chat/completions", json=BODY) as response:
            assert response.status_code == 200 and await response.aread()


async def test_health_check_replaces_a_stuck_pool(sim: SimHandle) -> None:
    """A request cancelled right after its connection is made, before it sends (forced with httpcore's trace
    hook), leaves the connection NEW and owned by no request; the health check counts it stuck and recovery
    replaces the pool. The transport is made without pruning, which would take the connection out before
    the health check sees it: the health check is the safety net behind it."""
    client, transport = _client(shield=False, prune=False)
    url = sim.base_url + "/chat/completions"
    extensions, _ = _cancel_at("connection.connect_tcp.complete")

    async def one() -> None:
        async with client.stream("POST", url, json=BODY, extensions=extensions) as response:
            async for _ in response.aiter_bytes():
                pass

    async with client:
        task = asyncio.create_task(one())
        with pytest.raises(asyncio.CancelledError):
            await task
        await transport.drain()
        assert [c.info().split(", ")[2] for c in transport._inner._pool.connections] == ["NEW"]  # type: ignore[attr-defined]
        assert transport.health().stuck == 0  # first seen now
        assert transport.health().stuck == 1  # seen before, still NEW: stuck
        assert await transport.recover() is True
        assert transport.health().stuck == 0 and transport.recycled == 1
        async with client.stream("POST", url, json=BODY) as response:
            assert response.status_code == 200 and await response.aread()


async def test_cancelling_a_stream_again_while_it_closes_leaves_no_connection_behind(sim: SimHandle) -> None:
    """Every keystroke cancels every stream not yet done, and a cancelled stream is not done until its
    response is closed: a second cancellation landing in that close left the connection ACTIVE and owned
    by nobody (a slot lost for good). `Stream.cancel` cancels once."""
    from tandem.completion.inline.streams import Stream

    client, transport = _client(shield=True)
    url = sim.base_url + "/chat/completions"

    async def read(stream: Stream) -> None:
        async with client.stream("POST", url, json=BODY | {"max_tokens": 200}) as response:
            async for data in response.aiter_bytes():
                stream.append(data.decode(errors="replace"))

    async with client:
        for n in range(200):
            stream = Stream(uri="file:///a.py", line=0, character=0, before="", after="", model="m")
            stream.run(read(stream))
            for _ in range(5 + n % 40):
                await asyncio.sleep(0)  # sleep-ok: event-loop turns: where in the stream the cancel lands
            for _ in range(4):  # the next keystrokes, while the stream is still closing
                stream.cancel()
                await asyncio.sleep(0)  # sleep-ok: one event-loop turn, not time
            assert stream.task is not None
            with contextlib.suppress(BaseException):
                await stream.task
            await transport.drain()
            # Nothing is in flight now: a connection still in use belongs to nobody.
            left = [c.info() for c in transport._inner._pool.connections if not c.is_idle()]  # type: ignore[attr-defined]
            assert left == [], n


async def test_health_check_finds_orphaned_connections_and_replaces_the_pool(sim: SimHandle) -> None:
    """A close cut short by a second cancellation (any caller may do it; streams no longer do) leaves
    a connection in use by nobody: the health check counts it as orphaned, and recovery replaces the
    pool. The second cancellation is forced with httpcore's trace hook: it lands as the cancelled
    stream's response begins to close."""
    client, transport = _client(shield=True)
    url = sim.base_url + "/chat/completions"
    extensions, armed = _cancel_at("http11.response_closed.started")
    armed[0] = False  # armed once the stream is under way
    reading = asyncio.Event()

    async def read() -> None:
        async with client.stream("POST", url, json=BODY | {"max_tokens": 200}, extensions=extensions) as response:
            async for _ in response.aiter_bytes():
                reading.set()

    async with client:
        task = asyncio.create_task(read())
        await reading.wait()
        armed[0] = True
        task.cancel()  # the first cancellation: the response closes, and the hook cancels again in that close
        with pytest.raises(asyncio.CancelledError):
            await task
        await transport.drain()
        assert not armed[0], "the close never began"
        health = transport.health()
        assert health.active == 0 and health.orphaned == 1 == health.connections - health.idle, health
        assert health.usable == SLOTS - 1
        assert await transport.recover() is True
        assert transport.health().orphaned == 0 and transport.recycled == 1
        async with client.stream("POST", url, json=BODY) as response:
            assert response.status_code == 200 and await response.aread()


async def test_a_request_that_gives_up_as_a_slot_frees_leaves_no_connection_behind(sim: SimHandle) -> None:
    """httpcore hands a freed slot to a waiting request by making a connection for it. When that request
    gives up right then (cancelled here; in the soak, its pool timeout ran out as the slot freed),
    httpcore forgets the request and keeps the connection, which no other request can take: a slot lost.
    The transport takes such connections out of the pool."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    transport = ResilientTransport(lambda: httpx.AsyncHTTPTransport(limits=limits), max_connections=1, shield=False)
    client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(5.0, pool=5.0))
    url = sim.base_url + "/chat/completions"
    pool = transport._inner._pool  # type: ignore[attr-defined]
    async with client:
        first = await client.send(client.build_request("POST", url, json=BODY), stream=True)  # the one slot
        waiting = asyncio.create_task(client.send(client.build_request("POST", url, json=BODY), stream=True))
        for _ in range(10_000):  # event-loop turns until the second request is queued behind the first
            if len(pool._requests) == 2:
                break
            await asyncio.sleep(0)  # sleep-ok: one event-loop turn, not time
        await first.aclose()  # its body unread: the connection closes, and the pool makes one for `waiting`
        assert [r.connection is not None for r in pool._requests] == [True]
        waiting.cancel()  # before `waiting` runs again: it gives up holding a connection it never used
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await transport.drain()
        assert [c.info() for c in pool.connections] == [] and transport.pruned == 1
        assert transport.health().usable == 1 and transport.health().as_dict()["pruned"] == 1
        async with client.stream("POST", url, json=BODY) as response:
            assert response.status_code == 200 and await response.aread()


def test_a_new_connection_at_a_dropped_ones_address_is_not_stuck() -> None:
    """The health check remembers when it first saw each connection that has sent nothing. A connection
    made between two checks at the address of one seen at the first (CPython reuses a freed object's
    address at once: 99 times in 100 here) is new, not stuck: keyed by id alone, it inherited the old one's
    age, and a healthy pool was replaced."""
    transport = ResilientTransport(lambda: httpx.AsyncHTTPTransport(), max_connections=SLOTS, stuck_after_s=0.0)
    pool = transport._inner._pool  # type: ignore[attr-defined]
    origin = httpcore.Origin(b"http", b"127.0.0.1", 9)
    first = pool.create_connection(origin)
    pool._connections.append(first)
    assert transport.health().stuck == 0  # first seen now
    pool._connections.remove(first)  # it goes (its request connected and finished) before the next check
    del first
    second = pool.create_connection(origin)
    pool._connections.append(second)
    assert transport.health().stuck == 0  # first seen now, whatever its address
    assert transport.health().stuck == 1  # seen before: NEW for longer than stuck_after_s (0)
