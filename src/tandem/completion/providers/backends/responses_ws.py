"""The `openai-responses` backend over one persistent WebSocket (`transport = "websocket"`).

OpenAI's Responses API in WebSocket mode: connect once to `{base_url}/responses` (ws:// or wss://) with
the bearer key; each turn is a `response.create` event whose fields are a `POST /responses` body without
`stream` (implicit) and `background` (not offered); the server answers with the same events the HTTP
stream carries (`response.output_text.delta` ... `response.completed`, or `error`), one JSON text
message each. The bodies and the events are read exactly as `openai_responses` reads them.

What the connection adds:

- **No handshake per request.** Connections (`ws_pool`) are opened and warmed at initialize with a
  `generate: false` turn (the server prepares the model and instructions without generating), kept
  alive, and reopened with back-off when they drop.
- **Continuation.** The server holds each connection's most recent response, so the next completion in
  the same document sends `previous_response_id` and only an edit of the previous prompt
  (`continuation`), where that is shorter. If the server has forgotten it (`previous_response_not_found`)
  the turn is sent again in full on the same connection.
- **Supersession.** The protocol has no way to stop a turn (`response.cancel` belongs to the Realtime
  API). A superseded completion's turn is read out in the background (its text discarded) while the next
  turn takes another connection of the pool, opening one if it may; its connection then serves again,
  still holding the chain. When every connection is busy the next turn would wait for that drain, so it
  races one more connection's handshake (`WHEN_BUSY`): the sooner of the two serves, and the drained
  connection is closed if the handshake wins. A turn that may still write more than `DRAIN_MAX_TOKENS`
  (an edit's, such as the accurate half of a hedged edit whose fast answer passed) is not read on: its
  connection is closed at once, as an HTTP stream is closed, and a new one opens in the background. What a
  drain costs: the rest of the answer is generated (and billed), at most `max_tokens`; whether a provider
  stops generating when the socket closes is not documented.
- **A dropped socket.** A connection that closes before a turn has produced any text, or refuses it with
  `websocket_connection_limit_reached` (the protocol's 60-minute limit), is replaced and the turn sent once
  more, in full; one that closes mid-answer ends the completion with the text so far
  and `BadResponse("stream truncated ...")`, as a truncated HTTP stream does; the next one opens anew.

One turn is in flight per connection: `stream_id` lanes (several turns on one connection) are a recent
addition that other servers of the protocol answer with `response_already_in_flight`; the pool gives the
same concurrency everywhere.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import ConnectionClosed

from tandem.completion.providers.backends.base import ModelRequest
from tandem.completion.providers.backends.continuation import Held, continuation
from tandem.completion.providers.backends.openai_responses import consume_payload, error_of, request_body
from tandem.completion.providers.backends.sse_stream import cut_at_stops, excerpt
from tandem.completion.providers.backends.streaming import api_key, now_ns, request_headers
from tandem.completion.providers.backends.ws_pool import Socket, SocketPool
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    CompletionError,
    NotConfigured,
)

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.backends.base import StreamStats

log = logging.getLogger(__name__)

# Connections per model: one serves while others finish superseded turns. Three, not two: a completion
# turn lasts ~300 ms at the fast profile, so a key every 150 ms keeps two drains going; with two
# connections the next key waits or a turn is closed (`bench/bench_ws_superseded.py --pool-size`).
POOL_SIZE = 3
# A superseded turn is read to its end for at most this long; past it, its connection is closed.
DRAIN_LIMIT_S = 30.0
# A turn abandoned mid-way that may still write more than this many tokens (an edit, or the accurate half of
# a hedged edit the fast answer settled) is not read to its end: its connection is closed at once and a new
# one opens in the background. A completion's turn (`max_tokens` 256) is drained as before, keeping its
# connection and the chain it holds: the most it can still cost is small, a handshake per keystroke is not.
DRAIN_MAX_TOKENS = 512
# With every connection busy, the next key press would wait for a turn it does not read. Then ("race") the
# turn is read out while one more connection opens, and whichever is ready first serves: the drain, keeping
# its connection and chain, or the new connection, the old one being closed at that moment. The next turn
# waits for the sooner of the two, and at most a handshake's worth of unread tokens is generated. "drain"
# and "close" are the two simple rules, kept for `bench/bench_ws_superseded.py`, which measures all three.
WHEN_BUSY: Literal["race", "drain", "close"] = "race"
_TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
_HELD_AFTER = frozenset({"response.completed", "response.incomplete"})
PREVIOUS_NOT_FOUND = "previous_response_not_found"
# A connection open for the protocol's longest (60 minutes) refuses the next turn with this code; the
# documented remedy is a new connection, on which the turn is sent again.
CONNECTION_LIMIT = "websocket_connection_limit_reached"


# A warm-up told of no request to come prepares the model only.
_NO_PROMPT = ModelRequest(messages=(("user", ""),))


def websocket_url(base_url: str) -> str:
    """`{base_url}/responses` with the scheme a WebSocket uses (https -> wss, http -> ws)."""
    parts = urlsplit(base_url.rstrip("/") + "/responses")
    scheme = {"https": "wss", "http": "ws"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path, parts.query, ""))


@dataclass(kw_only=True)
class _Turn:
    """One `response.create` on one connection, as it goes."""

    socket: Socket
    event: dict[str, Any]
    # The chain this turn makes if it completes (None: it makes none).
    completion: tuple[str, str, str] | None  # (path, instructions, user text)
    continued_from: Held | None = None
    sent_chars: int = 0
    response_id: str = ""
    answer_chars: int = 0
    events: int = 0
    texts: int = 0
    ended: str = ""  # the terminal event's type, once read
    error: tuple[str, object] | None = field(default=None)

    def held_after(self) -> Held | None:
        if self.ended not in _HELD_AFTER or not self.response_id or self.completion is None:
            return None
        path, instructions, user_text = self.completion
        if self.continued_from is not None:
            return self.continued_from.after(
                self.response_id, user_text=user_text, sent_chars=self.sent_chars, answer_chars=self.answer_chars
            )
        return Held(
            response_id=self.response_id,
            path=path,
            instructions=instructions,
            user_text=user_text,
            held_chars=len(user_text) + self.answer_chars,
        )


class ResponsesWebSocketBackend:
    """Streams text from a Responses API over kept WebSocket connections. Implements `base.Backend`."""

    name = "openai-responses"

    def __init__(
        self,
        config: ModelConfig,
        *,
        env: Mapping[str, str] = os.environ,
        pool_size: int | None = None,  # POOL_SIZE, read now
        continue_turns: bool = True,
    ) -> None:
        self._config = config
        self._env = env
        # False sends every prompt whole (a baseline for measuring what continuation is worth).
        self._continue_turns = continue_turns
        self.url = websocket_url(config.base_url)
        self.pool = SocketPool(
            self.url, headers=self._headers, connect_timeout_s=config.connect_timeout_s, size=pool_size or POOL_SIZE
        )

    def _headers(self) -> dict[str, str]:
        return request_headers(api_key(self._config, self._env), streaming=False)

    def create_event(self, request: ModelRequest) -> dict[str, Any]:
        """The `response.create` event sending `request` in full (public so tests can see what is sent)."""
        return {"type": "response.create", **request_body(self._config, request)}

    async def warm(self, like: ModelRequest | None = None) -> None:
        """Open a connection and send a `generate: false` turn with the model and the instructions of `like`
        (the system text of the requests to come: there is no document yet), best effort."""
        try:
            socket, _ = await self.pool.acquire()
        except NotConfigured:
            return
        except CompletionError as error:
            log.debug("warming %s failed (ignored): %s", self.pool.host, error)
            return
        event: dict[str, Any] = {"type": "response.create", "generate": False, "store": self._config.store}
        warm_body = request_body(self._config, like or _NO_PROMPT)
        for key in ("model", "instructions"):
            if key in warm_body:
                event[key] = warm_body[key]
        event["input"] = []
        turn = _Turn(socket=socket, event=event, completion=None)
        try:
            await self._send(turn)
            async with asyncio.timeout(self._config.timeout_s):
                while not turn.ended:
                    await self._next_payload(turn)
        except (CompletionError, TimeoutError, ConnectionClosed, OSError) as error:
            log.debug("warming %s: %s (ignored)", self.pool.host, type(error).__name__)
            if not turn.ended:
                # Its events may still come: the connection cannot serve another turn.
                self.pool.discard(socket)
                return
        self._finish(turn)

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        """Yield text as it arrives; see `base.Backend.stream`."""
        async with aclosing(cut_at_stops(self._texts(request, stats), request, stats)) as texts:  # type: ignore[type-var]
            async for text in texts:
                yield text

    async def _texts(self, request: ModelRequest, stats: StreamStats) -> AsyncGenerator[str, None]:
        stats.transport = "websocket"
        full = self.create_event(request)
        chain = _chain_key(request, full)
        retried = False
        fallback = False
        socket: Socket | None = None
        while True:
            if socket is None:
                socket, reused = await self.pool.acquire(prefer=lambda s: _holds(s, chain))
                stats.connection_reused = reused
            turn = self._turn(socket, full, chain, stats, fallback=fallback, follow_up=request.follow_up)
            try:
                async with aclosing(self._run(turn, stats)) as texts:
                    async for text in texts:
                        yield text
                return
            except _Forgotten:
                # Sent again in full, on this connection (it answered, so it is fine).
                fallback = True
            except _Dropped as dropped:
                socket = None
                if dropped.texts or retried:
                    raise dropped.error from None
                retried = True
                log.debug("WebSocket to %s dropped before answering; sending again", self.pool.host)

    def _turn(
        self,
        socket: Socket,
        full: dict[str, Any],
        chain: tuple[str, str, str] | None,
        stats: StreamStats,
        *,
        fallback: bool,
        follow_up: str,
    ) -> _Turn:
        if fallback:
            stats.continuation = "fallback"
            return _Turn(socket=socket, event=full, completion=chain)
        if chain is None:
            stats.continuation = "full"
            return _Turn(socket=socket, event=full, completion=None)
        path, instructions, user_text = chain
        held = socket.held if self._continue_turns else None
        message = continuation(held, path=path, instructions=instructions, user_text=user_text, follow_up=follow_up)
        if held is None or message is None:
            stats.continuation = "full"
            return _Turn(socket=socket, event=full, completion=chain)
        stats.continuation = "continued"
        event = {
            **full,
            "input": [{"role": "user", "content": message}],
            "previous_response_id": held.response_id,
        }
        return _Turn(socket=socket, event=event, completion=chain, continued_from=held, sent_chars=len(message))

    async def _run(self, turn: _Turn, stats: StreamStats) -> AsyncGenerator[str, None]:
        """Send `turn` and yield its text. Its connection goes back to the pool when the turn ends, to a
        background drain if the turn is abandoned mid-way, or is dropped if it broke."""
        socket = turn.socket
        socket.held = None  # whatever the server held, this turn replaces it
        finished = False
        try:
            await self._send(turn, stats)
            while not turn.ended:
                payload = await self._next_payload(turn, stats)
                kind = str(payload.get("type", ""))
                if kind == "error":
                    code, _ = error_of(payload)
                    if code == PREVIOUS_NOT_FOUND and turn.continued_from is not None and not turn.texts:
                        finished = True  # the connection stays with the caller, which sends the turn in full
                        raise _Forgotten
                    if code == CONNECTION_LIMIT and not turn.texts:
                        # The connection is spent: closed, and the turn sent again on a new one (in full:
                        # what the old connection held is gone with it).
                        finished = True
                        self.pool.discard(socket)
                        raise _Dropped(
                            BackendUnavailable(f"the WebSocket to {self.pool.host} reached its connection limit"),
                            texts=0,
                        )
                text = consume_payload(payload, kind, stats)
                if text:
                    turn.texts += 1
                    turn.answer_chars += len(text)
                    yield text
            finished = True
            self._finish(turn)
        except ConnectionClosed:
            finished = True
            self.pool.discard(socket)
            where = f"after {turn.events} events" if turn.events else "before answering"
            if turn.texts:
                error: CompletionError = BadResponse(
                    f"stream truncated: the WebSocket to {self.pool.host} closed {where}"
                )
            else:
                error = BackendUnavailable(f"the WebSocket to {self.pool.host} closed {where}")
            raise _Dropped(error, texts=turn.texts) from None
        except TimeoutError:
            finished = True
            self.pool.discard(socket)
            raise BackendTimeout(
                f"{self.pool.host} sent nothing on the WebSocket for {self._config.timeout_s:g} s"
            ) from None
        finally:
            if finished:
                pass
            elif turn.ended:
                self._finish(turn)  # ended by an error event: the connection is fine
            elif int(turn.event.get("max_output_tokens") or 0) > DRAIN_MAX_TOKENS or (
                WHEN_BUSY == "close" and not self.pool.spare
            ):
                # Abandoned with much still to write: close rather than read (and pay for) the rest.
                self.pool.discard(socket)
            elif WHEN_BUSY == "race" and not self.pool.spare:
                # The next turn would wait for this one's drain: race it against a new connection.
                self.pool.spawn(self._race(turn))
            else:
                # Abandoned mid-turn (superseded, or the caller's deadline): read it out in the background.
                self.pool.spawn(self._drain(turn))

    async def _send(self, turn: _Turn, stats: StreamStats | None = None) -> None:
        data = json.dumps(turn.event, separators=(",", ":"), ensure_ascii=False)
        sent_ns = now_ns()
        # Cancelling a send half-way would leave a torn frame on the connection: let it finish.
        await asyncio.shield(turn.socket.ws.send(data))
        turn.socket.turns += 1
        if stats is not None:
            stats.request_sent_ns = stats.request_sent_ns or sent_ns
            stats.bytes_sent += len(data.encode("utf-8"))

    async def _next_payload(self, turn: _Turn, stats: StreamStats | None = None) -> dict[str, Any]:
        """The turn's next event; notes its id and whether it ends the turn."""
        async with asyncio.timeout(self._config.timeout_s):
            message = await turn.socket.ws.recv()
        if stats is not None and not stats.first_byte_ns:
            stats.first_byte_ns = now_ns()
        turn.events += 1
        payload = _payload(message)
        kind = payload.get("type")
        response = payload.get("response")
        if isinstance(response, dict) and isinstance(response.get("id"), str):
            turn.response_id = response["id"]
        if kind in _TERMINAL:
            turn.ended = str(kind)
        return payload

    def _finish(self, turn: _Turn) -> None:
        """The turn is over: keep what the server now holds, and give the connection back."""
        turn.socket.held = turn.held_after()
        self.pool.release(turn.socket)

    async def _drain(self, turn: _Turn) -> None:
        """Read an abandoned turn to its end (nothing is shown), then let its connection serve again."""
        if await self._read_out(turn):
            self._finish(turn)
        else:
            self.pool.discard(turn.socket)

    async def _race(self, turn: _Turn) -> None:
        """Read an abandoned turn out while a new connection opens; keep whichever is ready first."""
        opening = self.pool.open_beside()
        drain = asyncio.ensure_future(self._read_out(turn))
        try:
            await asyncio.wait([opening, drain], return_when=asyncio.FIRST_COMPLETED)
            if not drain.done() and (opening.cancelled() or opening.exception() is not None):
                await drain  # no new connection (back-off, refused): the drain is the only way
        finally:
            if not drain.done():
                drain.cancel()  # the new connection is ready first (or the pool is closing)
                await asyncio.gather(drain, return_exceptions=True)
        if drain.cancelled() or not drain.result():
            # The handshake won (or the drain broke): the old connection is closed before the new one is
            # given, so that the pool is never left one over.
            self.pool.discard(turn.socket)
            self.pool.keep(opening)
            return
        # The drain won: the handshake is given up. One that finished meanwhile is released first, so that
        # the pool closes it as one too many (unless a turn is waiting for it) and keeps the drained one,
        # which holds the conversation.
        opening.cancel()
        await asyncio.gather(opening, return_exceptions=True)
        if not opening.cancelled() and opening.exception() is None:
            self.pool.release(opening.result())
        self._finish(turn)

    async def _read_out(self, turn: _Turn) -> bool:
        """Read the rest of a turn, discarding its text; whether it ended cleanly."""
        try:
            async with asyncio.timeout(DRAIN_LIMIT_S):
                while not turn.ended:
                    payload = await self._next_payload(turn)
                    if payload.get("type") == "response.output_text.delta" and isinstance(payload.get("delta"), str):
                        turn.answer_chars += len(payload["delta"])
        except (TimeoutError, ConnectionClosed, CompletionError, OSError) as error:
            log.debug("reading out a superseded turn on %s failed: %s", self.pool.host, type(error).__name__)
            return False
        return True

    async def aclose(self) -> None:
        await self.pool.aclose()


