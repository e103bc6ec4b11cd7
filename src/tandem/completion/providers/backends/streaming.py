"""One streamed request to an OpenAI-compatible API: POST, map every failure to `completion.providers.errors`,
and parse the SSE body into typed chunks.

Shared by the `openai-chat` and `fim` backends, which differ only in the body they send and in where a
chunk keeps its text (`choices[0].delta.content` or `choices[0].text`), both of which `parse_chunk` reads;
both stream the text of the chunks (`chunk_texts`).

Failure mapping (the only place it happens):

    connect refused, DNS, reset        BackendUnavailable
    5xx                                BackendUnavailable (with the status)
    429                                RateLimited(retry_after_s); retried once here if Retry-After <= 1 s
    other 4xx, JSON instead of SSE     BadResponse (with a short excerpt of the body, key removed)
    connect / read / write / pool      BackendTimeout (a read timeout is a stall between two bytes)
    body ends before `data: [DONE]`    BadResponse("stream truncated ...") after the chunks before it
    a chunk that is not JSON           BadResponse
"""

from __future__ import annotations

import contextlib
import functools
import json
import json.scanner
import logging
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import httpx

from tandem.completion.providers.backends.base import StreamStats, Usage
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    BadResponse,
    NotConfigured,
    RateLimited,
    RequestRefused,
)
from tandem.completion.providers.http import parse_retry_after
from tandem.completion.providers.sse import SseEvent, SseParser

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig

log = logging.getLogger(__name__)

# A 429 whose Retry-After is this short is cheaper to wait out here than to fail the keystroke;
# anything longer goes back to the caller, which can hold the tier off or fall back.
MAX_INLINE_RETRY_S = 1.0
# Enough of an error body to show the provider's message; more would only flood a log line.
ERROR_EXCERPT_CHARS = 200
_ERROR_BODY_MAX_BYTES = 8192
# What is read after `[DONE]` at most, to let the connection go back to the pool.
_TAIL_MAX_BYTES = 65536
_WARM_BODY_MAX_BYTES = 1 << 20

_BEARER = re.compile(r"(?i)bearer\s+\S+")
_KEYLIKE = re.compile(r"\b(?:sk|csk|gsk|xai)[-_][A-Za-z0-9_\-]{6,}")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """What one SSE `data:` JSON object carried that a backend uses."""

    text: str = ""
    finish_reason: str = ""
    usage: Usage | None = None


@dataclass(frozen=True, kw_only=True)
class StreamCall:
    """One request to stream: where, what, and with which limits."""

    url: str
    body: Mapping[str, object]
    timeout: httpx.Timeout
    api_key: str | None = None


def api_key(config: ModelConfig, env: Mapping[str, str]) -> str | None:
    """The bearer key for `config`, read now from `env`. None when the model names no key variable.

    Raises NotConfigured, naming the variable (never a value), when it names one that is unset or empty.
    """
    name = config.api_key_env
    if not name:
        return None
    value = env.get(name, "").strip()
    if not value:
        raise NotConfigured(
            f"the environment variable {name} is not set; model {config.model or '(unnamed)'} "
            f"(api_key_env = {name!r}) needs its API key there"
        )
    if not value.isascii() or not value.isprintable() or " " in value:
        # httpx would fail to encode it as a header, with the value in its message.
        raise NotConfigured(
            f"the environment variable {name} does not hold a usable API key (it has spaces or non-ASCII)"
        )
    return value


def request_headers(key: str | None, *, streaming: bool) -> dict[str, str]:
    headers: dict[str, str] = {}
    if streaming:
        headers["Accept"] = "text/event-stream"
        # A compressing proxy would buffer the stream into bigger, later pieces.
        headers["Accept-Encoding"] = "identity"
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


@functools.lru_cache(maxsize=64)
def host_of(url: str) -> str:
    return urlsplit(url).netloc or url


def redact(text: str, secret: str | None) -> str:
    """`text` with `secret`, bearer tokens and key-shaped strings removed."""
    if secret:
        text = text.replace(secret, "[key]")
    text = _BEARER.sub("Bearer [key]", text)
    return _KEYLIKE.sub("[key]", text)


