"""Answering a generation request, whatever its API: faults, pacing, streaming and the plain body.

An API module parses its request into an `Ask` and supplies a `WireFormat` that knows how its API spells
events and bodies; `respond` does the rest the same way for every API, so a fault or a pacing rule
behaves alike on chat, completions and whatever endpoint comes next.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from starlette.responses import JSONResponse, Response, StreamingResponse

from tandem.sim.faults import RequestRecord
from tandem.sim.settings import FaultKind

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from tandem.sim.answers import Answer, Ask
    from tandem.sim.pacing import Pacer
    from tandem.sim.prompt_cache import PromptHit
    from tandem.sim.state import SimState

# Where the outermost ASGI layer leaves a function that drops the client's connection (see app.py).
ABORT_SCOPE_KEY = "tandem_sim_abort"


@dataclass(frozen=True, kw_only=True)
class UsageCounts:
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0


class WireFormat(Protocol):
    """How one API spells a response. Events are complete SSE events, bytes ready to send."""

    def open_events(self) -> list[bytes]:
        """Sent when the first token is due, before any text (e.g. the chat role chunk)."""
        ...

    def delta_event(self, text: str) -> bytes: ...

    def close_events(self, finish_reason: str, usage: UsageCounts | None) -> list[bytes]:
        """The end of a complete stream: finish reason, usage when asked for, end marker."""
        ...

    def malformed_event(self) -> bytes:
        """An event whose data is not JSON (the `malformed` fault)."""
        ...

    def full_body(self, text: str, finish_reason: str, usage: UsageCounts) -> dict[str, Any]:
        """The whole response of a non-streaming request."""
        ...

    def error_body(self, status: int, message: str) -> dict[str, Any]: ...


async def respond(sim: SimState, ask: Ask, wire: WireFormat) -> Response:
    """The response to `ask`, with any armed fault applied."""
    fault = sim.faults.take()
    prompt_tokens = await sim.count_prompt_tokens(ask)
    answer = None if fault in _BEFORE_ANSWER else sim.answer(ask)
    sim.stats.record(
        RequestRecord(
            endpoint=ask.endpoint,
            model=ask.model,
            stream=ask.stream,
            prefix_chars=len(ask.prefix),
            suffix_chars=len(ask.suffix),
            prompt_tokens=prompt_tokens,
            max_tokens=ask.max_tokens,
            had_authorization=ask.had_authorization,
            truth_matched=answer.truth_matched if answer is not None else None,
            corrupted=answer.corrupted if answer is not None else False,
            fault=fault.value if fault is not None else None,
        )
    )
    if fault is FaultKind.RATE_LIMITED:
        retry_after = _seconds(sim.settings.retry_after_s)
        body = wire.error_body(429, f"simulated rate limit: retry after {retry_after} s")
        return JSONResponse(body, status_code=429, headers={"retry-after": retry_after})
    if fault is FaultKind.SERVER_ERROR:
        return JSONResponse(wire.error_body(500, "simulated server error"), status_code=500)
    if fault is FaultKind.RESET:
        return _ResetResponse()
    assert answer is not None
    if sim.local and ask.stream:
        local = _stream_local(sim, ask, wire, answer, fault)
        return StreamingResponse(local, media_type="text/event-stream", headers={"cache-control": "no-cache"})
    # Simulated provider prompt caching: reported in usage, and a shorter time to first token.
    cache = await sim.prompt_cache.observe(ask, prompt_tokens)
    pacer = sim.pacer_for(ask, cache=cache)
    if ask.stream:
        events = _stream(sim, ask, wire, answer, cache, pacer, fault)
        return StreamingResponse(events, media_type="text/event-stream", headers={"cache-control": "no-cache"})
    return await _whole(sim, wire, answer, cache, pacer, fault)


async def _stream_local(
    sim: SimState, ask: Ask, wire: WireFormat, answer: Answer, fault: FaultKind | None
) -> AsyncIterator[bytes]:
    """A local server's stream: it waits for the one slot, then reads what of the prompt it does not hold
    (`SimState.slot_hit`) before the first token. A client that goes away frees the slot."""
    async with sim.slot:
        cache = sim.slot_hit(ask)
        pacer = sim.pacer_for(ask, cache=cache)
        async for data in _stream(sim, ask, wire, answer, cache, pacer, fault):
            yield data


_BEFORE_ANSWER = frozenset({FaultKind.RATE_LIMITED, FaultKind.SERVER_ERROR, FaultKind.RESET})


async def _stream(
    sim: SimState,
    ask: Ask,
    wire: WireFormat,
    answer: Answer,
    cache: PromptHit,
    pacer: Pacer,
    fault: FaultKind | None,
) -> AsyncIterator[bytes]:
    pieces = answer.pieces
    total = len(pieces)
    chunk = sim.settings.chunk_tokens
    # How much of the answer is sent: a truncated stream stops half-way, a stalled one after one token.
    limit = total
    if fault is FaultKind.TRUNCATE:
        limit = min(total, max(1, total // 2))
    elif fault is FaultKind.STALL:
        limit = min(total, 1)
    malformed_at = total // 2 if fault is FaultKind.MALFORMED else -1

    await pacer.wait_first()
    if pacer.stopping:
        return
    opening = b"".join(wire.open_events())
    if malformed_at == 0 and total == 0:
        opening += wire.malformed_event()
    if opening:
        yield opening
    sent = 0
    async for batch in pacer.batches(limit):
        end = sent + batch
        if sent <= malformed_at < end:
            data = _content(wire, pieces, sent, malformed_at, chunk) + wire.malformed_event()
            data += _content(wire, pieces, malformed_at, end, chunk)
        else:
            data = _content(wire, pieces, sent, end, chunk)
        sim.stats.count_tokens_sent(batch)
        sent = end
        if data:
            yield data
    if fault is FaultKind.STALL:
        await sim.stall()
        return
    if fault is FaultKind.TRUNCATE or sent < total:
        return  # truncated on purpose, or the server is stopping
    usage = _usage(cache, total) if ask.include_usage else None
    yield b"".join(wire.close_events(answer.finish_reason, usage))


def _content(wire: WireFormat, pieces: tuple[str, ...], start: int, end: int, chunk: int) -> bytes:
    """SSE events for tokens [start, end), `chunk` tokens per event; pieces that hold no whole
    character yet (split multi-byte characters) ride in the next event."""
    events: list[bytes] = []
    for at in range(start, end, chunk):
        text = "".join(pieces[at : min(at + chunk, end)])
        if text:
            events.append(wire.delta_event(text))
    return b"".join(events)


async def _whole(
    sim: SimState, wire: WireFormat, answer: Answer, cache: PromptHit, pacer: Pacer, fault: FaultKind | None
) -> Response:
    """A non-streaming response, sent when the whole answer would have been generated."""
    await pacer.wait_first()
    await pacer.wait_tokens(len(answer.pieces))
    if fault is FaultKind.STALL:
        await sim.stall()
    sim.stats.count_tokens_sent(len(answer.pieces))
    usage = _usage(cache, len(answer.pieces))
    body = JSONResponse(wire.full_body(answer.text, answer.finish_reason, usage)).body
    if fault is FaultKind.TRUNCATE:
        return Response(bytes(body[: len(body) // 2]), media_type="application/json")
    if fault is FaultKind.MALFORMED:
        return Response(b"<html><body>simulated malformed response</body></html>", media_type="application/json")
    return Response(bytes(body), media_type="application/json")


def _usage(cache: PromptHit, completion_tokens: int) -> UsageCounts:
    return UsageCounts(
        prompt_tokens=cache.prompt_tokens, completion_tokens=completion_tokens, cached_tokens=cache.cached_tokens
    )


def _seconds(value_s: float) -> str:
    """Retry-After's value: whole seconds where possible, as the header is usually written."""
    return str(int(value_s)) if value_s == int(value_s) else f"{value_s:g}"


class _ResetResponse(Response):
    """No response at all: the connection is dropped with a TCP reset (the `reset` fault)."""

    def __init__(self) -> None:
        super().__init__(b"")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        abort: Callable[[], None] | None = scope.get(ABORT_SCOPE_KEY)
        if abort is None:
            # Not served through app.py's outer layer, so there is no connection to drop: fail loudly.
            raise ConnectionResetError("simulated connection reset")
        abort()
        # Wait until the server has noticed the connection is gone, so it does not answer 500 for us.
        while (await receive())["type"] != "http.disconnect":
            pass


def reset_connection(transport: Any) -> None:
    """Close `transport` (an asyncio transport) with a TCP reset rather than an orderly FIN."""
    sock = transport.get_extra_info("socket")
    if sock is not None:
        # Linger on, with a zero timeout: close() then sends RST and drops unsent data.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
