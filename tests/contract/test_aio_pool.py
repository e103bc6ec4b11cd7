"""The aiohttp pool under the shared client (`completion.providers.aio_pool`) against raw HTTP/1.1 servers on
loopback written here from RFC 9112: what a server receives is what httpx's own transport sends, and each
way a server can fail reaches tandem as the httpx error httpx's own transport raises for it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from tandem.completion.providers.aio_pool import DISCONNECTED, AiohttpTransport
from tandem.completion.providers.http import make_client
from tandem.completion.providers.transport import ResilientTransport

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 12\r\n\r\ndata: hi\n\n\n\n"


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """One request, head and body (by its Content-Length), as the bytes that arrived."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    return head + await reader.readexactly(length)


class Server:
    """A raw TCP server on loopback; `handler` serves each connection; `ports` records each connection's
    client port (a reused connection shows the same port)."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.ports: list[int] = []
        self.url = ""

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.ports.append(writer.get_extra_info("peername")[1])
        try:
            await self.handler(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went, or the test ended (a handler cancelled at the loop's end ends quietly)
        finally:
            writer.close()


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Handler], Awaitable[Server]]]:
    servers: list[asyncio.Server] = []

    async def start(handler: Handler) -> Server:
        server = Server(handler)
        listening = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        servers.append(listening)
        server.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}/v1/chat/completions"
        return server

    yield start
    for listening in servers:
        listening.close()


def request(url: str, *, read: float = 5.0, pool: float = 5.0) -> httpx.Request:
    timeout = httpx.Timeout(connect=5.0, read=read, write=5.0, pool=pool)
    return httpx.Request(
        "POST",
        url,
        json={"model": "m", "stream": True},
        headers={"Authorization": "Bearer k", "User-Agent": "tandem-lsp/0.1"},
        extensions={"timeout": timeout.as_dict()},
    )


async def serve_ok(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while True:
        await read_request(reader)
        writer.write(OK)
        await writer.drain()


async def test_a_server_receives_what_httpx_own_transport_sends(serve) -> None:  # type: ignore[no-untyped-def]
    seen: list[bytes] = []

    async def capture(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(await read_request(reader))
        writer.write(OK)
        await writer.drain()

    server = await serve(capture)
    for transport in (httpx.AsyncHTTPTransport(), AiohttpTransport()):
        response = await transport.handle_async_request(request(server.url))
        assert response.status_code == 200 and await response.aread() == b"data: hi\n\n\n\n"
        await response.aclose()
        await transport.aclose()
    assert len(seen) == 2 and seen[1] == seen[0], seen


class Streaming:
    """Serves each request a chunked event stream whose last chunk waits for `finish` (set by the test)."""

    def __init__(self) -> None:
        self.finish = asyncio.Event()

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            await read_request(reader)
            writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n")
            await writer.drain()
            await self.finish.wait()
            writer.write(b"4\r\nhi\n\n\r\n0\r\n\r\n")
            await writer.drain()


async def test_a_read_body_gives_its_connection_back_and_an_unread_one_closes_it(serve) -> None:  # type: ignore[no-untyped-def]
    streaming = Streaming()
    server = await serve(streaming)
    transport = AiohttpTransport(max_connections=2)
    streaming.finish.set()
    for _ in range(3):
        response = await transport.handle_async_request(request(server.url))
        assert await response.aread() == b"data: hi\n\n"
        await response.aclose()
    assert len(set(server.ports)) == 1, server.ports
    streaming.finish.clear()
    response = await transport.handle_async_request(request(server.url))
    await response.aclose()  # the body is not over: the connection cannot carry another request
    streaming.finish.set()
    response = await transport.handle_async_request(request(server.url))
    await response.aread()
    await response.aclose()
    assert len(set(server.ports)) == 2, server.ports
    assert transport.counts() == (0, 1)
    await transport.aclose()


async def test_every_slot_held_makes_the_next_request_wait_out_its_pool_timeout(serve) -> None:  # type: ignore[no-untyped-def]
    server = await serve(serve_ok)
    transport = AiohttpTransport(max_connections=1)
    held = await transport.handle_async_request(request(server.url))
    assert transport.counts()[0] == 1
    with pytest.raises(httpx.PoolTimeout):
        await transport.handle_async_request(request(server.url, pool=0.05))
    await held.aclose()
    await held.aclose()  # a second close frees nothing more
    assert transport.counts()[0] == 0
    response = await transport.handle_async_request(request(server.url, pool=0.05))
    await response.aclose()
    await transport.aclose()


async def test_a_server_that_closes_before_answering_is_the_disconnect_the_client_retries(serve) -> None:  # type: ignore[no-untyped-def]
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)

    server = await serve(hang_up)
    transport = AiohttpTransport()
    with pytest.raises(httpx.RemoteProtocolError, match=DISCONNECTED):
        await transport.handle_async_request(request(server.url))
    assert transport.counts()[0] == 0
    await transport.aclose()


async def test_a_kept_alive_connection_closed_by_the_server_is_sent_again_on_a_new_one(serve) -> None:  # type: ignore[no-untyped-def]
    """The server answers one request per connection and closes it without saying so (as llama.cpp closes an
    idle one after 5 s): the next request finds it closed, and the client sends it again."""

    async def once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(OK)
        await writer.drain()
        await read_request(reader)  # the second request arrives, and the server hangs up on it

    server = await serve(once)
    async with make_client() as client:
        for _ in range(3):
            response = await client.post(server.url, json={"model": "m"})
            assert response.status_code == 200
    assert len(server.ports) >= 3


async def test_a_body_cut_short_is_a_protocol_error(serve) -> None:  # type: ignore[no-untyped-def]
    async def short(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\ndata: {")
        await writer.drain()

    server = await serve(short)
    transport = AiohttpTransport()
    response = await transport.handle_async_request(request(server.url))
    with pytest.raises(httpx.RemoteProtocolError, match="complete message body"):
        await response.aread()
    await response.aclose()
    assert transport.counts() == (0, 0)
    await transport.aclose()


async def test_a_stalled_server_is_a_read_timeout_before_and_after_the_headers(serve) -> None:  # type: ignore[no-untyped-def]
    stop = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        await stop.wait()

    async def stalls(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:\r\n")
        await writer.drain()
        await stop.wait()

    transport = AiohttpTransport()
    with pytest.raises(httpx.ReadTimeout):
        await transport.handle_async_request(request((await serve(silent)).url, read=0.1))
    response = await transport.handle_async_request(request((await serve(stalls)).url, read=0.1))
    with pytest.raises(httpx.ReadTimeout):
        await response.aread()
    await response.aclose()
    assert transport.counts()[0] == 0
    stop.set()
    await transport.aclose()


async def test_a_refused_connection_and_a_garbled_answer_map_as_httpx_maps_them(serve) -> None:  # type: ignore[no-untyped-def]
    async def garbled(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        writer.write(b"HTTP/1.1 two hundred\r\n\r\n")
        await writer.drain()

    transport = AiohttpTransport()
    # A port nothing listens on: bind one and close it.
    probe = await asyncio.start_server(serve_ok, "127.0.0.1", 0)
    free = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    with pytest.raises(httpx.ConnectError):
        await transport.handle_async_request(request(f"http://127.0.0.1:{free}/v1/chat/completions"))
    with pytest.raises(httpx.RemoteProtocolError):
        await transport.handle_async_request(request((await serve(garbled)).url))
    with pytest.raises(httpx.UnsupportedProtocol):
        await transport.handle_async_request(request("ftp://127.0.0.1/x"))
    assert transport.counts()[0] == 0
    await transport.aclose()


async def test_the_shared_client_reports_the_pool_health_of_its_aiohttp_pool(serve) -> None:  # type: ignore[no-untyped-def]
    streaming = Streaming()
    server = await serve(streaming)
    client = make_client(max_connections=4)
    transport = client._transport
    assert isinstance(transport, ResilientTransport)
    async with client.stream("POST", server.url, json={}) as open_response:
        health = transport.health()
        assert (health.connections, health.active, health.idle, health.orphaned, health.usable) == (1, 1, 0, 0, 4)
        streaming.finish.set()
        await open_response.aread()
    health = transport.health()
    assert (health.connections, health.active, health.idle) == (1, 0, 1), health
    await client.aclose()
