"""The Responses API's WebSocket mode: `GET /v1/responses` upgraded to a WebSocket.

Each client message is a `response.create` event: a Responses body (read by `openai_responses`) with a
`type`, without `stream` (implicit) or `background` (refused); the events of the HTTP stream come back one
JSON text message each, with the same pacing, prompt caching and faults as every simulated API. One turn
is answered at a time per connection; a second one sent before the first has ended is refused with
`response_already_in_flight` while the first goes on (the simulator has no `stream_id` lanes).

The connection holds its most recent response (as the real server does with `store: false`):

- `previous_response_id` naming it continues the conversation: the model "sees" the held conversation,
  its answer and the new input, which is what input tokens are counted (and prompt-cached) on. Any other
  id is answered `previous_response_not_found`, as is every continuation while the `forget` fault is armed.
- A new input that edits the previous prompt (a fenced replace-with block, the format tandem's
  continuations use) is applied to the held prompt, and the result is answered as a whole prompt would be.
- `generate: false` prepares a response without generating: created and completed at once, no output.

Faults: `429` and `500` answer an `error` event; `reset` drops the socket before answering; `truncate`
drops it mid-stream (half the answer sent); `malformed` sends a message that is not JSON mid-stream;
`stall` sends one token and then nothing; `forget` (continuations only) answers
`previous_response_not_found`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.websockets import WebSocketDisconnect

from tandem.sim import openai_common as oc
from tandem.sim.faults import RequestRecord
from tandem.sim.openai_responses import ResponsesWire, ask_for, input_of, read_fields
from tandem.sim.respond import ABORT_SCOPE_KEY, UsageCounts
from tandem.sim.settings import FaultKind

if TYPE_CHECKING:
    from starlette.websockets import WebSocket

    from tandem.sim.state import SimState

log = logging.getLogger(__name__)

# Counted in /_sim/stats: turns as "responses.websocket", connections accepted as "responses.websocket.connect".
TURNS = "responses.websocket"
CONNECTIONS = "responses.websocket.connect"

# The edit of a previous prompt: intro line, fenced old block, "with", fenced new block, closing line.
_EDIT = re.compile(
    r"\A[^\n]*replace\n(?P<fence>~{4,})\n(?P<old>.*?)\n(?P=fence)\nwith\n(?P=fence)\n(?P<new>.*?)\n(?P=fence)\n[^\n]*\Z",
    re.DOTALL,
)


@dataclass(frozen=True, kw_only=True)
class _Held:
    """The connection's most recent response."""

    id: str
    # Every message of the conversation, answers included, as text (what input tokens are counted on).
    conversation: str
    # The whole prompt message the conversation amounts to now (edits applied).
    prompt: list[dict[str, str]]


class _Dropped(Exception):
    """The socket was dropped on purpose (a fault)."""


async def serve(websocket: WebSocket, sim: SimState) -> None:
    """One WebSocket connection, turn after turn, until the client closes it or a fault drops it."""
    # Counted before the handshake completes, so that a client that sees the connection open sees it counted.
    sim.stats.count_request(CONNECTIONS)
    await websocket.accept()
    connection = _Connection(websocket, sim, had_authorization=bool(websocket.headers.get("authorization")))
    turn: asyncio.Task[None] | None = None
    try:
        while True:
            message = await websocket.receive_text()
            sim.stats.count_request(TURNS)
            # Every message as it arrived, as the HTTP endpoints log their bodies (GET /_sim/requests).
            sim.requests.add(TURNS, message.encode("utf-8", "surrogatepass"))
            if turn is not None and not turn.done():
                # One response at a time per connection: a second one is refused, the first goes on.
                await _send_error(
                    websocket,
                    400,
                    "response_already_in_flight",
                    "A response is already in progress on this connection.",
                )
                continue
            turn = asyncio.ensure_future(connection.answer(message))
            turn.add_done_callback(_log_failure)
    except WebSocketDisconnect:
        pass
    finally:
        if turn is not None and not turn.done():
            turn.cancel()


class _Connection:
    """What one connection holds: its most recent response."""

    def __init__(self, websocket: WebSocket, sim: SimState, *, had_authorization: bool) -> None:
        self.websocket = websocket
        self.sim = sim
        self.had_authorization = had_authorization
        self.held: _Held | None = None

    async def answer(self, message: str) -> None:
        websocket = self.websocket
        try:
            event = _event_of(message)
            self.held = await _turn(websocket, self.sim, event, self.held, had_authorization=self.had_authorization)
        except oc.BadRequest as error:
            self.held = None
            await _send_error(websocket, 400, "invalid_request_error", str(error), param=error.param)
        except _Forgotten as error:
            self.held = None
            await _send_error(websocket, 400, "previous_response_not_found", str(error), param="previous_response_id")
        except (_Dropped, WebSocketDisconnect, RuntimeError):
            # Dropped on purpose, or the client went away mid-answer (starlette raises RuntimeError for a
            # send after the close): nobody is listening.
            self.held = None


