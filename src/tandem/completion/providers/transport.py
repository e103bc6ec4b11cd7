"""The HTTP transport under the shared client: a connection pool that cancellation cannot wedge.

The pool inside it is aiohttp's (`providers.aio_pool`, which `http.make_client` builds); httpx's own pool
(httpcore's) can be put there instead, and the remedies below are for it. With aiohttp's, the shield keeps
a superseded request's response for the observers, and the health check counts what aiohttp's pool holds
(it has no connection that sent nothing, so nothing to prune and none stuck).

tandem cancels a model request on almost every keystroke. httpcore 1.0 leaves a pool slot unusable when a
request is cancelled between opening its connection and sending on it: the connection stays in its NEW
state, belongs to no request, is never reused and never closed, and still counts against
`max_connections` (a typing session filled all 16 slots; the next request waited out the pool timeout).
See bench/bench_pool_cancel.py, which reproduces it on loopback and measures the remedies.

`ResilientTransport` does two things:

- **shields the request phase**: the inner transport's `handle_async_request` (connect, send, read the
  status and headers) runs in its own task; cancelling the caller does not interrupt it, so no connection
  is left half-open. The cancelled caller returns at once; the inner task finishes on its own and closes
  the response it gets (an HTTP/1.1 connection with an unread body is closed, which frees the slot). The
  phase is bounded by the connect and read timeouts.
- **drops the connections nobody will use**: httpcore's pool hands a free slot to a waiting request by
  making a connection for it (CONNECTING, nothing sent yet). When that request gives up at that moment,
  its pool timeout (2 s) running out as the slot frees, or a cancel, httpcore forgets the request but keeps
  the connection, which no other request can take (only its own request would ever connect it) and
  which still counts against `max_connections`: a slot lost without any cancellation (1,500 streams at
  once against 16 slots lost all 16). Whenever a request phase fails, and at each health check, the
  connections that have sent nothing and that no waiting or running request holds are taken out of the
  pool (`prune()`).
- **checks its pool's health**: `health()` counts the slots in use, idle, stuck (NEW for longer than a
  request phase could take) and orphaned (in use, with more connections in use than requests the
  transport has open: a response whose close was interrupted, which httpcore never returns to the
  pool); a request that starts more than `CHECK_EVERY_S` after the last check checks again, and a pool
  with stuck or orphaned connections is replaced by a fresh one (`recover()`), without a restart. A
  safety net: with the shield, bench_pool_cancel finds no stuck slot, and `Stream.cancel` cancelling
  once leaves no orphan in the soak benchmark.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger(__name__)

# A connection that is NEW (opened, nothing sent) for longer than this belongs to nobody.
STUCK_AFTER_S = 5.0
# How often a request's start also checks the pool (a few dict lookups over at most 16 connections).
CHECK_EVERY_S = 10.0


@dataclass(frozen=True)
class PoolHealth:
    connections: int
    idle: int
    active: int
    stuck: int
    max_connections: int
    recycled: int
    orphaned: int = 0
    pruned: int = 0

    @property
    def usable(self) -> int:
        """Slots a new request can use: every slot not held by a stuck or orphaned connection."""
        return self.max_connections - self.stuck - self.orphaned

    def as_dict(self) -> dict[str, int]:
        return {
            "connections": self.connections,
            "idle": self.idle,
            "active": self.active,
            "stuck": self.stuck,
            "orphaned": self.orphaned,
            "usable": self.usable,
            "max_connections": self.max_connections,
            "recycled": self.recycled,
            "pruned": self.pruned,
        }


class ResilientTransport(httpx.AsyncBaseTransport):
    """See the module docstring. `make_inner` builds the pool (again, on recovery)."""

    def __init__(
        self,
        make_inner: Callable[[], httpx.AsyncBaseTransport],
        *,
        max_connections: int,
        shield: bool = True,
        prune: bool = True,
        stuck_after_s: float = STUCK_AFTER_S,
    ) -> None:
        self._make_inner = make_inner
        self._inner = make_inner()
        self._max_connections = max_connections
        self._shield = shield
        self._prune = prune
        self._stuck_after_s = stuck_after_s
        # Each NEW or CONNECTING connection seen by `health()`, with when it was first seen. Kept with the
        # connection itself: an id alone is reused by the next connection made at the same address.
        self._new_since: dict[int, tuple[Any, float]] = {}
        self._background: set[asyncio.Task[Any]] = set()
        self._checked_at = time.monotonic()
        # Requests that may hold a connection: from their start until their response is closed.
        self._open = 0
        self.recycled = 0
        # Connections taken out of the pool by `prune()`: made for a request that gave up first.
        self.pruned = 0
        # Told of each response whose caller had gone (a superseded request): its status still counts.
        self.observers: list[Callable[[httpx.Response], None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if time.monotonic() - self._checked_at > CHECK_EVERY_S:
            self._checked_at = time.monotonic()
            await self.prune()
            health = self.health()
            if health.stuck or health.orphaned:
                await self.recover()
        inner = self._inner
        self._open += 1
        if not self._shield:
            try:
                return self._counted(await _send(inner, request))
            except BaseException:
                self._open -= 1
                self._prune_soon()
                raise
        task = asyncio.ensure_future(_send(inner, request))
        try:
            return self._counted(await asyncio.shield(task))
        except asyncio.CancelledError:
            self._background.add(task)
            task.add_done_callback(lambda done: self._close_abandoned(done, request))
            raise
        except BaseException:
            self._open -= 1
            self._prune_soon()
            raise

    def _counted(self, response: httpx.Response) -> httpx.Response:
        """`response`, its stream counted out of the open requests when its close ends (or is cut short)."""
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _Counted(response.stream, self._closed_one)
        return response

    def _closed_one(self) -> None:
        self._open -= 1

    def _close_abandoned(self, task: asyncio.Task[Any], request: httpx.Request) -> None:
        """The request phase of a cancelled request ended: close what it got, so its slot frees. The
        response comes from the inner transport, before httpx's client would have tied it to `request`:
        the observers read the request's host, so it is tied here."""
        if task.cancelled() or task.exception() is not None:
            self._open -= 1
            self._background.discard(task)
            self._prune_soon()
            return
        response: httpx.Response = self._counted(task.result())
        response.request = request
        for observer in self.observers:
            try:
                observer(response)
            except Exception:
                log.exception("observer of an abandoned response failed")
        closing = asyncio.ensure_future(response.aclose())
        self._background.add(closing)
        closing.add_done_callback(self._background.discard)
        self._background.discard(task)

    async def prune(self) -> int:
        """Take out of the pool the connections that have sent nothing and that no request holds (see the
        module docstring); returns how many. Each is closed (one that never connected has nothing to close).
        A transport made with `prune=False` (bench/bench_pool_cancel.py's comparison) leaves them."""
        pool = getattr(self._inner, "_pool", None) if self._prune else None
        connections: list[Any] | None = getattr(pool, "_connections", None)
        requests: list[Any] | None = getattr(pool, "_requests", None)
        if connections is None or requests is None:
            return 0
        held = {id(r.connection) for r in requests if getattr(r, "connection", None) is not None}
        unused = [c for c in connections if id(c) not in held and _sent_nothing(c)]
        for connection in unused:
            connections.remove(connection)
        self.pruned += len(unused)
        for connection in unused:
            with contextlib.suppress(Exception):
                await connection.aclose()
        return len(unused)

    def _prune_soon(self) -> None:
        """`prune()` in a task of its own: a failed request phase must not wait for it (nor a cancelled
        caller be cancelled again inside it)."""
        pruning = asyncio.ensure_future(self.prune())
        self._background.add(pruning)
        pruning.add_done_callback(self._background.discard)

    def health(self) -> PoolHealth:
        """The pool's state now (reads httpcore's public `connections` and `info()`, or an aiohttp pool's
        counts: it has no connection that sent nothing, so none stuck)."""
        counts = getattr(self._inner, "counts", None)
        if counts is not None:
            in_use, idle = counts()
            orphaned = max(0, in_use - self._open)
            return PoolHealth(
                connections=in_use + idle,
                idle=idle,
                active=in_use - orphaned,
                stuck=0,
                max_connections=self._max_connections,
                recycled=self.recycled,
                orphaned=orphaned,
                pruned=self.pruned,
            )
        connections = _connections(self._inner)
        now = time.monotonic()
        seen: dict[int, tuple[Any, float]] = {}
        idle = stuck = 0
        for connection in connections:
            info = connection.info()
            if "NEW" in info or "CONNECTING" in info:
                known, since = self._new_since.get(id(connection), (connection, now))
                if known is not connection:
                    since = now
                seen[id(connection)] = (connection, since)
                if now - since > self._stuck_after_s:
                    stuck += 1
            elif connection.is_idle():
                idle += 1
        self._new_since = seen
        in_use = len(connections) - idle - stuck
        orphaned = max(0, in_use - self._open)
        return PoolHealth(
            connections=len(connections),
            idle=idle,
            active=in_use - orphaned,
            stuck=stuck,
            max_connections=self._max_connections,
            recycled=self.recycled,
            orphaned=orphaned,
            pruned=self.pruned,
        )

    async def recover(self) -> bool:
        """Replace the pool if it holds stuck or orphaned connections; True when it did."""
        health = self.health()
        if health.stuck == 0 and health.orphaned == 0:
            return False
        old, self._inner = self._inner, self._make_inner()
        self._new_since = {}
        self.recycled += 1
        log.warning(
            "HTTP connection pool had %d stuck and %d orphaned connections; replaced it", health.stuck, health.orphaned
        )
        await old.aclose()
        return True

    async def drain(self) -> None:
        """Wait for the request phases of cancelled requests, and the closing of what they got."""
        while self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    async def aclose(self) -> None:
        for task in list(self._background):
            task.cancel()
        await self._inner.aclose()