class _Forgotten(Exception):
    """The server no longer holds the response a continuation named."""


class _Dropped(Exception):
    """The connection closed during a turn."""

    def __init__(self, error: CompletionError, *, texts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.texts = texts


def _chain_key(request: ModelRequest, full: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """(path, instructions, user text) of a request that may continue a chain (one of a series: it has a
    `follow_up`); None for any other (an edit) or anything that is not one user message."""
    if not request.follow_up:
        return None
    items = full.get("input")
    if not isinstance(items, list) or len(items) != 1:
        return None
    content = items[0].get("content") if isinstance(items[0], dict) else None
    if not isinstance(content, str):
        return None
    return request.path, str(full.get("instructions", "")), content


def _holds(socket: Socket, chain: tuple[str, str, str] | None) -> bool:
    return chain is not None and socket.held is not None and socket.held.path == chain[0]


def _payload(message: str | bytes) -> dict[str, Any]:
    text = message.decode("utf-8", errors="replace") if isinstance(message, bytes) else message
    try:
        payload = json.loads(text)
    except ValueError:
        raise BadResponse(f"a WebSocket event is not JSON: {excerpt(text)!r}") from None
    if not isinstance(payload, dict):
        raise BadResponse(f"a WebSocket event is not a JSON object: {excerpt(text)!r}")
    return payload
