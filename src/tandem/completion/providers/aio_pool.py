"""The connection pool under the shared client: aiohttp's, behind httpx's transport interface.

Every keystroke posts one streaming request and reads a dozen or more small chunks from it. Under httpx's
own transport each chunk climbs httpcore's connection, h11's pure-Python parser and an anyio cancel scope
per read: a third of the server's CPU per keystroke (`python bench/bench_latency.py --profile-server`).
aiohttp parses HTTP in C (llhttp) and hands a chunk over from its protocol's buffer, so the same request
costs about half as much. The rest of tandem still speaks httpx (requests, responses, timeouts, errors):
`AiohttpTransport` takes an `httpx.Request`, sends it byte for byte through aiohttp's pool and answers an
`httpx.Response` whose body streams from aiohttp, with every failure mapped to the httpx exception that
httpx's own transport raises for it, so `streaming.map_transport_error` and the retry of a kept-alive
connection closed by the server (`transport._send`) work unchanged.

What it keeps of httpx's transport, and how:
- **limits**: at most `max_connections` requests hold a connection at once (a request holds its slot
  from send until its response is closed); waiting longer than the request's `pool` timeout for a slot
  raises `httpx.PoolTimeout`. An idle connection stays open for `keepalive_expiry` seconds (idle ones are
  not counted separately: there are never more than `max_connections`).
- **timeouts**: `connect` bounds opening the TCP connection (and TLS), `read` each wait for bytes (time to
  the headers included), as httpx's do; `write` is not enforced (aiohttp writes a body of a few hundred KB
  into the socket's buffer at once).
- **TLS**: httpx's default context (certifi's roots, or `SSL_CERT_FILE`), made on the first https request.
- **nothing of its own**: no cookies (the client keeps them), no decompression (httpx decodes the body),
  no redirects, no proxies from the environment (httpx mounts its own transports for those), no headers
  added: the request's own headers go out as httpx made them.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable

import aiohttp
import httpx
from yarl import URL

# httpcore's words for a kept-alive connection the server closed before answering: `transport._send`
# sends such a request once more on a new connection.
DISCONNECTED = "Server disconnected without sending a response."


class AiohttpTransport(httpx.AsyncBaseTransport):
    """See the module docstring. The aiohttp session is made on the first request, inside the event loop."""

    def __init__(self, *, max_connections: int = 16, keepalive_expiry: float = 90.0) -> None:
        self._max_connections = max_connections
        self._keepalive_expiry = keepalive_expiry
        self._slots = asyncio.Semaphore(max_connections)
        self._in_use = 0
        self._session: aiohttp.ClientSession | None = None
        self._ssl: ssl.SSLContext | None = None
        self._closed = False

    def counts(self) -> tuple[int, int]:
        """(connections in use by a request, idle connections kept open) now."""
        in_use = self._in_use
        connector = self._session.connector if self._session is not None else None
        # aiohttp keeps its idle connections per host in a private mapping; without it, none are counted.
        idle = sum(len(held) for held in getattr(connector, "_conns", {}).values())
        return in_use, idle

    def _session_now(self) -> aiohttp.ClientSession:
        if self._session is None:
            connector = aiohttp.TCPConnector(
                # The slots above bound the connections in use; aiohttp bounds none of its own.
                limit=0,
                keepalive_timeout=self._keepalive_expiry,
                # Resolve each time, as httpx does: a local server's name may move.
                use_dns_cache=False,
            )
            self._session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=False,
                trust_env=False,
                timeout=aiohttp.ClientTimeout(total=None),
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._closed:
            raise RuntimeError("the transport is closed")
        if request.url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{request.url.scheme}://'.")
        timeouts: dict[str, float | None] = request.extensions.get("timeout", {})
        try:
            async with asyncio.timeout(timeouts.get("pool")):
                await self._slots.acquire()
            self._in_use += 1
        except TimeoutError:
            raise httpx.PoolTimeout("no free connection in the pool", request=request) from None
        try:
            response = await self._send(request, timeouts)
        except BaseException:
            self._free()
            raise
        return httpx.Response(
            response.status,
            headers=response.raw_headers,
            stream=_Body(response, request, self._free),
            extensions={
                "http_version": b"HTTP/1.1",
                "reason_phrase": (response.reason or "").encode("ascii", "replace"),
                "network_stream": _Connection(response),
            },
        )

    def _free(self) -> None:
        """A request's slot back: its response closed, or it failed before one."""
        self._in_use -= 1
        self._slots.release()

    async def _send(self, request: httpx.Request, timeouts: dict[str, float | None]) -> aiohttp.ClientResponse:
        session = self._session_now()
        tls: ssl.SSLContext | bool = True  # a plain http:// URL makes no TLS
        if request.url.scheme == "https":
            tls = self._ssl = self._ssl or httpx.create_ssl_context()
        body = await request.aread()
        # Headers exactly as httpx made them (Host, Content-Length and all), in its order; the raw path as
        # httpx encoded it.
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw]
        connect = timeouts.get("connect")
        try:
            return await session.request(
                request.method,
                URL(str(request.url), encoded=True),
                headers=headers,
                data=body or None,
                allow_redirects=False,
                ssl=tls,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=timeouts.get("read")),
            )
        except aiohttp.ServerDisconnectedError:
            raise httpx.RemoteProtocolError(DISCONNECTED, request=request) from None
        except aiohttp.ClientError as error:
            raise _mapped(error, request, answered=False) from None
        except TimeoutError:
            # aiohttp's own timeouts are ClientErrors; a bare TimeoutError is a read of the headers.
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None

    async def aclose(self) -> None:
        self._closed = True
        if self._session is not None:
            await self._session.close()


