"""The `openai-responses` backend: `POST {base_url}/responses`, streamed (OpenAI's Responses API).

The accurate tier's usual API (GPT-5.x-Codex class). System text goes in `instructions`, the rest of the
conversation in `input`; `store: false` keeps the user's code out of OpenAI's stored responses unless the
model's `store = true` opts in. (`transport = "websocket"` carries the same bodies and events over one
persistent connection: `responses_ws`.) Text
arrives in `response.output_text.delta` events; `response.completed` (or `response.incomplete` when
`max_output_tokens` cut the answer) carries usage, cached input tokens included; `response.failed` and
`error` events become `completion.providers.errors`.

Two request fields are left out on purpose: `temperature`, which the reasoning models this API mostly
serves refuse, and `stop`, which the API does not have (`sse_stream.StopCutter` applies stop strings
instead). `max_output_tokens` is at least 16, the API's minimum.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from tandem.completion.providers.backends.base import Usage, conversation
from tandem.completion.providers.backends.sse_stream import SseBackend, count, event_payload, stream_error
from tandem.completion.providers.backends.streaming import StreamCall, request_headers, stream_events
from tandem.completion.providers.errors import BadResponse

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats
    from tandem.completion.providers.sse import SseEvent

MIN_OUTPUT_TOKENS = 16
_SYSTEM_ROLES = ("system", "developer")
_LAST_EVENTS = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


class OpenAIResponsesBackend(SseBackend):
    """Streams text from a Responses API. Implements `base.Backend`."""

    name = "openai-responses"
    path = "/responses"

    def body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body for `request` (public so tests and traces can see what is sent)."""
        return {**request_body(self._config, request), "stream": True}

    async def _texts(self, call: StreamCall, stats: StreamStats) -> AsyncGenerator[str, None]:
        headers = request_headers(call.api_key, streaming=True)
        events = stream_events(
            self._client, call, stats, headers=headers, is_last=_is_last, last_name="response.completed"
        )
        async with aclosing(events) as stream:
            async for event in stream:
                text = _consume(event, stats)
                if text:
                    yield text


def request_body(config: ModelConfig, request: ModelRequest) -> dict[str, object]:
    """The body of a request for `request`, whichever transport carries it (HTTP adds `stream`)."""
    messages = conversation(request, "Responses")
    instructions = "\n\n".join(content for role, content in messages if role in _SYSTEM_ROLES)
    body: dict[str, object] = {
        "input": [{"role": role, "content": content} for role, content in messages if role not in _SYSTEM_ROLES],
        "max_output_tokens": max(MIN_OUTPUT_TOKENS, request.max_tokens),
        "store": config.store,
    }
    if instructions:
        body["instructions"] = instructions
    if config.model:
        body["model"] = config.model
    return body


def _is_last(event: SseEvent) -> bool:
    return event.event in _LAST_EVENTS


def _consume(event: SseEvent, stats: StreamStats) -> str:
    """The text an event carries (often none); usage, finish reason and failures go to `stats` or raise."""
    payload = event_payload(event)
    return consume_payload(payload, str(payload.get("type") or event.event), stats)


def consume_payload(payload: Mapping[str, Any], kind: str, stats: StreamStats) -> str:
    """The text an event's JSON object carries (often none); usage, finish reason and failures go to
    `stats` or raise. Shared by the HTTP (SSE) and WebSocket transports, which carry the same events."""
    if kind == "response.output_text.delta":
        delta = payload.get("delta")
        if not isinstance(delta, str):
            raise BadResponse("a response.output_text.delta event has no text delta")
        return delta
    if kind in ("response.completed", "response.incomplete"):
        response = payload.get("response")
        response = response if isinstance(response, dict) else {}
        stats.usage = _usage(response.get("usage"))
        stats.finish_reason = _finish_reason(response)
    elif kind == "response.failed":
        response = payload.get("response")
        error = response.get("error") if isinstance(response, dict) else None
        error = error if isinstance(error, dict) else {}
        raise stream_error(str(error.get("code") or "failed"), error.get("message"))
    elif kind == "error":
        code, message = error_of(payload)
        raise stream_error(code, message)
    return ""


def error_of(payload: Mapping[str, Any]) -> tuple[str, object]:
    """(code, message) of an `error` event: flat over SSE, nested in `error` over a WebSocket."""
    nested = payload.get("error")
    source: Mapping[str, Any] = nested if isinstance(nested, dict) else payload
    code = source.get("code") or source.get("type")
    if code == "error":
        code = ""
    return str(code or ""), source.get("message")


def _finish_reason(response: Mapping[str, Any]) -> str:
    if response.get("status") != "incomplete":
        return "stop"
    details = response.get("incomplete_details")
    reason = details.get("reason") if isinstance(details, dict) else None
    return "length" if reason == "max_output_tokens" else str(reason or "incomplete")


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get("input_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    return Usage(
        input_tokens=count(raw.get("input_tokens")),
        output_tokens=count(raw.get("output_tokens")),
        cached_tokens=count(cached),
    )
