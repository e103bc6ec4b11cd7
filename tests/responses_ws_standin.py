"""A stand-in of OpenAI's Responses API WebSocket mode, written from OpenAI's documentation (the WebSocket
mode guide: connect to `/v1/responses` with a bearer key; each turn is a `response.create` event; the server
answers with the HTTP stream's events, one JSON text message each, `response.completed` last or an `error`
event; one response in flight per connection; a connection open past the 60-minute limit answers
`websocket_connection_limit_reached` and the remedy is a new connection), not from tandem's simulator.

`refuse_first` connections answer their first generating turn with the connection-limit error; every other
turn streams `answer` in deltas. With `hold` set, a turn sends its first delta, then waits for `hold` (or
the client's close) before the rest (a slow model), so a test can abandon it part way. With `tokens_per_s`
set, a turn is paced as a model's: `ttft_s` before its first delta, then one delta (one token) per
1/`tokens_per_s` seconds, until it ends or the client closes the connection (a benchmark's model; whether a
provider stops generating when its client closes is not documented). What it saw (connections, turns,
deltas sent, turns completed, connections closed by the client mid-turn) is kept for the test to judge;
`ended` is set when a connection's handler is done. With `accept` set, handshakes past that many are
answered 503.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response


@dataclass
class StandIn:
    answer: str = "return a + b\n"
    refuse_first: int = 0
    connections: int = 0
    turns: list[dict[str, Any]] = field(default_factory=list)
    hold: asyncio.Event | None = None
    ttft_s: float = 0.0
    tokens_per_s: float = 0.0
    # How long the opening handshake takes (a real provider's TLS and WebSocket upgrade; loopback is ~1 ms).
    handshake_s: float = 0.0
    # Set when a client's opening handshake reaches the stand-in.
    handshaking: asyncio.Event = field(default_factory=asyncio.Event)
    # Handshakes past this many are answered 503 (a provider that will not take one more connection), and
    # `refused` is set.
    accept: int | None = None
    handshakes: int = 0
    refused: asyncio.Event = field(default_factory=asyncio.Event)
    deltas_sent: int = 0
    completed: int = 0
    closed_mid_turn: int = 0
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    async def handle(self, connection: ServerConnection) -> None:
        try:
            await self._serve(connection)
        finally:
            self.ended.set()

    async def _serve(self, connection: ServerConnection) -> None:
        self.connections += 1
        number = self.connections
        refused = False
        async for message in connection:
            event = json.loads(message)
            if event.get("type") != "response.create":
                await connection.send(json.dumps({"type": "error", "error": {"code": "invalid_event"}}))
                continue
            self.turns.append(event)
            response_id = f"resp_{next(self._ids)}"
            if event.get("generate") is False:
                await self._complete(connection, response_id, "")
                continue
            if number <= self.refuse_first and not refused:
                refused = True
                await connection.send(
                    json.dumps(
                        {
                            "type": "error",
                            "status": 400,
                            "error": {
                                "type": "invalid_request_error",
                                "code": "websocket_connection_limit_reached",
                                "message": "Responses websocket connection limit reached (60 minutes). "
                                "Create a new websocket connection to continue.",
                            },
                        }
                    )
                )
                continue
            try:
                await self._complete(connection, response_id, self.answer, slow=True)
            except ConnectionClosed:
                self.closed_mid_turn += 1
                return

    async def _complete(self, connection: ServerConnection, response_id: str, text: str, *, slow: bool = False) -> None:
        response = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
        await connection.send(json.dumps({"type": "response.created", "response": response}))
        paced = slow and self.tokens_per_s > 0
        if paced:
            await asyncio.sleep(self.ttft_s)  # sleep-ok: a paced model's time to first token
        for i in range(0, len(text), 4):
            if paced and i:
                await asyncio.sleep(1 / self.tokens_per_s)  # sleep-ok: a paced model's token rate
            delta = {"type": "response.output_text.delta", "item_id": "msg_1", "output_index": 0,
                     "content_index": 0, "delta": text[i : i + 4]}  # fmt: skip
            await connection.send(json.dumps(delta))
            if slow:
                self.deltas_sent += 1
                if self.hold is not None and i == 0:
                    # A slow model: the rest waits for `hold`, or ends when the client closes the connection.
                    waits = {asyncio.ensure_future(self.hold.wait()), asyncio.ensure_future(connection.wait_closed())}
                    _, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                    for waiting in pending:
                        waiting.cancel()
        done = {**response, "status": "completed",
                "usage": {"input_tokens": 10, "output_tokens": max(1, len(text) // 4), "total_tokens": 0}}  # fmt: skip
        await connection.send(json.dumps({"type": "response.completed", "response": done}))
        if slow:
            self.completed += 1


async def start(stand_in: StandIn) -> tuple[Server, str]:
    """Serve `stand_in` on loopback; returns the server and its `base_url` (`http://127.0.0.1:PORT/v1`)."""

    async def handshake(connection: ServerConnection, request: Request) -> Response | None:
        stand_in.handshaking.set()
        stand_in.handshakes += 1
        if stand_in.handshake_s:
            await asyncio.sleep(stand_in.handshake_s)  # sleep-ok: a provider's TLS and upgrade take this long
        if stand_in.accept is not None and stand_in.handshakes > stand_in.accept:
            stand_in.refused.set()
            return connection.respond(HTTPStatus.SERVICE_UNAVAILABLE, "no more connections\n")
        return None

    server = await serve(stand_in.handle, "127.0.0.1", 0, process_request=handshake)
    port = next(iter(server.sockets)).getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"
