"""The backend seam: stream text for a `ModelRequest`, and close.

A backend owns no connection pool of its own: it is handed the server's one shared
`httpx.AsyncClient` (keep-alive, pre-warmed) and only builds requests and parses responses. It speaks its
API and nothing more: the prompt comes built by the feature that asks (completions:
`completion.inline.prompts`; next edits: `completion.next_edit.context`; edits: `completion.edit.flow`), and
the answer goes back as the model wrote it, for that feature to clean (`completion.inline.answer`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

from tandem.completion.providers.errors import CompletionError


@dataclass(frozen=True, kw_only=True)
class ModelRequest:
    """What to send a model, in one of the two shapes APIs take, and the limits of the answer.

    - A conversation, `messages`: every chat API (`openai-chat`, `anthropic`, `openai-responses`; a `fim`
      backend sends it to its server's chat endpoint). Completions, next edits and edits alike.
    - A fill, for a completions API (`fim`): `prefix` and `suffix` (the backend adds its `fim_template`'s
      tokens, if it has one), or a whole `raw_prompt`, sent as is.
    """

    messages: tuple[tuple[str, str], ...] = ()
    prefix: str = ""
    suffix: str = ""
    raw_prompt: str = ""
    max_tokens: int = 256
    temperature: float = 0.0
    stop: tuple[str, ...] = ()
    # The document the request is about, its language, and an edit's instruction: what it is about, for
    # traces and the gate (the prompt already holds them).
    path: str = ""
    language: str = ""
    instruction: str = ""
    # For one of a series of prompts that each differ a little from the last (completions in one document):
    # the sentence that ends a message asking the model to apply an edit to its previous prompt and answer
    # again. A backend whose server holds the previous prompt (Responses over a WebSocket) may send that edit
    # instead of the whole prompt. Empty: the prompt always goes whole.
    follow_up: str = ""


def conversation(request: ModelRequest, api: str) -> list[tuple[str, str]]:
    """`request`'s messages, for a chat API named `api`; a fill is a caller's mistake, refused in words."""
    if not request.messages:
        raise CompletionError(f"the {api} API takes a conversation (messages), and this request is a fill")
    return list(request.messages)


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

    async def warm(self, like: ModelRequest | None = None) -> None:
        """Open a connection to the provider ahead of the first request (best effort, never raises). `like`
        is a request like those to come, which a backend that can prepare a prompt ahead (Responses over a
        WebSocket: its instructions) may send; the others open a connection only."""
        ...

    async def aclose(self) -> None:
        """Release what the backend holds (not the shared client, which its owner closes)."""
        ...
