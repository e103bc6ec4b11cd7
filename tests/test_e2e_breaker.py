"""A provider that refuses tandem's key: the user is told once (window/showMessage and window/logMessage,
so Helix without a plugin sees it in its log too), and the provider is left alone while the user types on."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from e2e_support import fast_model, serve
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
            uri = session.open("a.py", "")
            text = "def fibonacci(n):\n    return n\n"
            line = character = 0

            async def type_and_ask(chars: str) -> None:
                nonlocal line, character
                for char in chars:
                    session.insert(uri, types.Position(line=line, character=character), char)
                    line, character = (line + 1, 0) if char == "\n" else (line, character + 1)
                    await session.client.text_document_completion_async(
                        types.CompletionParams(
                            text_document=types.TextDocumentIdentifier(uri=uri),
                            position=types.Position(line=line, character=character),
                        )
                    )

            await type_and_ask(text[:10])
            await _until(lambda: any("refuses" in m.message for m in session.client.messages))
            after_notice = provider.requests
            await type_and_ask(text[10:])
            shown = [m.message for m in session.client.messages if "refuses" in m.message]
            logged = [m.message for m in session.client.log_messages if "refuses" in m.message]
    finally:
        server.close()
    assert len(shown) == 1 and len(logged) == 1 and "401" in shown[0]
    assert provider.requests == after_notice  # nothing more while the back-off runs
    assert provider.requests <= 5
