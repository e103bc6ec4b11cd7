"""What the `openai-responses` WebSocket backend does with a turn nobody reads any more, against the
stand-in written from OpenAI's documentation of the protocol (`responses_ws_standin`): a superseded
completion turn is read out while the next turn need not wait for it; with every connection busy, its
drain races a new connection's handshake and the sooner one serves; a connection whose turn went away
during its opening handshake is kept by the pool (`bench/bench_ws_superseded.py` measures the ways of
leaving a turn)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager

import pytest
from responses_ws_standin import StandIn, start
from test_backends_contract import completion
from test_ws_connection_limit import _backend
from websockets.protocol import State

from tandem.completion.providers.backends import responses_ws
from tandem.completion.providers.backends.base import StreamStats
from tandem.completion.providers.backends.responses_ws import ResponsesWebSocketBackend, websocket_url
from tandem.completion.providers.backends.ws_pool import SocketPool

pytestmark = pytest.mark.contract


@asynccontextmanager
async def _serving(stand_in: StandIn, timeout_s: float = 5.0) -> AsyncIterator[ResponsesWebSocketBackend]:
    """The stand-in on loopback and a backend to it; afterwards a held answer is let go and both are closed."""
    server, base_url = await start(stand_in)
    backend = _backend(base_url, timeout_s=timeout_s)
    try:
        yield backend
    finally:
        if stand_in.hold is not None:
            stand_in.hold.set()
        await backend.aclose()
        server.close()
        await server.wait_closed()


COMPLETION = completion("openai-responses", "def f():\n    ", "", path="m.py", max_tokens=256)


async def test_a_superseded_turn_is_closed_when_every_connection_is_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two completions in flight fill the pool of two; the newer one is superseded while the older is
    still being read. Its answer is held (a slow model), so a new connection is ready before the drain
    ends: the superseded turn's connection is closed then (the stand-in sees the close mid-turn)."""
    monkeypatch.setattr(responses_ws, "POOL_SIZE", 2)
    stand_in = StandIn(answer="x = 1\n" * 40, hold=asyncio.Event())
    async with _serving(stand_in, timeout_s=60.0) as backend:
        async with aclosing(backend.stream(COMPLETION, StreamStats())) as older:  # type: ignore[type-var]
            await anext(older)
            async with aclosing(backend.stream(COMPLETION, StreamStats())) as newer:  # type: ignore[type-var]
                await anext(newer)
            # `newer` is abandoned here, with `older` still reading: no connection is spare. Its connection's
            # handler ends when the client closes it (a drained turn would hold it until `hold`).
            await asyncio.wait_for(stand_in.ended.wait(), 10)
            assert stand_in.closed_mid_turn == 1
            assert stand_in.hold is not None
            stand_in.hold.set()
            rest = "".join([text async for text in older])
        assert rest  # the turn still read was not disturbed


async def test_a_superseded_turn_that_ends_before_a_new_handshake_keeps_its_connection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pool of two is busy as above, but the superseded turn's answer has all arrived while a new
    connection's handshake takes a second: the drain wins the race, the turn is read to its end (no close
    mid-turn), its connection serves again, and the handshake that lost is given up."""
    monkeypatch.setattr(responses_ws, "POOL_SIZE", 2)
    stand_in = StandIn(answer="x = 1\n" * 40, handshake_s=1.0)
    async with _serving(stand_in, timeout_s=60.0) as backend:
        async with aclosing(backend.stream(COMPLETION, StreamStats())) as older:  # type: ignore[type-var]
            await anext(older)
            async with aclosing(backend.stream(COMPLETION, StreamStats())) as newer:  # type: ignore[type-var]
                await anext(newer)
            await asyncio.wait_for(backend.pool.settled(), 10)
            assert stand_in.closed_mid_turn == 0 and stand_in.completed == 2
            assert backend.pool.idle == 1 and backend.pool.opened == 2
            rest = "".join([text async for text in older])
        assert rest
        assert backend.pool.idle == 2


async def test_a_race_whose_new_connection_is_refused_reads_the_turn_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool of two is busy and the superseded turn's drain races a new connection, which the provider
    refuses (503): the drain is then the only way to a free connection, so the turn is read to its end and
    its connection kept, not closed with nothing to replace it."""
    monkeypatch.setattr(responses_ws, "POOL_SIZE", 2)
    stand_in = StandIn(answer="x = 1\n" * 40, hold=asyncio.Event(), accept=2)
    async with _serving(stand_in, timeout_s=60.0) as backend:
        async with aclosing(backend.stream(COMPLETION, StreamStats())) as older:  # type: ignore[type-var]
            await anext(older)
            async with aclosing(backend.stream(COMPLETION, StreamStats())) as newer:  # type: ignore[type-var]
                await anext(newer)
            await asyncio.wait_for(stand_in.refused.wait(), 10)
            assert stand_in.hold is not None
            stand_in.hold.set()
            rest = "".join([text async for text in older])
        assert rest
        await asyncio.wait_for(backend.pool.settled(), 10)
        assert stand_in.closed_mid_turn == 0 and stand_in.completed == 2
        assert backend.pool.idle == 2


