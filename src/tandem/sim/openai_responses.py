"""`POST /v1/responses`, shaped like OpenAI's Responses API (streaming events included).

`input` is a string or a list of messages (`role` + `content` as a string or `input_text` parts),
`instructions` comes first as the system text. As in the real API, `max_output_tokens` is at least 16
and there is no `stop` parameter. The prompt is read like a chat one: tandem's hole layout gives prefix
and suffix, an edit prompt is answered by `tandem.sim.edits`, anything else counts as all prefix.

A stream is `response.created`, `response.in_progress`, `response.output_item.added`,
`response.content_part.added`, `response.output_text.delta` per piece of text, then
`response.output_text.done`, `response.content_part.done`, `response.output_item.done` and
`response.completed` (or `response.incomplete` when `max_output_tokens` cut it), with usage; every event
has an `event:` line and a `sequence_number`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tandem.sim import openai_common as oc
from tandem.sim.answers import FINISH_LENGTH, Ask
from tandem.sim.prompt_reading import read_chat
from tandem.sim.respond import respond

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from tandem.sim.respond import UsageCounts
    from tandem.sim.state import SimState

ENDPOINT = "responses"
DEFAULT_MAX_OUTPUT_TOKENS = 4096
MIN_MAX_OUTPUT_TOKENS = 16


async def handle(request: Request, sim: SimState) -> Response:
    body = await oc.read_object(request)
    fields = read_fields(body)
    messages = fields.system + input_of(body)
    ask = ask_for(
        fields,
        messages,
        stream=oc.flag_of(body, "stream"),
        had_authorization=oc.had_authorization(request),
    )
    return await respond(sim, ask, ResponsesWire(model=sim.model_id, max_output_tokens=fields.max_tokens))


@dataclass(frozen=True, kw_only=True)
class Fields:
    """What a Responses body says besides its input, checked."""

    model: str
    max_tokens: int
    # `instructions` as a system message (none if absent).
    system: list[dict[str, str]]


def read_fields(body: dict[str, Any]) -> Fields:
    """The checked fields of a Responses body (HTTP or a WebSocket's `response.create`); BadRequest if not."""
    if "stop" in body:
        raise oc.BadRequest("Unsupported parameter: 'stop' is not supported with the Responses API.", param="stop")
    model = oc.model_of(body)
    if not model:
        raise oc.BadRequest("Missing required parameter: 'model'.", param="model")
    max_tokens = oc.max_tokens_of(body, keys=("max_output_tokens",), default=DEFAULT_MAX_OUTPUT_TOKENS)
    if max_tokens < MIN_MAX_OUTPUT_TOKENS:
        raise oc.BadRequest(
            f"Invalid 'max_output_tokens': integer below minimum value. Expected a value >= {MIN_MAX_OUTPUT_TOKENS}, "
            f"but got {max_tokens} instead.",
            param="max_output_tokens",
        )
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise oc.BadRequest("instructions must be a string", param="instructions")
    system = [{"role": "system", "content": instructions}] if instructions else []
    return Fields(model=model, max_tokens=max_tokens, system=system)


def ask_for(
    fields: Fields,
    messages: list[dict[str, str]],
    *,
    stream: bool,
    had_authorization: bool,
    prompt_text: str | None = None,
) -> Ask:
    """The Ask for a prompt of `messages`; `prompt_text` (what tokens are counted on) defaults to their text."""
    split = read_chat(messages)
    text = "\n".join(m["content"] for m in messages)
    prefix, suffix = split if split is not None else (text, "")
    return Ask(
        endpoint=ENDPOINT,
        model=fields.model,
        prefix=prefix,
        suffix=suffix,
        prompt_text=text if prompt_text is None else prompt_text,
        max_tokens=fields.max_tokens,
        stream=stream,
        include_usage=True,
        had_authorization=had_authorization,
    )


def input_of(body: dict[str, Any]) -> list[dict[str, str]]:
    """The input messages of a Responses body (a string, or messages of text); BadRequest otherwise."""
    raw = body.get("input")
    if isinstance(raw, str):
        return [{"role": "user", "content": raw}]
    if not isinstance(raw, list) or not raw:
        raise oc.BadRequest("input must be a string or a non-empty list of messages", param="input")
    messages: list[dict[str, str]] = []
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise oc.BadRequest("each input item must be a message with a role", param="input")
        content = item.get("content")
        if isinstance(content, list):
            content = "".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
            )
        if not isinstance(content, str):
            raise oc.BadRequest("a message's content must be a string or a list of text parts", param="input")
        messages.append({"role": item["role"], "content": content})
    return messages


