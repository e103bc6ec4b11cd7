"""The `anthropic` backend: `POST {base_url}/messages`, streamed (Anthropic's Messages API).

Headers `x-api-key` and `anthropic-version: 2023-06-01`; system text in the top-level `system` field,
the rest of the conversation in `messages` (roles `user` and `assistant`). Events, by name:

    message_start         usage of the input (input_tokens + cache_creation_input_tokens +
                          cache_read_input_tokens; the cache reads are the cached tokens)
    content_block_delta   text (`text_delta`); thinking and tool deltas are not code, and are skipped
    message_delta         stop_reason (end_turn / stop_sequence -> "stop", max_tokens -> "length"),
                          output usage
    message_stop          the end
    error                 a failure mid-stream (overloaded_error -> BackendUnavailable, ...)
    ping                  keep-alive

The API refuses whitespace-only `stop_sequences`; those are applied to the text as it streams instead.

Prompt caching: Anthropic caches only prompt prefixes that end at a block marked `cache_control` (at most
four marks a request), and a prefix is served only whole. The system text is sent as one such block, and
every message before the final one (the last three, if there are more) is marked too: prompts are laid out
stable first, each stable part its own message (an edit prompt: the context files, then the file, then
the selection and instruction last), so the next request about the same files reads what has not changed
from the cache: all but the last message, or, once an edit to the file is applied, the context files.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

import httpx

from tandem.completion.providers.backends.base import Usage, conversation
from tandem.completion.providers.backends.sse_stream import SseBackend, count, event_payload, stream_error
from tandem.completion.providers.backends.streaming import StreamCall, api_key, host_of, request_headers, stream_events
from tandem.completion.providers.errors import NotConfigured

if TYPE_CHECKING:
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats
    from tandem.completion.providers.sse import SseEvent

log = logging.getLogger(__name__)

API_VERSION = "2023-06-01"
# The only roles `messages` takes; any other (system, developer) goes into the top-level `system`.
_CONVERSATION_ROLES = ("user", "assistant")
_WARM_BODY_MAX_BYTES = 1 << 20


class AnthropicBackend(SseBackend):
    """Streams text from the Messages API. Implements `base.Backend`."""

    name = "anthropic"
    path = "/messages"

    def body(self, request: ModelRequest) -> dict[str, object]:
        """The JSON body for `request` (public so tests and traces can see what is sent)."""
        messages = conversation(request, "Anthropic Messages")
        system = "\n\n".join(text for role, text in messages if role not in _CONVERSATION_ROLES)
        body: dict[str, object] = {
            "max_tokens": request.max_tokens,
            "messages": _conversation([(role, text) for role, text in messages if role in _CONVERSATION_ROLES]),
            "temperature": request.temperature,
            "stream": True,
        }
        if system:
            body["system"] = [{"type": "text", "text": system, "cache_control": _EPHEMERAL}]
        if self._config.model:
            body["model"] = self._config.model
        stops = [s for s in request.stop if s.strip()]
        if stops:
            body["stop_sequences"] = stops
        return body

    def _headers(self, key: str | None, *, streaming: bool) -> dict[str, str]:
        headers = request_headers(None, streaming=streaming)
        headers["anthropic-version"] = API_VERSION
        if key:
            headers["x-api-key"] = key
        return headers

    async def _texts(self, call: StreamCall, stats: StreamStats) -> AsyncGenerator[str, None]:
        headers = self._headers(call.api_key, streaming=True)
        events = stream_events(self._client, call, stats, headers=headers, is_last=_is_last, last_name="message_stop")
        async with aclosing(events) as stream:
            async for event in stream:
                text = _consume(event, stats)
                if text:
                    yield text

    async def warm(self, like: ModelRequest | None = None) -> None:
        """Open (and leave pooled) a connection: `GET {base_url}/models`. Best effort, never raises."""
        try:
            key = api_key(self._config, self._env)
        except NotConfigured:
            key = None  # the real request will say so; the connection is worth opening anyway
        url = self._config.base_url.rstrip("/") + "/models"
        headers = self._headers(key, streaming=False)
        # All phases short: a warm-up that has to wait is no use, and it must never hold a keystroke up.
        timeout = httpx.Timeout(self._config.connect_timeout_s)
        try:
            async with self._client.stream("GET", url, headers=headers, timeout=timeout) as response:
                size = 0
                # Read it all (a model list is small) so the connection goes back to the pool.
                async for data in response.aiter_bytes():
                    size += len(data)
                    if size > _WARM_BODY_MAX_BYTES:
                        break
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            log.debug("warming %s failed (ignored): %s", host_of(url), type(exc).__name__)


_EPHEMERAL = {"type": "ephemeral"}


# Anthropic allows four cache breakpoints a request; the system block takes one.
_MESSAGE_BREAKPOINTS = 3


def _conversation(messages: list[tuple[str, str]]) -> list[dict[str, object]]:
    """The `messages` field: every message but the last is stable, so each of the (up to three) before the
    last carries a cache breakpoint (as a text block with `cache_control`); the others stay plain strings."""
    body: list[dict[str, object]] = [{"role": role, "content": text} for role, text in messages]
    for n in range(max(0, len(messages) - 1 - _MESSAGE_BREAKPOINTS), len(messages) - 1):
        role, text = messages[n]
        body[n] = {"role": role, "content": [{"type": "text", "text": text, "cache_control": _EPHEMERAL}]}
    return body


def _is_last(event: SseEvent) -> bool:
    return event.event in ("message_stop", "error")


def _consume(event: SseEvent, stats: StreamStats) -> str:
    """The text an event carries (often none); usage, stop reason and failures go to `stats` or raise."""
    payload = event_payload(event)
    kind = payload.get("type") or event.event
    if kind == "content_block_delta":
        delta = payload.get("delta")
        if isinstance(delta, dict) and delta.get("type") == "text_delta":
            text = delta.get("text")
            return text if isinstance(text, str) else ""
    elif kind == "content_block_start":
        block = payload.get("content_block")
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
            return str(block["text"])
    elif kind == "message_start":
        message = payload.get("message")
        if isinstance(message, dict):
            _read_usage(message.get("usage"), stats)
    elif kind == "message_delta":
        delta = payload.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        if isinstance(reason, str):
            stats.finish_reason = _FINISH.get(reason, reason)
        _read_usage(payload.get("usage"), stats)
    elif kind == "error":
        error = payload.get("error")
        error = error if isinstance(error, dict) else {}
        raise stream_error(str(error.get("type") or ""), error.get("message"))
    return ""


_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def _read_usage(raw: Any, stats: StreamStats) -> None:
    """Fold a usage object into `stats.usage`: message_start has the input, message_delta the output so
    far (cumulative), and sometimes the input again."""
    if not isinstance(raw, dict):
        return
    usage = stats.usage
    if any(k in raw for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")):
        cached = count(raw.get("cache_read_input_tokens"))
        total = count(raw.get("input_tokens")) + count(raw.get("cache_creation_input_tokens")) + cached
        usage = Usage(input_tokens=total, output_tokens=usage.output_tokens, cached_tokens=cached)
    if "output_tokens" in raw:
        output = count(raw.get("output_tokens"))
        usage = Usage(input_tokens=usage.input_tokens, output_tokens=output, cached_tokens=usage.cached_tokens)
    stats.usage = usage