async def stream_chunks(client: httpx.AsyncClient, call: StreamCall, stats: StreamStats) -> AsyncGenerator[Chunk, None]:
    """POST `call` and yield its chunks until `data: [DONE]`, filling usage, finish reason and the
    request-sent / first-byte timestamps of `stats`. Raises only `completion.providers.errors` types.

    The response lives inside `async with client.stream(...)`: closing this generator (or cancelling
    the task that iterates it) closes the response at once.
    """
    headers = request_headers(call.api_key, streaming=True)
    events = stream_events(
        client, call, stats, headers=headers, is_last=lambda event: _is_done(event.data), last_name="[DONE]"
    )
    async with aclosing(events):
        async for event in events:
            if _is_done(event.data):
                # Read on: the events reader drains the rest of the body, returning the connection to the pool.
                continue
            chunk = _consume(event.data, stats)
            if chunk is not None:
                yield chunk


async def chunk_texts(client: httpx.AsyncClient, call: StreamCall, stats: StreamStats) -> AsyncGenerator[str, None]:
    """The text of `call`'s chunks as they arrive (what `stream_chunks` yields), stamping the first one's time
    in `stats`. It reads the events itself rather than through `stream_chunks`: every event of every
    keystroke's stream passes each generator in the chain, so one fewer is CPU saved per keystroke."""
    headers = request_headers(call.api_key, streaming=True)
    events = stream_events(client, call, stats, headers=headers, is_last=_is_last_chunk, last_name="[DONE]")
    async with aclosing(events):
        async for event in events:
            data = event.data
            if "[DONE]" in data and _is_done(data):
                continue  # read on: the events reader drains the body, returning the connection to the pool
            chunk = _consume(data, stats)
            if chunk is not None and chunk.text:
                if not stats.first_token_ns:
                    stats.first_token_ns = now_ns()
                yield chunk.text


async def stream_events(
    client: httpx.AsyncClient,
    call: StreamCall,
    stats: StreamStats,
    *,
    headers: Mapping[str, str],
    is_last: Callable[[SseEvent], bool],
    last_name: str,
) -> AsyncGenerator[SseEvent, None]:
    """POST `call` and yield its SSE events up to and including the one `is_last` accepts; raise
    `BadResponse("stream truncated ...")` if the body ends before it (`last_name` names it in words).
    Fills the request-sent and first-byte timestamps of `stats`. Raises only `completion.providers.errors` types.

    A 429 whose Retry-After is short is waited out and retried once, as `streaming.stream_chunks` does.
    The response lives inside `async with posted(...)`: closing this generator closes it at once.
    """
    if client.is_closed:
        raise BackendUnavailable("the HTTP client is closed (the server is shutting down)")
    retried = False
    while True:
        progress = StreamProgress()
        stats.request_sent_ns = now_ns()
        try:
            async with posted(client, call, headers) as response:
                stats.first_byte_ns = now_ns()
                wait_s = await check_status(response, call, allow_retry=not retried)
                if wait_s is None:
                    ending = f"{host_of(call.url)} ended the response without {last_name}"
                    async with aclosing(read_sse_events(response, progress, is_last, ending)) as events:
                        async for event in events:
                            yield event
                    return
        except httpx.HTTPError as exc:
            raise map_transport_error(exc, call, progress) from None
        except httpx.InvalidURL as exc:
            raise NotConfigured(f"base_url is not a usable URL: {exc}") from None
        # Only a short 429 gets here, and only once: nothing has been yielded yet.
        retried = True
        log.debug("429 from %s: retrying once in %.2f s", host_of(call.url), wait_s)
        await anyio.sleep(wait_s)


@contextlib.asynccontextmanager
async def posted(
    client: httpx.AsyncClient, call: StreamCall, headers: Mapping[str, str]
) -> AsyncIterator[httpx.Response]:
    """`call` POSTed through `client` as `client.stream("POST", ...)` would send it, byte for byte, its
    streamed response open for the block and closed after it.

    The request goes straight to the client's transport, built here: `client.stream` would build it and
    then pass it through the client's layers for auth, redirects, event hooks and a response wrapper, and
    parse every response's headers into a cookie jar's message object, on every keystroke (a sixth of the
    HTTP stack's function calls, per request; tandem's client has none of those configured). What the
    client does that a request sees is done here too: its default headers under the call's, its cookies
    sent, and cookies a response sets kept. A client with auth, event hooks, redirects followed, a base URL
    or query parameters of its own (none that tandem makes), and a URL with a user name or password in it
    (httpx sends them as Basic auth), take the ordinary way.
    """
    url = _parsed_url(call.url)
    ordinary = client.auth is not None or any(client.event_hooks.values()) or client.follow_redirects
    if ordinary or client.base_url.raw_host or client.params or url.userinfo:
        async with client.stream(
            "POST", url, json=dict(call.body), headers=dict(headers), timeout=call.timeout
        ) as response:
            yield response
        return
    merged = httpx.Headers(client.headers)
    merged.update(headers)
    request = httpx.Request(
        "POST",
        url,
        json=dict(call.body),
        headers=merged,
        cookies=client.cookies or None,
        extensions={"timeout": call.timeout.as_dict()},
    )
    # httpx's own choice of transport for the URL (a mount for its scheme and host, else the client's).
    transport = client._transport_for_url(url)
    response = await transport.handle_async_request(request)
    response.request = request
    try:
        if "set-cookie" in response.headers:
            client.cookies.extract_cookies(response)
        yield response
    finally:
        await response.aclose()


