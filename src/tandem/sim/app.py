"""The simulator's ASGI application: its routes, and the outer layer every response passes through.

To add an API, write a module with `async def handle(request, sim) -> Response` that builds an `Ask`
and a `WireFormat` and calls `respond.respond`, then add one line to `ROUTES`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, Router, WebSocketRoute

from tandem.sim import anthropic, control, openai_chat, openai_completions, openai_responses, responses_ws
from tandem.sim import openai_common as oc
from tandem.sim.respond import ABORT_SCOPE_KEY, reset_connection

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send
    from starlette.websockets import WebSocket

    from tandem.sim.state import SimState

Handler = Callable[[Request, "SimState"], Awaitable[Response]]

# (path, method, name counted in /_sim/stats or None for control calls, handler)
ROUTES: list[tuple[str, str, str | None, Handler]] = [
    ("/v1/chat/completions", "POST", openai_chat.ENDPOINT, openai_chat.handle),
    ("/v1/completions", "POST", openai_completions.ENDPOINT, openai_completions.handle),
    ("/v1/messages", "POST", anthropic.ENDPOINT, anthropic.handle),
    ("/v1/responses", "POST", openai_responses.ENDPOINT, openai_responses.handle),
    ("/v1/models", "GET", "models", control.list_models),
    ("/_sim/faults", "POST", None, control.arm_fault),
    ("/_sim/faults", "DELETE", None, control.clear_faults),
    ("/_sim/stats", "GET", None, control.stats),
    ("/_sim/reset", "POST", None, control.reset),
    ("/_sim/edit-truth", "POST", None, control.set_edit_truth),
    ("/_sim/edits", "GET", None, control.edit_draws),
    ("/_sim/next-edit-truth", "POST", None, control.set_next_edit_truth),
    ("/_sim/requests", "GET", None, control.requests),
]

SIMULATED_HEADER = (b"x-tandem-simulated", b"true")


def build_app(sim: SimState) -> ASGIApp:
    """The ASGI app serving `sim` (give it to uvicorn as is: the outer layer needs uvicorn's `send`)."""
    routes: list[Route | WebSocketRoute] = [
        Route(path, _bind(handler, sim, name), methods=[method]) for path, method, name, handler in ROUTES
    ]
    # The Responses API's WebSocket mode, on the same path as its HTTP endpoint.
    routes.append(WebSocketRoute("/v1/responses", _bind_socket(sim)))
    return _Outer(Router(routes=routes))


def _bind_socket(sim: SimState) -> Callable[[WebSocket], Awaitable[None]]:
    async def endpoint(websocket: WebSocket) -> None:
        await responses_ws.serve(websocket, sim)

    return endpoint


def _bind(handler: Handler, sim: SimState, name: str | None) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        if name is not None:
            sim.stats.count_request(name)
        try:
            if request.method == "POST" and name is not None:
                # Read once here (starlette keeps the body for the handler): the log holds what arrived.
                sim.requests.add(name, await request.body())
            return await handler(request, sim)
        except ClientDisconnect:
            # The client gave up before its request was read (tandem cancels superseded streams): nobody
            # is listening, so answer nothing and log nothing.
            return Response(status_code=499)
        except oc.BadRequest as error:
            body = oc.error_body(str(error), kind="invalid_request_error", param=error.param)
            return JSONResponse(body, status_code=400)

    return endpoint


class _Outer:
    """Labels every response as simulated, and lets the `reset` fault reach the TCP connection."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        # uvicorn's `send` is a method of its per-request cycle (or WebSocket protocol), which holds the
        # connection's transport.
        transport = getattr(getattr(send, "__self__", None), "transport", None)
        if transport is not None:
            scope[ABORT_SCOPE_KEY] = lambda: reset_connection(transport)
        if scope["type"] == "websocket":
            await self._app(scope, receive, send)
            return

        async def labelled_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), SIMULATED_HEADER]
            await send(message)

        await self._app(scope, receive, labelled_send)
