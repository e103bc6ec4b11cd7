"""Local limits on every stream, whatever the provider does: a provider that ignores max_tokens is read
only up to the character limit, and one that never ends only up to the time limit; either way the stream
ends cleanly (the last, unfinished line dropped) and its response is closed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from tandem.completion import tiers
from tandem.completion.backends.base import ModelRequest, StreamStats
from tandem.completion.config import ModelConfig
from tandem.completion.streams import Stream
from tandem.completion.tiers import Tier, stream_char_limit


class Flooding:
    """A provider that sends lines forever, as fast as it is read."""

    name = "flooding"

    def __init__(self, *, stall_after: int | None = None) -> None:
        self.chunks = 0
        self.closed = asyncio.Event()
        self.stall_after = stall_after

    async def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        try:
            while True:
                if self.stall_after is not None and self.chunks >= self.stall_after:
                    await asyncio.Event().wait()  # an endless stream that has gone quiet
                self.chunks += 1
                yield "x = 1  # a line of forty characters....\n"
                await asyncio.sleep(0)
        finally:
            self.closed.set()

    async def warm(self) -> None:
        pass

    async def aclose(self) -> None:
        pass


def _stream() -> Stream:
    return Stream(uri="file:///a.py", line=0, character=0, before="", after="", model="m")


async def test_a_provider_ignoring_max_tokens_is_cut_at_the_character_limit() -> None:
    backend = Flooding()
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = _stream()
    await tier.run(stream, ModelRequest(prefix="", suffix="", max_tokens=256), remember=lambda _: None)
    limit = stream_char_limit(256)
    assert backend.closed.is_set() and stream.done and stream.error is None
    assert limit - 40 <= len(stream.text) <= limit and stream.text.endswith("\n")


async def test_an_endless_stream_is_closed_at_the_time_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "STREAM_MAX_S", 0.2)
    backend = Flooding(stall_after=3)
    tier = Tier("fast", ModelConfig(base_url="http://x/v1", model="m"), backend, "m")
    stream = _stream()
    await tier.run(stream, ModelRequest(prefix="", suffix=""), remember=lambda _: None)
    assert backend.closed.is_set() and stream.done and stream.error is None
    assert stream.text.count("\n") == 3
