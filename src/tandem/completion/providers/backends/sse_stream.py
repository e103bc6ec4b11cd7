"""What the accurate tier's backends (`anthropic`, `openai-responses`) share: one streamed POST read as
typed SSE events, the stop strings their APIs do not take (`cut_at_stops`), and their base class,
`SseBackend`, whose `stream` hands each one's text on through that cut.

Both APIs name each event (`event: content_block_delta`, `event: response.output_text.delta`) and end a
stream with an event of their own (`message_stop`, `response.completed`) instead of `data: [DONE]`; they
read them through `streaming.stream_events`, the same streamed POST (status checks, one short 429 retry,
transport error mapping) that OpenAI's chunks go through, so a failure reads the same whichever API it
came from.

Neither API takes the stop strings tandem sends for completions (Anthropic refuses whitespace-only ones,
the Responses API has no `stop` at all), so `StopCutter` applies them to the text as it streams.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from tandem.completion.providers.backends.http_backend import HttpBackend
from tandem.completion.providers.backends.streaming import (
    ERROR_EXCERPT_CHARS,
    now_ns,
    redact,
)
from tandem.completion.providers.errors import BackendUnavailable, BadResponse, CompletionError, RateLimited
from tandem.completion.providers.sse import SseEvent

if TYPE_CHECKING:
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats
    from tandem.completion.providers.backends.streaming import StreamCall

log = logging.getLogger(__name__)


def event_payload(event: SseEvent) -> dict[str, Any]:
    """The JSON object an event carries; BadResponse if it is not one."""
    try:
        payload = json.loads(event.data)
    except ValueError:
        raise BadResponse(f"a stream event is not JSON: {excerpt(event.data)!r}") from None
    if not isinstance(payload, dict):
        raise BadResponse(f"a stream event is not a JSON object: {excerpt(event.data)!r}")
    return payload


def excerpt(text: str) -> str:
    flat = " ".join(redact(text, None).split())
    return flat if len(flat) <= ERROR_EXCERPT_CHARS else flat[: ERROR_EXCERPT_CHARS - 3] + "..."


def stream_error(kind: str, message: object) -> CompletionError:
    """The error for a failure the provider reported inside a stream, by the kind it named."""
    words = f"the provider reported an error mid-stream ({kind or 'unknown'}): {excerpt(str(message or ''))}"
    lowered = kind.lower()
    if "rate_limit" in lowered:
        return RateLimited(words)
    if lowered in ("overloaded_error", "api_error", "server_error", "server_is_overloaded", "internal_error"):
        return BackendUnavailable(words)
    return BadResponse(words)


def count(value: object) -> int:
    """A token count from a usage object (0 for anything that is not a count)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class StopCutter:
    """Ends a text stream at the first of `stops`, holding back a tail that may be the start of one."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._stops = tuple(s for s in stops if s)
        self._hold = max((len(s) for s in self._stops), default=1) - 1
        self._buffer = ""
        self.stopped = False

    def feed(self, text: str) -> str:
        if not self._stops:
            return text
        if self.stopped:
            return ""
        self._buffer += text
        cut = min((at for at in (self._buffer.find(s) for s in self._stops) if at >= 0), default=-1)
        if cut >= 0:
            out, self._buffer = self._buffer[:cut], ""
            self.stopped = True
            return out
        keep = min(self._hold, len(self._buffer))
        out = self._buffer[: len(self._buffer) - keep]
        self._buffer = self._buffer[len(self._buffer) - keep :]
        return out

    def finish(self) -> str:
        out, self._buffer = ("" if self.stopped else self._buffer), ""
        return out


async def cut_at_stops(
    texts: AsyncGenerator[str, None], request: ModelRequest, stats: StreamStats
) -> AsyncIterator[str]:
    """The model's text, ended at the request's first stop string (where the provider would have ended it);
    the first text's time goes into `stats`. Text that arrived before a failure is handed over first."""
    cutter = StopCutter(request.stop)

    def seen(text: str) -> str:
        if text and not stats.first_token_ns:
            stats.first_token_ns = now_ns()
        return text

    try:
        async with aclosing(texts) as source:
            async for raw in source:
                text = seen(cutter.feed(raw))
                if text:
                    yield text
                if cutter.stopped:
                    # Where the provider would have stopped: no need to wait for text nobody will see.
                    stats.finish_reason = "stop"
                    break
    except CompletionError:
        tail = cutter.finish()
        if tail:
            yield tail
        raise
    tail = seen(cutter.finish())
    if tail:
        yield tail


class SseBackend(HttpBackend):
    """Base of the accurate tier's HTTP backends: subclasses read the model's text from their API's events
    in `_texts`; `stream` hands it to the caller through `cut_at_stops`."""

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        """Yield text as it arrives; see `base.Backend.stream`."""
        call = self._call(request)
        async with aclosing(cut_at_stops(self._texts(call, stats), request, stats)) as texts:  # type: ignore[type-var]
            async for text in texts:
                yield text

    def _texts(self, call: StreamCall, stats: StreamStats) -> AsyncGenerator[str, None]:
        """The model's raw text for `call`, as its API's events carry it (usage and finish reason into `stats`)."""
        raise NotImplementedError