@functools.lru_cache(maxsize=64)
def _parsed_url(url: str) -> httpx.URL:
    """`url` parsed once: a backend posts to the same endpoint on every keystroke, and httpx would parse the
    string again for each request (`httpx.URL` is immutable, so one can be shared). Raises InvalidURL."""
    return httpx.URL(url)


# Statuses that retrying cannot fix: a bad key, no permission, a wrong URL or model name.
_PERMANENT_STATUS = frozenset({401, 403, 404})
# Refusals of one request (a prompt over the model's context: llama.cpp answers 400), not of the provider.
_REQUEST_STATUS = frozenset({400, 413, 422})


@dataclass
class StreamProgress:
    body_bytes: int = 0
    events: int = 0


async def check_status(response: httpx.Response, call: StreamCall, *, allow_retry: bool) -> float | None:
    """None if the response is a stream to read; seconds to wait before one retry; else raises."""
    status = response.status_code
    host = host_of(call.url)
    if status == 429:
        retry_after_s = parse_retry_after(response.headers.get("retry-after"))
        await _read_bounded(response, _ERROR_BODY_MAX_BYTES)
        if allow_retry and retry_after_s is not None and retry_after_s <= MAX_INLINE_RETRY_S:
            return retry_after_s
        after = f"; retry after {retry_after_s:g} s" if retry_after_s is not None else ""
        raise RateLimited(f"{host} answered 429 Too Many Requests{after}", retry_after_s=retry_after_s)
    if status >= 400:
        body = await _read_bounded(response, _ERROR_BODY_MAX_BYTES)
        excerpt = _body_excerpt(body, call.api_key)
        detail = f": {excerpt}" if excerpt else ""
        words = f"{host} answered {status} {response.reason_phrase}{detail}"
        if status >= 500:
            raise BackendUnavailable(words)
        if status in _REQUEST_STATUS:
            raise RequestRefused(words)
        raise BadResponse(words, permanent=status in _PERMANENT_STATUS)
    if not 200 <= status < 300:
        raise BadResponse(f"{host} answered {status} {response.reason_phrase} instead of a stream")
    content_type = response.headers.get("content-type", "")
    for kind, words in (("application/json", "JSON"), ("text/html", "HTML")):
        if content_type.startswith(kind):
            body = await _read_bounded(response, _ERROR_BODY_MAX_BYTES)
            excerpt = _body_excerpt(body, call.api_key)
            raise BadResponse(f"{host} answered {words} instead of an event stream: {excerpt}", permanent=True)
    return None


async def read_sse_events(
    response: httpx.Response, progress: StreamProgress, is_last: Callable[[SseEvent], bool], ending: str
) -> AsyncGenerator[SseEvent, None]:
    """The events of `response` up to the last one, then the rest of the body read (bounded) and dropped.
    Raises BadResponse("stream truncated: {ending} ...") if the body ends first."""
    parser = SseParser()
    done = False
    tail_bytes = 0
    async for data in response.aiter_bytes():
        if done:
            tail_bytes += len(data)
            if tail_bytes > _TAIL_MAX_BYTES:
                return
            continue
        progress.body_bytes += len(data)
        for event in parser.feed(data):
            if done:
                continue
            progress.events += 1
            yield event
            done = is_last(event)
    if done:
        return
    for event in parser.close():
        progress.events += 1
        yield event
        if is_last(event):
            return
    raise BadResponse(f"stream truncated: {ending} (after {progress.events} events)")


