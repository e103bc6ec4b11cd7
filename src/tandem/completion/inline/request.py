"""The plain values that cross from the LSP edge into the model side: one request, one result."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

import anyio


class TextSource(Protocol):
    """Read access to a document's text in code-point columns (`cache.lines.LineBuffer` is one)."""

    def text_before(self, line: int, char: int, max_chars: int) -> str: ...
    def text_after(self, line: int, char: int, max_chars: int) -> str: ...
    def line_content(self, index: int) -> str: ...


@dataclass(frozen=True, kw_only=True)
class CompletionRequest:
    """A request for a completion at one position of one document version.

    `line`/`character` are server positions (code points); the LSP edge converted them from the
    client's encoding. The text is read through `document` on demand, so a cache hit never copies the
    prompt window.
    """

    uri: str
    version: int
    line: int
    character: int
    document: TextSource
    language: str = ""
    path: str = ""
    kind: Literal["inline", "completion"] = "inline"
    client: str = ""
    invoked: bool = False
    received_ns: int = 0

    def prefix(self, max_chars: int) -> str:
        return self.document.text_before(self.line, self.character, max_chars)

    def suffix(self, max_chars: int) -> str:
        return self.document.text_after(self.line, self.character, max_chars)

    def line_before(self) -> str:
        return self.document.line_content(self.line)[: self.character]

    def line_after(self) -> str:
        return self.document.line_content(self.line)[self.character :]


Source = Literal["model", "stream", "cache", "none"]


@dataclass(frozen=True, kw_only=True)
class CompletionResult:
    """What to show: `text` is inserted at the cursor ('' = nothing to show)."""

    text: str = ""
    # The model is still streaming into this suggestion (completion menus set isIncomplete).
    streaming: bool = False
    # "model": a new model call; "stream": a stream already running or finished; "cache": the
    # completion cache.
    source: Source = "none"
    # A message for the user (shown once by the edge), e.g. how to configure a model.
    notice: str = ""
    trace_id: str = ""
    # For the editor's status display: server time to this answer, the tier that produced it
    # ("fast" | "accurate" | "cache"), the model, and the reason it failed, if it did.
    waited_ms: float = 0.0
    tier: str = ""
    model: str = ""
    error: str = ""
    # Why the accurate model answered although a fast one is configured ("" when it did not): the fast
    # one is down and `[completion] fallback_to_accurate` is on.
    stand_in: str = ""

    @staticmethod
    def empty(*, notice: str = "", trace_id: str = "") -> CompletionResult:
        return CompletionResult(notice=notice, trace_id=trace_id)


@dataclass
class Ticket:
    """A request in progress; superseding it cancels its current wait and it is answered empty."""

    superseded: bool = False
    _scope: anyio.CancelScope | None = None

    def waiting(self) -> anyio.CancelScope:
        """A fresh scope for one wait (anyio scopes are single-use), cancelled if already superseded."""
        self._scope = anyio.CancelScope()
        if self.superseded:
            self._scope.cancel()
        return self._scope

    def supersede(self) -> None:
        self.superseded = True
        if self._scope is not None:
            self._scope.cancel()


class Tickets:
    """The request in progress for each document: a newer one supersedes the older, which is answered empty
    at once (inline completions and next edits each keep one)."""

    def __init__(self) -> None:
        self._by_uri: dict[str, Ticket] = {}

    @contextlib.contextmanager
    def newest(self, uri: str) -> Iterator[Ticket]:
        """A ticket for a new request of `uri`, superseding the one in progress, for as long as it runs."""
        older = self._by_uri.get(uri)
        if older is not None:
            older.supersede()
        ticket = self._by_uri[uri] = Ticket()
        try:
            yield ticket
        finally:
            if self._by_uri.get(uri) is ticket:
                del self._by_uri[uri]

    def close(self, uri: str) -> None:
        """The document closed: its request in progress is superseded."""
        ticket = self._by_uri.pop(uri, None)
        if ticket is not None:
            ticket.supersede()
