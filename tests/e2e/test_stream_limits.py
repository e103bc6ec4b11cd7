"""Local limits on every stream, whatever the provider does: a provider that ignores max_tokens is read
only up to the character limit, and one that never ends only up to the time limit; either way the stream
ends cleanly (the last, unfinished line dropped) and its response is closed; end to end, a flooding
provider's connection is closed."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import AsyncIterator

import pytest

from tandem.completion.config.tree import ModelConfig
from tandem.completion.inline.streams import Stream, read_into
from tandem.completion.providers import tiers
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.tiers import Tier, stream_char_limit, stream_piece_limit


class Flooding:
    """A provider that sends lines forever, as fast as it is read."""

    name = "flooding"

    def __init__(
        self, *, stall_after: int | None = None, piece: str = "x = 1  # a line of forty characters....\n"
    ) -> None:
        self.chunks = 0
        self.closed = asyncio.Event()
        self.stalled = asyncio.Event()
        self.stall_after = stall_after
        self.piece = piece

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        try:
            while True:
                if self.stall_after is not None and self.chunks >= self.stall_after:
                    self.stalled.set()
                    await asyncio.Event().wait()  # an endless stream that has gone quiet
                self.chunks += 1
                yield self.piece
                await asyncio.sleep(0)  # sleep-ok: one event-loop turn, not time
        finally:
            self.closed.set()

    async def warm(self, like: ModelRequest | None = None) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _stream() -> Stream:
    return Stream(uri="file:///a.py", line=0, character=0, before="", after="", model="m")


async def test_a_provider_ignoring_max_tokens_is_cut_at_the_character_limit() -> None:
    backend = Flooding()
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = _stream()
    await read_into(stream, tier, ModelRequest(prefix="", suffix="", max_tokens=256), remember=lambda _: None)
    limit = stream_char_limit(256)
    assert backend.closed.is_set() and stream.done and stream.error is None
    assert limit - 40 <= len(stream.text) <= limit and stream.text.endswith("\n")


async def test_an_endless_stream_is_closed_at_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "STREAM_MAX_S", 0.2)
    backend = Flooding(stall_after=3)
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = _stream()
    await read_into(stream, tier, ModelRequest(prefix="", suffix=""), remember=lambda _: None)
    assert backend.closed.is_set() and stream.done and stream.error is None
    assert stream.text.count("\n") == 3


async def test_a_provider_ignoring_max_tokens_in_token_sized_pieces_is_cut_at_the_piece_limit() -> None:
    # One token per event, as providers stream: far under the character limit when max_tokens is passed.
    backend = Flooding(piece="x = 1\n")
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = _stream()
    await read_into(stream, tier, ModelRequest(prefix="", suffix="", max_tokens=64), remember=lambda _: None)
    assert backend.closed.is_set() and stream.done and stream.error is None
    assert backend.chunks == stream_piece_limit(64) == 64 + 16 + 16
    assert stream.text.count("\n") == backend.chunks


async def test_a_quiet_endless_stream_is_closed_at_a_time_limit_from_max_tokens() -> None:
    # The first token may take the read timeout; max_tokens at 10 tokens/s after it: 0.2 + 0.3 s here,
    # where the fixed bound was 30 s.
    backend = Flooding(stall_after=3)
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m", timeout_s=0.2), backend, "m")
    stream = _stream()
    request = ModelRequest(prefix="", suffix="", max_tokens=3)
    await asyncio.wait_for(read_into(stream, tier, request, remember=lambda _: None), 10)
    assert backend.closed.is_set() and stream.done and stream.error is None


async def test_a_reader_that_leaves_early_closes_the_stream_and_tells_the_breaker_nothing() -> None:
    # The feature pulls the chunks (`Tier.reading`): leaving the block before the end closes the provider's
    # stream, and a read nobody finished is neither a success nor a failure of the provider.
    backend = Flooding()
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    tier.breaker.failures = 2  # the next read is a probe
    async with tier.reading(ModelRequest(prefix="", suffix=""), StreamStats()) as reading:
        async for _ in reading:
            assert tier.breaker.probing
            break
    assert backend.closed.is_set() and not tier.breaker.probing and tier.breaker.failures == 2
    assert reading.end is not None and reading.end.error is None and reading.end.cut


async def test_a_cancelled_reader_closes_the_stream() -> None:
    backend = Flooding(stall_after=2)
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = _stream()
    task = asyncio.create_task(read_into(stream, tier, ModelRequest(prefix="", suffix=""), remember=lambda _: None))
    await asyncio.wait_for(backend.stalled.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert backend.closed.is_set() and stream.done and stream.text.count("\n") == 2


class FloodingProvider:
    """An OpenAI-compatible provider on loopback that ignores max_tokens: after the headers it sends code
    lines as SSE chunks until the client closes the connection, counting what it sent."""

    CHUNK = (
        b'data: {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, '
        b'"delta": {"content": "    total = total + 1  # flooding\\n"}, "finish_reason": null}]}\n\n'
    )

    def __init__(self) -> None:
        self.streams = 0
        self.sent_bytes = 0
        self.closed_by_client = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0
            )
            await reader.readexactly(length)
            if head.startswith(b"GET"):  # the warm-up's model list
                writer.write(
                    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"data":[]}'
                )
                await writer.drain()
                return
            self.streams += 1
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            while True:
                writer.write(self.CHUNK * 16)
                self.sent_bytes += len(self.CHUNK) * 16
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            self.closed_by_client.set()
        finally:
            writer.close()


@pytest.mark.e2e
async def test_a_flooding_provider_is_cut_and_its_connection_closed(tmp_path: pathlib.Path) -> None:
    """End to end over real loopback HTTP: the completion is answered, and tandem closes the flooding
    stream's connection once it has read its character limit (it was read on after the answer)."""
    from e2e_support import fast_model, serve

    provider = FloodingProvider()
    server = await asyncio.start_server(provider.handle, "127.0.0.1", 0)
    base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        async with serve(tmp_path, "vscode", options=fast_model(base_url)) as session:
            before = "def count(items):\n    total = 0\n    for item in items:\n"
            uri = session.open("a.py", before)
            suggestion = await session.inline(uri, session.position_at_end(before))
            await asyncio.wait_for(provider.closed_by_client.wait(), 20)
            sent = provider.sent_bytes
    finally:
        server.close()
    assert suggestion.startswith("    total = total + 1")
    assert provider.streams == 1
    # What the provider got out before the close: the limit's characters in SSE framing, plus what the
    # loopback socket buffers held (a few MB at most), never an endless read.
    assert sent < 16 << 20, sent