def _is_done(data: str) -> bool:
    return "[DONE]" in data and data.strip() == "[DONE]"


def _is_last_chunk(event: SseEvent) -> bool:
    return "[DONE]" in event.data and event.data.strip() == "[DONE]"


def _consume(data: str, stats: StreamStats) -> Chunk | None:
    if data[:1] != "{" and not data.strip():
        return None
    chunk = parse_chunk(data)
    if chunk.usage is not None:
        stats.usage = chunk.usage
    if chunk.finish_reason:
        stats.finish_reason = chunk.finish_reason
    return chunk


async def _read_bounded(response: httpx.Response, limit_bytes: int) -> bytes:
    """Up to `limit_bytes` of the rest of the body. Reading it to the end lets the connection be reused;
    past the limit the response is simply closed by its `async with`."""
    parts: list[bytes] = []
    size = 0
    async for data in response.aiter_bytes():
        parts.append(data)
        size += len(data)
        if size >= limit_bytes:
            break
    return b"".join(parts)


def _body_excerpt(body: bytes, secret: str | None) -> str:
    text = body.decode("utf-8", errors="replace")
    try:
        payload = json.loads(text)
    except ValueError:
        return _excerpt_text(text, secret)
    if isinstance(payload, dict) and "error" in payload:
        return redact(_error_message(payload["error"]), secret)
    return _excerpt_text(text, secret)


def map_transport_error(exc: httpx.HTTPError, call: StreamCall, progress: StreamProgress) -> Exception:
    """The `completion.providers.errors` type for an httpx failure (its text carries the URL, never headers)."""
    host = host_of(call.url)
    timeout = call.timeout
    if isinstance(exc, httpx.ConnectTimeout):
        return BackendTimeout(f"could not connect to {host} within {timeout.connect:g} s")
    if isinstance(exc, httpx.ReadTimeout):
        if progress.body_bytes:
            return BackendTimeout(
                f"stream from {host} stalled: no data for {timeout.read:g} s after {progress.events} chunks"
            )
        return BackendTimeout(f"{host} sent nothing for {timeout.read:g} s")
    if isinstance(exc, httpx.WriteTimeout):
        return BackendTimeout(f"sending the request to {host} took over {timeout.write:g} s")
    if isinstance(exc, httpx.PoolTimeout):
        return BackendTimeout(f"no free connection to {host} within {timeout.pool:g} s (all busy)")
    if isinstance(exc, httpx.TimeoutException):
        return BackendTimeout(f"{host} timed out: {exc}")
    if isinstance(exc, httpx.UnsupportedProtocol):
        return NotConfigured(f"base_url must start with http:// or https://: {exc}")
    if isinstance(exc, httpx.RemoteProtocolError) and progress.body_bytes:
        # The server closed the connection mid-body: the answer is cut short, the server may be fine.
        return BadResponse(
            f"stream truncated: {host} closed the connection after {progress.events} chunks without [DONE]"
        )
    if isinstance(exc, httpx.DecodingError):
        return BadResponse(f"{host} sent a body that could not be decoded: {exc}")
    if isinstance(exc, httpx.ConnectError):
        return BackendUnavailable(f"could not connect to {host}: {exc or type(exc).__name__}")
    where = "mid-stream" if progress.body_bytes else "before answering"
    return BackendUnavailable(f"connection to {host} lost {where}: {exc or type(exc).__name__}")


async def warm_connection(client: httpx.AsyncClient, config: ModelConfig, env: Mapping[str, str]) -> None:
    """Open (and leave pooled) a connection to the provider: a cheap `GET {base_url}/models`.

    Best effort: every failure is logged at debug level and ignored; cancellation still propagates.
    """
    try:
        key = api_key(config, env)
    except NotConfigured:
        key = None  # the real request will say so; the connection is worth opening anyway
    url = config.base_url.rstrip("/") + "/models"
    # All phases short: a warm-up that has to wait is no use, and it must never hold a keystroke up.
    timeout = httpx.Timeout(config.connect_timeout_s)
    try:
        async with client.stream(
            "GET", url, headers=request_headers(key, streaming=False), timeout=timeout
        ) as response:
            # Read it all (a model list is small) so the connection goes back to the pool.
            await _read_bounded(response, _WARM_BODY_MAX_BYTES)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        log.debug("warming %s failed (ignored): %s", host_of(url), type(exc).__name__)


