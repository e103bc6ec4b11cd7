"""A model's WebSocket connections: opened ahead of need, kept alive, reopened with back-off when they drop.

One turn is in flight per connection (the Responses API answers `response_already_in_flight` to a second
one on servers without `stream_id` lanes), so a model gets a small pool: `size` connections at most,
opened as turns need them, the most recently used handed out first so that one connection stays warm and
its continuation chain stays long. The `websockets` library does the framing and the keep-alive (a ping
every `PING_INTERVAL_S`; a connection that stops answering is closed).

A connection that closes while idle (the server's connection time limit, a network drop, a failed ping)
is replaced in the background; a failed open is retried after a back-off that doubles, from
`BACKOFF_START_S` to `BACKOFF_MAX_S`, and while it runs a turn that finds no open connection fails at once
(`BackendUnavailable`, saying when the next attempt is) instead of holding a keystroke up.

Failures to open, mapped to `completion.providers.errors`:

    refused, reset, DNS                BackendUnavailable
    handshake answered 429             RateLimited (Retry-After when sent)
    handshake answered 5xx             BackendUnavailable
    handshake answered other status    BadResponse (401: key refused; 404: no WebSocket mode there)
    no handshake within connect_timeout_s   BackendTimeout
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus, WebSocketException
from websockets.protocol import State

from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    CompletionError,
    RateLimited,
)
from tandem.completion.providers.http import parse_retry_after

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

    from tandem.completion.providers.backends.continuation import Held

log = logging.getLogger(__name__)

PING_INTERVAL_S = 20.0
BACKOFF_START_S = 0.25
BACKOFF_MAX_S = 8.0
# Background reopen attempts after a drop before waiting for the next turn to ask again.
MAX_BACKGROUND_ATTEMPTS = 6
# A Responses event can carry a whole answer (response.completed repeats the output).
MAX_MESSAGE_BYTES = 16 * 1024 * 1024


@dataclass(eq=False, kw_only=True)
class Socket:
    """One open connection and what it holds server-side."""

    ws: ClientConnection
    number: int
    turns: int = 0
    # The connection's most recent response, when a completion may continue from it.
    held: Held | None = None
    watcher: asyncio.Task[None] | None = field(default=None, repr=False)

    @property
    def open(self) -> bool:
        return self.ws.state is State.OPEN


class SocketPool:
    """Up to `size` connections to `url`; `headers()` gives the handshake's headers (the key, read now)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Callable[[], Mapping[str, str]],
        connect_timeout_s: float,
        size: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self.host = urlsplit(url).netloc or url
        self._headers = headers
        self._connect_timeout_s = connect_timeout_s
        self._size = max(1, size)
        self._clock = clock
        self._idle: list[Socket] = []
        # Every connection not yet closed, busy ones included (closed at `aclose`).
        self._open_sockets: set[Socket] = set()
        self._count = 0  # open or opening, busy or idle
        self._waiters: list[asyncio.Future[None]] = []
        self._failures = 0
        self._retry_at = 0.0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reopening: asyncio.Task[None] | None = None
        self._closed = False
        # Connections opened since the start: how often one had to be (re)made.
        self.opened = 0

    async def acquire(self, *, prefer: Callable[[Socket], bool] = lambda s: False) -> tuple[Socket, bool]:
        """An idle connection (one that `prefer`s first, else the most recently used) or a new one, and
        whether it served a turn before. Waits for a busy one to be freed when `size` are open."""
        while True:
            if self._closed:
                raise BackendUnavailable(f"the WebSocket connection to {self.host} was closed")
            socket = self._take_idle(prefer)
            if socket is not None:
                return socket, socket.turns > 0
            if self._reopening is not None and self._retry_at <= self._clock():
                # A replacement is being opened: wait for it rather than open a second one.
                await asyncio.wait([self._reopening])
                continue
            if self._count < self._size:
                return await self._open_for_turn(), False
            freed = asyncio.get_running_loop().create_future()
            self._waiters.append(freed)
            try:
                await freed
            finally:
                if freed in self._waiters:
                    self._waiters.remove(freed)

    async def _open_for_turn(self) -> Socket:
        """A new connection for the turn waiting here. The opening outlives the turn: a turn superseded while
        its handshake is under way (a key press during a 150 ms TLS handshake) leaves the connection to the
        pool instead of tearing it down half-open, so that a typist faster than the handshake still gets one."""
        opening = asyncio.ensure_future(self._open())
        self._tasks.add(opening)
        opening.add_done_callback(self._tasks.discard)
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            self.keep(opening)
            raise

    def open_beside(self) -> asyncio.Task[Socket]:
        """Open one connection now, even with `size` open (one over, for as long as a handshake takes): the
        race of a superseded turn's drain against a new connection. The caller `release`s or `keep`s it;
        a connection released while the pool is one over is closed, unless a turn is waiting for it."""
        opening = asyncio.ensure_future(self._open())
        self._tasks.add(opening)
        opening.add_done_callback(self._tasks.discard)
        return opening

    def keep(self, opening: asyncio.Task[Socket]) -> None:
        """The pool takes the connection `opening` makes, when it is made."""
        opening.add_done_callback(self._adopt)

    def _adopt(self, opening: asyncio.Task[Socket]) -> None:
        """An opening whose turn went away: the pool keeps the connection (or forgets the failure)."""
        if opening.cancelled() or opening.exception() is not None:
            return
        self.release(opening.result())

    def release(self, socket: Socket) -> None:
        """Give back a connection whose turn ended cleanly (a closed one is dropped)."""
        if not socket.open or self._closed:
            self.discard(socket)
            return
        if self._count > self._size and not self._waiters:
            # One over the size (after a race) and no turn waiting: closed, with no replacement.
            self._forget(socket)
            return
        self._idle.append(socket)
        self._notify()

    def discard(self, socket: Socket) -> None:
        """Drop a connection that broke (or cannot be reused); a replacement opens in the background."""
        self._forget(socket)
        if not self._closed:
            self._reopen_soon()

    def _forget(self, socket: Socket) -> None:
        """Close a connection and count it out."""
        if socket in self._idle:
            self._idle.remove(socket)
        if socket.watcher is not None and socket.watcher is not asyncio.current_task():
            socket.watcher.cancel()
        socket.watcher = None
        if socket in self._open_sockets:
            self._open_sockets.discard(socket)  # counted out once only
            self._count -= 1
        self._spawn(_close(socket))
        self._notify()

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` in the background, kept until done (the drain of a superseded turn)."""
        self._spawn(work)

    async def settled(self) -> None:
        """Wait until the background work started so far (drains, reopens) is done."""
        while self._tasks:
            await asyncio.wait(list(self._tasks))

    async def aclose(self) -> None:
        self._closed = True
        sockets, self._idle = self._open_sockets, []
        self._open_sockets = set()
        for socket in sockets:
            if socket.watcher is not None:
                socket.watcher.cancel()
            await _close(socket)
        for task in list(self._tasks):
            task.cancel()
        self._notify()

    @property
    def idle(self) -> int:
        return len(self._idle)

    @property
    def spare(self) -> bool:
        """Whether a turn starting now would get a connection without waiting for a busy one."""
        return bool(self._idle) or self._count < self._size

    @property
    def idle_sockets(self) -> tuple[Socket, ...]:
        """The idle connections, oldest first (for diagnostics and tests)."""
        return tuple(self._idle)

    def _take_idle(self, prefer: Callable[[Socket], bool]) -> Socket | None:
        for socket in [s for s in self._idle if not s.open]:
            self.discard(socket)
        if not self._idle:
            return None
        chosen = next((s for s in reversed(self._idle) if prefer(s)), self._idle[-1])
        self._idle.remove(chosen)
        return chosen

    async def _open(self) -> Socket:
        wait_s = self._retry_at - self._clock()
        if wait_s > 0:
            raise BackendUnavailable(f"the WebSocket connection to {self.host} dropped; reconnecting in {wait_s:.1f} s")
        self._count += 1
        try:
            ws = await self._connect()
        except BaseException:
            self._count -= 1
            self._notify()
            raise
        self.opened += 1
        socket = Socket(ws=ws, number=self.opened)
        self._open_sockets.add(socket)
        socket.watcher = asyncio.ensure_future(self._watch(socket))
        return socket

    async def _connect(self) -> ClientConnection:
        try:
            headers = dict(self._headers())
            ws = await connect(
                self.url,
                additional_headers=headers,
                open_timeout=self._connect_timeout_s,
                ping_interval=PING_INTERVAL_S,
                ping_timeout=PING_INTERVAL_S,
                close_timeout=1.0,
                max_size=MAX_MESSAGE_BYTES,
                # Events are small and frequent: compressing each costs time on both ends for little.
                compression=None,
            )
        except CompletionError:
            raise
        except BaseException as exc:
            error = self._open_error(exc)
            if error is None:
                raise
            self._failed()
            raise error from None
        self._failures = 0
        self._retry_at = 0.0
        return ws

    def _open_error(self, exc: BaseException) -> CompletionError | None:
        if isinstance(exc, InvalidStatus):
            response = exc.response
            status = response.status_code
            words = f"{self.host} refused the WebSocket connection: {status} {response.reason_phrase}"
            if status == 429:
                retry_after_s = parse_retry_after(response.headers.get("retry-after"))
                return RateLimited(words, retry_after_s=retry_after_s)
            if status >= 500:
                return BackendUnavailable(words)
            if status == 404:
                return BadResponse(f"{words} (does this provider offer the Responses API's WebSocket mode?)")
            return BadResponse(words)
        if isinstance(exc, TimeoutError):
            return BackendTimeout(f"could not open a WebSocket to {self.host} within {self._connect_timeout_s:g} s")
        if isinstance(exc, OSError | WebSocketException | EOFError):
            return BackendUnavailable(f"could not open a WebSocket to {self.host}: {type(exc).__name__}")
        return None

    def _failed(self) -> None:
        self._failures += 1
        delay_s = min(BACKOFF_MAX_S, BACKOFF_START_S * 2 ** (self._failures - 1))
        self._retry_at = self._clock() + delay_s

    async def _watch(self, socket: Socket) -> None:
        """Notice a connection closing while idle (server time limit, failed keep-alive) and replace it."""
        await socket.ws.wait_closed()
        if socket in self._idle:
            log.debug("WebSocket %d to %s closed while idle", socket.number, self.host)
            self.discard(socket)

    def _reopen_soon(self) -> None:
        if self._reopening is not None or self._idle:
            return
        self._reopening = asyncio.ensure_future(self._reopen())
        self._tasks.add(self._reopening)
        self._reopening.add_done_callback(self._tasks.discard)

    async def _reopen(self) -> None:
        """Keep one connection ready after a drop, trying again after each back-off."""
        try:
            for _ in range(MAX_BACKGROUND_ATTEMPTS):
                if self._closed or self._idle or self._count >= self._size:
                    return
                wait_s = self._retry_at - self._clock()
                if wait_s > 0:
                    await asyncio.sleep(wait_s)  # sleep-ok: the back-off between reconnect attempts
                    continue
                try:
                    socket = await self._open()
                except CompletionError as error:
                    log.debug("reopening the WebSocket to %s failed: %s", self.host, error)
                    continue
                self.release(socket)
                return
        finally:
            self._reopening = None

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _notify(self) -> None:
        """Wake every turn waiting for a connection (each looks again)."""
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)


async def _close(socket: Socket) -> None:
    try:
        await socket.ws.close()
    except (OSError, WebSocketException):
        pass