async def test_a_superseded_turn_is_read_out_while_another_connection_is_free() -> None:
    """One completion in flight, superseded: a second connection may still be opened for the next turn,
    so this one is read to its end and keeps its connection (and the conversation held on it)."""
    stand_in = StandIn(answer="x = 1\n" * 40, hold=asyncio.Event())
    async with _serving(stand_in, timeout_s=60.0) as backend:
        async with aclosing(backend.stream(COMPLETION, StreamStats())) as texts:  # type: ignore[type-var]
            await anext(texts)
        assert stand_in.hold is not None
        stand_in.hold.set()
        await asyncio.wait_for(backend.pool.settled(), 10)
        assert stand_in.closed_mid_turn == 0 and stand_in.completed == 1
        assert backend.pool.idle == 1


async def test_a_connection_whose_turn_went_away_during_the_handshake_is_kept() -> None:
    """A key press supersedes the turn while its connection's handshake is under way (a provider's TLS
    and upgrade): the opening goes on, and the pool keeps the connection for the next turn."""
    stand_in = StandIn(handshake_s=0.3)
    async with _serving(stand_in) as backend:

        async def read() -> None:
            async with aclosing(backend.stream(COMPLETION, StreamStats())) as texts:  # type: ignore[type-var]
                async for _ in texts:
                    pass

        reader = asyncio.ensure_future(read())
        await asyncio.wait_for(stand_in.handshaking.wait(), 10)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await asyncio.wait_for(backend.pool.settled(), 10)
        assert backend.pool.idle == 1 and backend.pool.opened == 1
        assert not [turn for turn in stand_in.turns if turn.get("generate") is not False]


async def test_a_connection_one_over_the_pool_is_closed_unless_a_turn_waits_for_it() -> None:
    """A race opens one connection beyond the pool's size. Released while no turn waits, a connection one
    over is closed (the pool does not grow a connection per race); with a turn waiting, that turn gets it."""
    stand_in = StandIn()
    server, base_url = await start(stand_in)
    pool = SocketPool(websocket_url(base_url), headers=lambda: {}, connect_timeout_s=5.0, size=1)
    try:
        first, _ = await pool.acquire()
        extra = await pool.open_beside()
        pool.release(extra)
        assert pool.idle == 0
        await extra.ws.wait_closed()
        assert extra.ws.state is State.CLOSED
        pool.release(first)
        assert pool.idle == 1

        taken, _ = await pool.acquire()
        waiting = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0)  # sleep-ok: let the waiting turn queue for a connection
        assert not waiting.done()
        beside = await pool.open_beside()
        pool.release(beside)
        given, _ = await asyncio.wait_for(waiting, 5)
        assert given is beside
        pool.release(taken)  # now one over, nobody waiting: closed
        assert pool.idle == 0
    finally:
        await pool.aclose()
        server.close()
        await server.wait_closed()
