"""The backend seam: stream text for a `ModelRequest`, and close.

A backend owns no connection pool of its own: it is handed the server's one shared
`httpx.AsyncClient` (keep-alive, pre-warmed) and only builds requests and parses responses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """What to ask a model for: the code around the cursor and the limits of the answer."""

    prefix: str
    suffix: str
    # Cross-file snippets (stable material: imports' outlines, definitions), sent before the file.
    context: str = ""
    language: str = ""
    path: str = ""
    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    # Free-form instruction for edits; empty for completions.
    instruction: str = ""
    # A whole conversation (role, content) for chat backends, sent as is and streamed back raw (no
    # hole-filling cleanup): the edit path builds its own prompt. Empty for completions.
    messages: tuple[tuple[str, str], ...] = ()
    # A whole prompt for completions APIs (`fim` backend), sent as is with no suffix or template: the
    # raw next-edit prompt. Empty for completions.
    raw_prompt: str = ""


@dataclass(kw_only=True)
class Usage:
    """Token accounting as the provider reported it (zero where it reported nothing)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0


@dataclass(kw_only=True)
class StreamStats:
    """Filled in by a backend while it streams, so callers can trace phases without a second channel."""

    usage: Usage = field(default_factory=Usage)
    request_sent_ns: int = 0
    first_byte_ns: int = 0
    first_token_ns: int = 0
    finish_reason: str = ""
    # How the request travelled: "http" (a POST per request) or "websocket" (a turn on a kept connection).
    transport: str = "http"
    # The request went over a connection that had served a request before (WebSocket; unknown over HTTP,
    # where httpx's pool decides).
    connection_reused: bool = False
    # WebSocket turns of a completion: "full" (whole prompt), "continued" (an edit of the previous
    # response's prompt), "fallback" (a continuation the server had forgotten, sent again in full).
    continuation: str = ""
    # Bytes of request payload sent (the turn's JSON over a WebSocket; 0 where not counted).
    bytes_sent: int = 0


class Backend(Protocol):
    """Streams completion text. Raises only `completion.providers.errors.CompletionError` subclasses."""

    name: str

    def stream(self, request: ModelRequest, stats: StreamStats) -> AsyncIterator[str]:
        """Yield text chunks as they arrive. Updates `stats` (usage, timestamps) as it goes."""
        ...

    async def warm(self) -> None:
        """Open a connection to the provider ahead of the first request (best effort, never raises)."""
        ...

    async def aclose(self) -> None:
        """Release what the backend holds (not the shared client, which its owner closes)."""
        ...