# httpcore's names for what a connection is, and asyncio's.
_EXTRA_INFO = {"client_addr": "sockname", "server_addr": "peername", "ssl_object": "ssl_object", "socket": "socket"}


class _Connection:
    """The `network_stream` extension of a response, as httpcore gives it: what the connection it arrived
    on is (`get_extra_info`: "client_addr", "server_addr", "ssl_object", "socket"). Read when asked (nothing
    on the keystroke path asks), from the transport the response arrived on."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        # The response's protocol is its connection's (public `connection` is None once a short body has
        # been read whole and the connection gone back to the pool).
        self._transport = getattr(getattr(response, "_protocol", None), "transport", None)

    def get_extra_info(self, info: str) -> object:
        key = _EXTRA_INFO.get(info)
        return self._transport.get_extra_info(key) if key is not None and self._transport is not None else None


class _Body(httpx.AsyncByteStream):
    """A response body streaming from aiohttp; closing it returns the connection to the pool when the
    body was read to its end (else closes it) and frees the request's slot, once."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request, free: Callable[[], None]) -> None:
        self._response = response
        self._request = request
        self._free: Callable[[], None] | None = free

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while data := await content.readany():
                yield data
        except aiohttp.ClientError as error:
            raise _mapped(error, self._request, answered=True) from None
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the response", request=self._request) from None

    async def aclose(self) -> None:
        free, self._free = self._free, None
        try:
            self._response.release()
        finally:
            if free is not None:
                free()


def _mapped(error: aiohttp.ClientError, request: httpx.Request, *, answered: bool) -> httpx.TransportError:
    """The httpx exception httpx's own transport raises for the failure aiohttp reports as `error`."""
    words = str(error) or type(error).__name__
    kind: type[httpx.TransportError]
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        kind = httpx.ConnectTimeout
    elif isinstance(error, aiohttp.ServerTimeoutError):
        kind = httpx.ReadTimeout
    elif isinstance(error, aiohttp.ClientConnectorError):
        kind = httpx.ConnectError
    elif isinstance(error, aiohttp.ClientPayloadError | aiohttp.ServerDisconnectedError):
        kind = httpx.RemoteProtocolError
        if isinstance(error, aiohttp.ClientPayloadError):
            words = f"peer closed connection without sending complete message body ({words})"
    elif isinstance(error, aiohttp.ClientResponseError):
        # llhttp refused what the server sent (a bad status line, bad headers, bad chunk framing).
        kind = httpx.RemoteProtocolError
    elif isinstance(error, aiohttp.InvalidURL):
        kind = httpx.ConnectError
    elif isinstance(error, aiohttp.ClientOSError):
        kind = httpx.ReadError if answered else httpx.ConnectError
    else:
        kind = httpx.ReadError if answered else httpx.NetworkError
    return kind(words, request=request)
