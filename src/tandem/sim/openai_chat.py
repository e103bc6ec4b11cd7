"""`POST /v1/chat/completions`, shaped like OpenAI's Chat Completions API.

The prompt is read with `sim.prompt_reading.read_chat` (tandem's hole-marker layout, read the simulator's
own way); any other conversation counts as all prefix, so truth mode continues the end of the last message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tandem.sim import openai_common as oc
from tandem.sim.answers import Ask
from tandem.sim.prompt_reading import read_chat
from tandem.sim.respond import respond

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from tandem.sim.respond import UsageCounts
    from tandem.sim.state import SimState

ENDPOINT = "chat.completions"
# OpenAI's default is the model's limit; a simulated model's limit is this.
DEFAULT_MAX_TOKENS = 4096


async def handle(request: Request, sim: SimState) -> Response:
    body = await oc.read_object(request)
    messages = _messages_of(body)
    split = read_chat(messages)
    prompt_text = "\n".join(m["content"] for m in messages)
    prefix, suffix = split if split is not None else (prompt_text, "")
    stream = oc.flag_of(body, "stream")
    ask = Ask(
        endpoint=ENDPOINT,
        model=oc.model_of(body),
        prefix=prefix,
        suffix=suffix,
        prompt_text=prompt_text,
        max_tokens=oc.max_tokens_of(body, keys=("max_completion_tokens", "max_tokens"), default=DEFAULT_MAX_TOKENS),
        stop=oc.stop_of(body),
        stream=stream,
        include_usage=stream and oc.include_usage_of(body),
        had_authorization=oc.had_authorization(request),
    )
    return await respond(sim, ask, ChatWire(model=sim.model_id, include_usage=ask.include_usage))


def _messages_of(body: dict[str, Any]) -> list[dict[str, str]]:
    """The messages with their content as plain text (content parts joined)."""
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise oc.BadRequest("messages must be a non-empty list", param="messages")
    messages: list[dict[str, str]] = []
    for message in raw:
        if not isinstance(message, dict):
            raise oc.BadRequest("each message must be an object", param="messages")
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, list):
            content = "".join(
                part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
            )
        if not isinstance(role, str) or not isinstance(content, str | None):
            raise oc.BadRequest("each message needs a role and text content", param="messages")
        messages.append({"role": role, "content": content or ""})
    return messages


class ChatWire:
    """Chat Completions chunks and bodies."""

    def __init__(self, *, model: str, include_usage: bool) -> None:
        self._id = oc.new_id("chatcmpl")
        self._created = oc.now_s()
        self._model = model
        self._include_usage = include_usage
        self._delta = oc.DeltaTemplate(self._chunk({"content": oc.DeltaTemplate.placeholder()}, None))

    def _chunk(self, delta: dict[str, Any], finish_reason: str | None) -> dict[str, Any]:
        chunk: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": oc.FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        }
        if self._include_usage:
            chunk["usage"] = None
        return chunk

    def open_events(self) -> list[bytes]:
        return [oc.sse(self._chunk({"role": "assistant", "content": ""}, None))]

    def delta_event(self, text: str) -> bytes:
        return self._delta.render(text)

    def close_events(self, finish_reason: str, usage: UsageCounts | None) -> list[bytes]:
        events = [oc.sse(self._chunk({}, finish_reason))]
        if usage is not None:
            last = self._chunk({}, None)
            last["choices"] = []
            last["usage"] = oc.usage_object(usage)
            events.append(oc.sse(last))
        events.append(oc.DONE_EVENT)
        return events

    def malformed_event(self) -> bytes:
        return oc.malformed_event()

    def full_body(self, text: str, finish_reason: str, usage: UsageCounts) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion",
            "created": self._created,
            "model": self._model,
            "system_fingerprint": oc.FINGERPRINT,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "refusal": None},
                    "logprobs": None,
                    "finish_reason": finish_reason,
                }
            ],
            "usage": oc.usage_object(usage),
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        return oc.error_for_status(status, message)