# The JSON scanner json.loads ends in, called directly: one call where json.loads makes seven. (typeshed
# types its argument as a scanner; it takes the decoder whose settings it scans with.)
_scan_json: Callable[[str, int], tuple[Any, int]] = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def parse_chunk(data: str) -> Chunk:
    """Read one `data:` payload of a chat or completions stream. Raises BadResponse if it is not one."""
    chunk = _common_chunk(data)
    return chunk if chunk is not None else _any_chunk(data)


def _common_chunk(data: str) -> Chunk | None:
    """`_any_chunk(data)` for the shape nearly every chunk has (an object, a first choice with index 0 and
    string text or none, no error, no Groq extension), read with fewer calls: every keystroke's stream has a
    chunk per token. None for anything else (an error among them), which `_any_chunk` reads or refuses."""
    if data[:1] != "{":
        return None
    try:
        payload, end = _scan_json(data, 0)
    except (StopIteration, ValueError, RecursionError):
        return None
    if end != len(data) or type(payload) is not dict or "error" in payload or "x_groq" in payload:
        return None
    text = finish_reason = ""
    choices = payload.get("choices")
    if type(choices) is list:
        if choices:
            choice = choices[0]
            if type(choice) is not dict or choice.get("index", 0) != 0:
                return None
            delta = choice.get("delta")
            content = delta.get("content") if type(delta) is dict else choice.get("text")
            if type(content) is str:
                text = content
            elif content is not None:
                return None
            reason = choice.get("finish_reason")
            if type(reason) is str:
                finish_reason = reason
    elif choices is not None:
        return None
    usage = _usage(payload) if payload.get("usage") is not None else None
    return Chunk(text=text, finish_reason=finish_reason, usage=usage)


def _any_chunk(data: str) -> Chunk:
    """`parse_chunk` for any payload."""
    try:
        payload = json.loads(data)
    except ValueError:
        raise BadResponse(f"a stream chunk is not JSON: {_excerpt_text(data, None)!r}") from None
    if not isinstance(payload, dict):
        raise BadResponse(f"a stream chunk is not a JSON object: {_excerpt_text(data, None)!r}")
    error = payload.get("error")
    if error is not None:
        raise BadResponse(f"the provider reported an error mid-stream: {_error_message(error)}")
    text = ""
    finish_reason = ""
    choices = payload.get("choices")
    if isinstance(choices, list) and choices:
        choice = _first_choice(choices)
        if choice is not None:
            text = _choice_text(choice)
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                finish_reason = reason
    elif choices is not None and not isinstance(choices, list):
        raise BadResponse("a stream chunk has 'choices' that is not a list")
    return Chunk(text=text, finish_reason=finish_reason, usage=_usage(payload))


def _first_choice(choices: list[Any]) -> dict[str, Any] | None:
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return None


def _choice_text(choice: Mapping[str, Any]) -> str:
    delta = choice.get("delta")
    if isinstance(delta, dict):
        # Reasoning models stream their thinking in other fields (reasoning, reasoning_content): not code.
        content = delta.get("content")
    else:
        content = choice.get("text")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise BadResponse("a stream chunk's text is not a string")
    return content


def _usage(payload: Mapping[str, Any]) -> Usage | None:
    raw = payload.get("usage")
    if not isinstance(raw, dict):
        # Groq reports usage inside its own extension object on the last chunk.
        extension = payload.get("x_groq")
        raw = extension.get("usage") if isinstance(extension, dict) else None
    if not isinstance(raw, dict):
        return None
    details = raw.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is None:
        # DeepSeek's name for the same figure.
        cached = raw.get("prompt_cache_hit_tokens")
    return Usage(
        input_tokens=_count(raw.get("prompt_tokens")),
        output_tokens=_count(raw.get("completion_tokens")),
        cached_tokens=_count(cached),
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _error_message(error: object) -> str:
    if isinstance(error, dict):
        message = error.get("message")
        if isinstance(message, str):
            return _excerpt_text(message, None)
    return _excerpt_text(json.dumps(error) if not isinstance(error, str) else error, None)


def _excerpt_text(text: str, secret: str | None) -> str:
    flat = _SPACES.sub(" ", redact(text, secret)).strip()
    return flat if len(flat) <= ERROR_EXCERPT_CHARS else flat[: ERROR_EXCERPT_CHARS - 3] + "..."


def now_ns() -> int:
    return time.perf_counter_ns()
