"""The server's one HTTP client, per-request time limits, and `Retry-After`.

One `httpx.AsyncClient` per server process, made by `make_client` and handed to every backend: its pool
keeps connections to the providers alive between keystrokes, so only the first request (or `warm()`)
pays for TCP and TLS set-up. A client per request would pay it every time.
"""

from __future__ import annotations

import email.utils
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import httpx

from tandem.completion.providers.aio_pool import AiohttpTransport
from tandem.completion.providers.transport import ResilientTransport

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig

USER_AGENT = "tandem-lsp/0.1"

# Time to wait for a free pooled connection. Only reached when every connection is busy streaming,
# which with at most a few live completions means something is stuck: fail fast rather than queue.
DEFAULT_POOL_TIMEOUT_S = 2.0
# Sending a request body (a context window of at most a few hundred KB) never takes long on a working link.
DEFAULT_WRITE_TIMEOUT_S = 10.0


def make_client(
    *,
    connect_timeout_s: float = 3.0,
    read_timeout_s: float = 10.0,
    write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S,
    pool_timeout_s: float = DEFAULT_POOL_TIMEOUT_S,
    max_connections: int = 16,
    max_keepalive_connections: int = 8,
    keepalive_expiry_s: float = 90.0,
    transport: httpx.AsyncBaseTransport | None = None,
) -> httpx.AsyncClient:
    """The shared client: keep-alive pool, per-phase timeouts, HTTP/1.1, no redirects.

    Backends pass their own `request_timeout(config)` on each request; these defaults cover anything
    else (warm-up probes). `transport` lets tests inject `httpx.MockTransport`.
    """
    timeout = httpx.Timeout(connect=connect_timeout_s, read=read_timeout_s, write=write_timeout_s, pool=pool_timeout_s)
    # A fast typist supersedes requests faster than streams end, so several may be in flight to one
    # provider at once; 16 leaves room for prefetch without letting a bug open hundreds of sockets.
    limits = httpx.Limits(
        max_connections=max_connections,
        max_keepalive_connections=max_keepalive_connections,
        keepalive_expiry=keepalive_expiry_s,
    )
    if transport is None:
        # The pool under a transport that cancellation cannot wedge (see providers.transport).
        transport = ResilientTransport(
            lambda: AiohttpTransport(
                max_connections=max_connections, keepalive_expiry=keepalive_expiry_s
            ),
            max_connections=max_connections,
        )
    return httpx.AsyncClient(
        timeout=timeout,
        limits=limits,
        transport=transport,
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT},
    )


def request_timeout(
    config: ModelConfig,
    *,
    write_timeout_s: float = DEFAULT_WRITE_TIMEOUT_S,
    pool_timeout_s: float = DEFAULT_POOL_TIMEOUT_S,
) -> httpx.Timeout:
    """Per-request limits for one model: `connect_timeout_s` to connect, and `read_timeout_s` (`timeout_s`,
    or longer for a local model, which sends nothing while it reads a prompt) as the read
    limit, which httpx applies to each read, so it bounds the stall between two bytes (time to first
    byte included), not the whole stream. The whole completion is bounded by its caller's deadline."""
    return httpx.Timeout(
        connect=config.connect_timeout_s,
        read=config.read_timeout_s,
        write=write_timeout_s,
        pool=pool_timeout_s,
    )


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a `Retry-After` header: delay-seconds ("2", "0.5") or an HTTP date.

    None when absent or unreadable. A date in the past gives 0.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds):
            return max(seconds, 0.0)
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    reference = now if now is not None else datetime.now(UTC)
    return max((when - reference).total_seconds(), 0.0)