def _sent_nothing(connection: Any) -> bool:
    """A connection not yet carrying a request: never connected (httpcore says CONNECTING until its own
    request connects it), or connected with nothing sent (NEW)."""
    info = connection.info()
    return "CONNECTING" in info or "NEW" in info


def _connections(transport: httpx.AsyncBaseTransport) -> list[Any]:
    # httpx keeps its httpcore pool in a private attribute; without it there is nothing to inspect.
    pool = getattr(transport, "_pool", None)
    return list(getattr(pool, "connections", []))


class _Counted(httpx.AsyncByteStream):
    """A response body that tells the transport once when its close ends, however it ends: a close cut
    short by a second cancellation still counts the request out, so the connection it left in use shows
    as orphaned."""

    def __init__(self, inner: httpx.AsyncByteStream, closed: Callable[[], None]) -> None:
        self._inner = inner
        self._closed = closed
        self._counted = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        # The inner body's own iterator, not a generator around it: each piece of every model response
        # passes here, and a layer that only forwards would cost a generator step per piece.
        return self._inner.__aiter__()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            if not self._counted:
                self._counted = True
                self._closed()


async def _send(inner: httpx.AsyncBaseTransport, request: httpx.Request) -> httpx.Response:
    """The request phase, sent once more on a new connection when a kept-alive one turns out closed before
    any response ("Server disconnected without sending a response"): a server closes an idle connection
    on its own schedule (llama.cpp's after 5 s), and the pool learns it only by trying."""
    try:
        return await inner.handle_async_request(request)
    except httpx.RemoteProtocolError as error:
        if "without sending a response" not in str(error):
            raise
        log.debug("%s closed a kept-alive connection; sending again on a new one", request.url.host)
        return await inner.handle_async_request(request)
