"""`POST /v1/messages`, shaped like Anthropic's Messages API (streaming events included).

Requests are checked as the real API checks them where a client could get it wrong: `anthropic-version`
header, `model` and `max_tokens` required, `stop_sequences` each with some non-whitespace. The prompt is
read like a chat one (`system` first): tandem's hole layout gives prefix and suffix, an edit prompt is
answered by `tandem.sim.edits`, anything else counts as all prefix. The prompt's content blocks, and
which are marked `cache_control`, go to the simulated prompt cache (`Ask.cache_blocks`), which serves
only prefixes that end at a breakpoint, as Anthropic's does.

A stream is `message_start` (input usage), `content_block_start`, `ping`, `content_block_delta` per piece
of text, `content_block_stop`, `message_delta` (stop reason, output usage), `message_stop`; each with an
`event:` line naming it, as Anthropic sends them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import JSONResponse

from tandem.sim import openai_common as oc
from tandem.sim.answers import FINISH_LENGTH, Ask
from tandem.sim.prompt_reading import read_chat
from tandem.sim.respond import respond

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from tandem.sim.respond import UsageCounts
    from tandem.sim.state import SimState

ENDPOINT = "messages"
API_VERSION = "2023-06-01"


async def handle(request: Request, sim: SimState) -> Response:
    try:
        ask = _ask(request, await oc.read_object(request))
    except oc.BadRequest as error:
        return JSONResponse(error_body("invalid_request_error", str(error)), status_code=400)
    prompt_tokens = await sim.count_prompt_tokens(ask)
    return await respond(sim, ask, MessagesWire(model=sim.model_id, prompt_tokens=prompt_tokens))


def _ask(request: Request, body: dict[str, Any]) -> Ask:
    if not request.headers.get("anthropic-version"):
        raise oc.BadRequest("anthropic-version: header is required")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise oc.BadRequest("model: Field required")
    if "max_tokens" not in body:
        raise oc.BadRequest("max_tokens: Field required")
    max_tokens = oc.max_tokens_of(body, keys=("max_tokens",), default=1)
    messages = [{"role": "system", "content": _system_of(body)}] if body.get("system") else []
    messages += _messages_of(body)
    split = read_chat(messages)
    prompt_text = "\n".join(m["content"] for m in messages)
    prefix, suffix = split if split is not None else (prompt_text, "")
    stream = oc.flag_of(body, "stream")
    return Ask(
        endpoint=ENDPOINT,
        model=model,
        prefix=prefix,
        suffix=suffix,
        prompt_text=prompt_text,
        max_tokens=max_tokens,
        stop=_stop_sequences_of(body),
        stream=stream,
        include_usage=True,
        had_authorization=bool(request.headers.get("x-api-key") or request.headers.get("authorization")),
        cache_blocks=_cache_blocks(body),
    )


def _marked(block: object) -> bool:
    return isinstance(block, dict) and isinstance(block.get("cache_control"), dict)


def _cache_blocks(body: dict[str, Any]) -> tuple[tuple[str, str, bool], ...]:
    """(role, text, marked) of every content block, system first: a string content is one unmarked block,
    a block of another kind than text counts with no text."""
    contents: list[tuple[str, object]] = [("system", body["system"])] if body.get("system") else []
    contents += [(str(m.get("role", "")), m.get("content")) for m in body["messages"]]
    blocks: list[tuple[str, str, bool]] = []
    for role, content in contents:
        if isinstance(content, str):
            blocks.append((role, content, False))
            continue
        for block in content if isinstance(content, list) else ():
            text = str(block.get("text", "")) if isinstance(block, dict) and block.get("type") == "text" else ""
            blocks.append((role, text, _marked(block)))
    return tuple(blocks)


def _text_of(content: object, where: str) -> str:
    """Plain text of a string or a list of content blocks (text blocks joined, other kinds skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(block, dict) for block in content):
        return "".join(str(b.get("text", "")) for b in content if b.get("type") == "text")
    raise oc.BadRequest(f"{where}: expected a string or a list of content blocks")


def _system_of(body: dict[str, Any]) -> str:
    return _text_of(body["system"], "system")


def _messages_of(body: dict[str, Any]) -> list[dict[str, str]]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise oc.BadRequest("messages: at least one message is required")
    messages: list[dict[str, str]] = []
    for n, message in enumerate(raw):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            raise oc.BadRequest(f"messages.{n}.role: expected 'user' or 'assistant'")
        messages.append({"role": message["role"], "content": _text_of(message.get("content"), f"messages.{n}.content")})
    return messages


def _stop_sequences_of(body: dict[str, Any]) -> tuple[str, ...]:
    value = body.get("stop_sequences")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise oc.BadRequest("stop_sequences: expected a list of strings")
    if not all(s.strip() for s in value):
        raise oc.BadRequest("stop_sequences: each stop sequence must contain non-whitespace")
    return tuple(value)


def error_body(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\n".encode() + oc.sse(data)


def _stop_reason(finish_reason: str) -> str:
    return "max_tokens" if finish_reason == FINISH_LENGTH else "end_turn"


class MessagesWire:
    """Messages API events and bodies."""

    def __init__(self, *, model: str, prompt_tokens: int) -> None:
        self._id = oc.new_id("msg")
        self._model = model
        self._prompt_tokens = prompt_tokens
        text_delta = {"type": "text_delta", "text": oc.DeltaTemplate.placeholder()}
        self._delta = oc.DeltaTemplate({"type": "content_block_delta", "index": 0, "delta": text_delta})

    def _usage(self, output_tokens: int, cached_tokens: int = 0) -> dict[str, int]:
        # Anthropic counts cache reads apart from input_tokens (OpenAI counts them inside).
        return {
            "input_tokens": self._prompt_tokens - cached_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached_tokens,
            "output_tokens": output_tokens,
        }

    def _message(self, content: list[dict[str, Any]], stop_reason: str | None, usage: dict[str, int]) -> dict[str, Any]:
        return {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def open_events(self) -> list[bytes]:
        return [
            _event("message_start", {"type": "message_start", "message": self._message([], None, self._usage(1))}),
            _event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            _event("ping", {"type": "ping"}),
        ]

    def delta_event(self, text: str) -> bytes:
        return b"event: content_block_delta\n" + self._delta.render(text)

    def close_events(self, finish_reason: str, usage: UsageCounts | None) -> list[bytes]:
        # As the API does today, message_delta carries the whole usage so far (output and input).
        totals = self._usage(usage.completion_tokens, usage.cached_tokens) if usage is not None else self._usage(0)
        delta = {"stop_reason": _stop_reason(finish_reason), "stop_sequence": None}
        return [
            _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _event("message_delta", {"type": "message_delta", "delta": delta, "usage": totals}),
            _event("message_stop", {"type": "message_stop"}),
        ]

    def malformed_event(self) -> bytes:
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "delta": {"text": "\n\n'

    def full_body(self, text: str, finish_reason: str, usage: UsageCounts) -> dict[str, Any]:
        content = [{"type": "text", "text": text}] if text else []
        totals = self._usage(usage.completion_tokens, usage.cached_tokens)
        return self._message(content, _stop_reason(finish_reason), totals)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = "rate_limit_error" if status == 429 else "api_error" if status >= 500 else "invalid_request_error"
        return error_body(kind, message)