class ResponsesWire:
    """Responses API events and bodies."""

    def __init__(self, *, model: str, max_output_tokens: int) -> None:
        self._id = oc.new_id("resp")
        self._item_id = oc.new_id("msg")
        self._created = oc.now_s()
        self._model = model
        self._max_output_tokens = max_output_tokens
        self._sequence = 0
        self._texts: list[str] = []
        # Deltas are the hot path of a fast stream: bytes made once, with the number and the text spliced in.
        self._delta_head = (
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","sequence_number":'
        )
        self._delta_middle = (
            b',"item_id":' + json.dumps(self._item_id).encode() + b',"output_index":0,"content_index":0,"delta":'
        )
        self._delta_tail = b',"logprobs":[]}\n\n'

    def _event(self, data: dict[str, Any]) -> bytes:
        data = {"type": data["type"], "sequence_number": self._next(), **data}
        return f"event: {data['type']}\n".encode() + oc.sse(data)

    def _next(self) -> int:
        number = self._sequence
        self._sequence += 1
        return number

    def _message(self, status: str) -> dict[str, Any]:
        content = (
            [{"type": "output_text", "text": "".join(self._texts), "annotations": []}]
            if status != "in_progress"
            else []
        )
        return {"id": self._item_id, "type": "message", "status": status, "role": "assistant", "content": content}

    def _response(self, status: str, *, output: list[dict[str, Any]], usage: UsageCounts | None) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "response",
            "created_at": self._created,
            "status": status,
            "error": None,
            "incomplete_details": {"reason": "max_output_tokens"} if status == "incomplete" else None,
            "max_output_tokens": self._max_output_tokens,
            "model": self._model,
            "output": output,
            "usage": _usage(usage) if usage is not None else None,
        }

    def open_events(self) -> list[bytes]:
        part = {"type": "output_text", "text": "", "annotations": []}
        where = {"item_id": self._item_id, "output_index": 0}
        return [
            self._event({"type": "response.created", "response": self._response("in_progress", output=[], usage=None)}),
            self._event(
                {"type": "response.in_progress", "response": self._response("in_progress", output=[], usage=None)}
            ),
            self._event(
                {"type": "response.output_item.added", "output_index": 0, "item": self._message("in_progress")}
            ),
            self._event({"type": "response.content_part.added", **where, "content_index": 0, "part": part}),
        ]

    def delta_event(self, text: str) -> bytes:
        self._texts.append(text)
        number = str(self._next()).encode()
        return self._delta_head + number + self._delta_middle + json.dumps(text).encode() + self._delta_tail

    def close_events(self, finish_reason: str, usage: UsageCounts | None) -> list[bytes]:
        text = "".join(self._texts)
        status = "incomplete" if finish_reason == FINISH_LENGTH else "completed"
        where = {"item_id": self._item_id, "output_index": 0, "content_index": 0}
        part = {"type": "output_text", "text": text, "annotations": []}
        item = self._message("incomplete" if status == "incomplete" else "completed")
        return [
            self._event({"type": "response.output_text.done", **where, "text": text}),
            self._event({"type": "response.content_part.done", **where, "part": part}),
            self._event({"type": "response.output_item.done", "output_index": 0, "item": item}),
            self._event({"type": f"response.{status}", "response": self._response(status, output=[item], usage=usage)}),
        ]

    def malformed_event(self) -> bytes:
        return b'event: response.output_text.delta\ndata: {"type": "response.output_text.delta", "delta": "\n\n'

    def full_body(self, text: str, finish_reason: str, usage: UsageCounts) -> dict[str, Any]:
        self._texts = [text]
        status = "incomplete" if finish_reason == FINISH_LENGTH else "completed"
        return self._response(status, output=[self._message(status)], usage=usage)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return oc.error_for_status(status, message)


def _usage(usage: UsageCounts) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
    }
