"""A provider that refuses tandem's key: the user is told once (window/showMessage and window/logMessage,
so Helix without a plugin sees it in its log too), and the provider is left alone while the user types on.
A provider that fails and comes back: the outage is told once, and its end once."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from e2e_support import Session, fast_model, serve
from fixtures_sim import SimFactory
from lsprotocol import types
from test_e2e_server import _until

pytestmark = pytest.mark.e2e

BODY = b'{"error": {"message": "Incorrect API key provided"}}'
RESPONSE = b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
    len(BODY),
    BODY,
)


class Refusing:
    """A provider on loopback that answers 401 to everything, counting requests."""

    def __init__(self) -> None:
        self.requests = 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")), 0
                )
                await reader.readexactly(length)
                if not head.startswith(b"GET"):  # the warm-up probe is not a completion
                    self.requests += 1
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def test_refused_key_is_announced_once_and_the_provider_left_alone(tmp_path: pathlib.Path) -> None:
    provider = Refusing()
    server = await asyncio.start_server(provider.handle, "127.0.0.1", 0)
    base_url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1"
    try:
        async with serve(tmp_path, "helix", options=fast_model(base_url)) as session:
            text = "def fibonacci(n):\n    return n\n"
            typist = Typist(session, session.open("a.py", ""))
            await typist.type(text[:10])
            await _until(lambda: any("refuses" in m.message for m in session.client.messages))
            after_notice = provider.requests
            await typist.type(text[10:])
            shown = [m.message for m in session.client.messages if "refuses" in m.message]
            logged = [m.message for m in session.client.log_messages if "refuses" in m.message]
    finally:
        server.close()
    assert len(shown) == 1 and len(logged) == 1 and "401" in shown[0]
    assert provider.requests == after_notice  # nothing more while the back-off runs
    assert provider.requests <= 5


class Typist:
    """Types at the end of one document (a didChange per character), asking for a completion after each."""

    def __init__(self, session: Session, uri: str) -> None:
        self.session, self.uri = session, uri
        self.line = self.character = 0

    async def type(self, chars: str) -> None:
        for char in chars:
            self.session.insert(self.uri, types.Position(line=self.line, character=self.character), char)
            self.line, self.character = (self.line + 1, 0) if char == "\n" else (self.line, self.character + 1)
            await self.session.client.text_document_completion_async(
                types.CompletionParams(
                    text_document=types.TextDocumentIdentifier(uri=self.uri),
                    position=types.Position(line=self.line, character=self.character),
                )
            )


async def test_an_outage_and_its_end_are_told_once_each(tmp_path: pathlib.Path, sim_factory: SimFactory) -> None:
    """The provider answers 500 until the fault is cleared: after a few failures in a row the user is told
    it cannot be reached (once, however long the typing goes on); the first request after its back-off
    that succeeds ends the outage, which is told once too."""
    sim = sim_factory(profile="instant")
    sim.arm_fault("500", 1000)
    async with serve(tmp_path, "helix", options=fast_model(sim.base_url)) as session:
        typist = Typist(session, session.open("a.py", ""))
        down = "cannot be reached"
        while not any(down in m.message for m in session.client.messages):
            await typist.type("x")
        await typist.type("y" * 5)
        sim.clear_faults()
        back = "answering again"
        while not any(back in m.message for m in session.client.messages):
            await typist.type("z")
        await typist.type("w" * 5)
        shown = [m.message for m in session.client.messages]
        logged = [m.message for m in session.client.log_messages]
    for words in (down, back):
        assert sum(words in m for m in shown) == 1, shown
        assert sum(words in m for m in logged) == 1, logged
    assert shown.index(next(m for m in shown if down in m)) < shown.index(next(m for m in shown if back in m))