def _log_failure(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a WebSocket turn failed", exc_info=task.exception())


class _Forgotten(Exception):
    """A continuation named a response this connection does not hold."""


_REFUSED = {
    "stream": "stream is implicit over a WebSocket",
    "background": "background is not supported over a WebSocket",
}


def _event_of(message: str) -> dict[str, Any]:
    try:
        event = json.loads(message)
    except ValueError:
        raise oc.BadRequest("the message is not valid JSON") from None
    if not isinstance(event, dict):
        raise oc.BadRequest("the message must be a JSON object")
    if event.get("type") != "response.create":
        raise oc.BadRequest(f"unsupported client event type {event.get('type')!r}: only response.create is")
    for key, words in _REFUSED.items():
        if key in event:
            raise oc.BadRequest(f"Unsupported parameter: '{key}': {words}.", param=key)
    return {k: v for k, v in event.items() if k != "type"}


async def _turn(
    websocket: WebSocket, sim: SimState, body: dict[str, Any], held: _Held | None, *, had_authorization: bool
) -> _Held | None:
    """Answer one `response.create`; the response the connection holds afterwards (None: none)."""
    fields = read_fields(body)
    generate = oc.flag_of({"generate": body.get("generate", True)}, "generate")
    previous = body.get("previous_response_id")
    # A warm-up (`generate: false`) draws no fault: faults are armed for answers.
    fault = sim.faults.take() if generate else None
    if previous is not None and (held is None or previous != held.id or fault is FaultKind.FORGET):
        if fault is not None:
            sim.stats.record(_record(fields.model, had_authorization, fault=fault))
        raise _Forgotten(f"Previous response with id '{previous}' not found.")
    raw = body.get("input")
    new = [] if raw in (None, []) and not generate else input_of(body)
    prompt, conversation = _continue(held if previous is not None else None, fields.system, new)
    ask = ask_for(fields, prompt, stream=True, had_authorization=had_authorization, prompt_text=conversation)
    events = WebSocketEvents(model=sim.model_id, max_output_tokens=fields.max_tokens)
    prompt_tokens = await sim.count_prompt_tokens(ask)
    if not generate:
        usage = UsageCounts(prompt_tokens=prompt_tokens, completion_tokens=0)
        for data in events.prepared(usage):
            await websocket.send_text(data)
        return _Held(id=events.response_id, conversation=conversation, prompt=prompt)
    answer = None if fault in _BEFORE_ANSWER else sim.answer(ask)
    sim.stats.record(
        RequestRecord(
            endpoint=TURNS,
            model=ask.model,
            stream=True,
            prefix_chars=len(ask.prefix),
            suffix_chars=len(ask.suffix),
            prompt_tokens=prompt_tokens,
            max_tokens=ask.max_tokens,
            had_authorization=had_authorization,
            truth_matched=answer.truth_matched if answer is not None else None,
            corrupted=answer.corrupted if answer is not None else False,
            fault=fault.value if fault is not None else None,
        )
    )
    if fault is FaultKind.RATE_LIMITED:
        await _send_error(websocket, 429, "rate_limit_exceeded", "simulated rate limit")
        return None
    if fault is FaultKind.SERVER_ERROR:
        await _send_error(websocket, 500, "server_error", "simulated server error")
        return None
    if fault is FaultKind.RESET:
        _drop(websocket)
    assert answer is not None
    cache = await sim.prompt_cache.observe(ask, prompt_tokens)
    pacer = sim.pacer_for(ask, cache=cache)
    pieces = answer.pieces
    total = len(pieces)
    limit = total
    if fault is FaultKind.TRUNCATE:
        limit = min(total, max(1, total // 2))
    elif fault is FaultKind.STALL:
        limit = min(total, 1)
    malformed_at = total // 2 if fault is FaultKind.MALFORMED else -1
    chunk = sim.settings.chunk_tokens
    await pacer.wait_first()
    if pacer.stopping:
        return None
    for opening in events.open_events():
        await websocket.send_text(opening.decode())
    sent = 0
    async for batch in pacer.batches(limit):
        end = sent + batch
        for at in range(sent, end, chunk):
            if at <= malformed_at < at + chunk:
                await websocket.send_text(events.malformed_event().decode())
            text = "".join(pieces[at : min(at + chunk, end)])
            if text:
                await websocket.send_text(events.delta_event(text).decode())
        sim.stats.count_tokens_sent(batch)
        sent = end
    if fault is FaultKind.TRUNCATE:
        _drop(websocket)
    if fault is FaultKind.STALL:
        await sim.stall()
        return None
    if sent < total:
        return None  # the server is stopping
    usage = UsageCounts(prompt_tokens=cache.prompt_tokens, completion_tokens=total, cached_tokens=cache.cached_tokens)
    for closing in events.close_events(answer.finish_reason, usage):
        await websocket.send_text(closing.decode())
    return _Held(id=events.response_id, conversation=conversation + "\n" + answer.text, prompt=prompt)


_BEFORE_ANSWER = frozenset({FaultKind.RATE_LIMITED, FaultKind.SERVER_ERROR, FaultKind.RESET})


def _record(model: str, had_authorization: bool, *, fault: FaultKind) -> RequestRecord:
    """The record of a turn refused before its prompt was read."""
    return RequestRecord(
        endpoint=TURNS,
        model=model,
        stream=True,
        prefix_chars=0,
        suffix_chars=0,
        prompt_tokens=0,
        max_tokens=0,
        had_authorization=had_authorization,
        truth_matched=None,
        corrupted=False,
        fault=fault.value,
    )


def _continue(
    held: _Held | None, system: list[dict[str, str]], new: list[dict[str, str]]
) -> tuple[list[dict[str, str]], str]:
    """(the whole prompt to answer, the conversation's text) for `new` input after `held` (or none)."""
    new_text = "\n".join(m["content"] for m in new)
    if held is None:
        prompt = system + new
        return prompt, "\n".join(m["content"] for m in prompt)
    conversation = "\n".join(part for part in (held.conversation, new_text) if part)
    if len(new) == 1 and (edit := _EDIT.match(new[0]["content"])) is not None:
        prompt = system + _apply_edit(held.prompt, edit.group("old"), edit.group("new"))
    elif new:
        prompt = system + new
    else:
        prompt = system + [m for m in held.prompt if m["role"] != "system"]
    return prompt, conversation


def _apply_edit(prompt: list[dict[str, str]], old: str, new: str) -> list[dict[str, str]]:
    """`prompt` with `old` replaced by `new` in the last message holding it exactly once; BadRequest if none."""
    for index in range(len(prompt) - 1, -1, -1):
        content = prompt[index]["content"]
        if prompt[index]["role"] != "system" and content.count(old) == 1:
            changed = dict(prompt[index], content=content.replace(old, new))
            return [m for m in prompt[:index] if m["role"] != "system"] + [changed]
    raise oc.BadRequest("the edit's replaced text does not occur exactly once in the previous prompt", param="input")


def _drop(websocket: WebSocket) -> None:
    """Drop the connection with a TCP reset, no closing handshake (the `reset` and `truncate` faults)."""
    abort: Callable[[], None] | None = websocket.scope.get(ABORT_SCOPE_KEY)
    if abort is not None:
        abort()
    raise _Dropped


async def _send_error(websocket: WebSocket, status: int, code: str, message: str, *, param: str | None = None) -> None:
    kind = "server_error" if status >= 500 else "requests" if status == 429 else "invalid_request_error"
    error = {"type": kind, "code": code, "message": message, "param": param}
    await websocket.send_text(json.dumps({"type": "error", "status": status, "error": error}))


class WebSocketEvents(ResponsesWire):
    """The Responses events as WebSocket messages: JSON objects, no SSE framing."""

    @property
    def response_id(self) -> str:
        return self._id

    def _event(self, data: dict[str, Any]) -> bytes:
        data = {"type": data["type"], "sequence_number": self._next(), **data}
        return json.dumps(data, separators=(",", ":")).encode()

    def delta_event(self, text: str) -> bytes:
        self._texts.append(text)
        return self._event(
            {
                "type": "response.output_text.delta",
                "item_id": self._item_id,
                "output_index": 0,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
            }
        )

    def malformed_event(self) -> bytes:
        return b'{"type": "response.output_text.delta", "delta": "'

    def prepared(self, usage: UsageCounts) -> list[str]:
        """A `generate: false` turn: created, then completed with no output."""
        created = self._event(
            {"type": "response.created", "response": self._response("in_progress", output=[], usage=None)}
        )
        done = self._event(
            {"type": "response.completed", "response": self._response("completed", output=[], usage=usage)}
        )
        return [created.decode(), done.decode()]
