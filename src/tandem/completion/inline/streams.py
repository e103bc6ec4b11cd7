"""Model streams, running or finished, and reusing them as the user types through a suggestion.

A `Stream` is anchored where it was requested: the document position plus the text just before and
after it. A later request at (line, char) can use the stream if the text between the anchor and the
cursor is exactly the start of what the stream produced, and the text around it is unchanged: then the
rest of the stream is the suggestion, with no new model call. Live streams are few (a handful per
document); what they produced also goes into the bounded completion cache (`cache.completions`), which
serves it after the stream is gone.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tandem.completion.inline.request import CompletionRequest
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.errors import CompletionError, describe

if TYPE_CHECKING:
    from tandem.completion.inline.answer import AnswerCleaner
    from tandem.completion.providers.tiers import Tier

log = logging.getLogger(__name__)

# Characters of context remembered on each side of the anchor; a change inside them voids the stream.
# The same windows key the completion cache, so one copy serves both.
BEFORE_CHARS = 1024
AFTER_CHARS = 256
STREAMS_PER_DOCUMENT = 8
_ids = itertools.count(1)


class Cancelled(CompletionError):
    """The stream was stopped because the user moved on (not a provider failure)."""


@dataclass(kw_only=True)
class Stream:
    uri: str
    line: int
    character: int
    before: str
    after: str
    model: str
    # Started speculatively (not for a request the user made).
    prefetch: bool = False
    # The stream's entry in the completion cache, once it has text.
    entry_id: int | None = None
    id: str = field(default_factory=lambda: f"s{next(_ids)}")
    text: str = ""
    done: bool = False
    error: CompletionError | None = None
    stats: StreamStats = field(default_factory=StreamStats)
    first_line_ns: int = 0
    done_ns: int = 0
    task: asyncio.Task[None] | None = None
    # Asked of a model that reads prompts slowly and keeps what it read (a local server's prompt cache):
    # superseded while the server still reads its prompt, it reads on, since the next request's prompt
    # begins the same way, and stops at its first token (`supersede`).
    patient: bool = False
    # Made when someone waits for a change (most chunks of most streams arrive with nobody waiting).
    _changed: asyncio.Event | None = None
    _on_done: list[Callable[[Stream], None]] = field(default_factory=list)
    _cancel_sent: bool = False
    _stop_at_first_token: bool = False

    def append(self, chunk: str) -> None:
        if not chunk:
            return
        if self._stop_at_first_token:
            self.cancel()
            return
        self.text += chunk
        if not self.first_line_ns and "\n" in self.text:
            self.first_line_ns = time.perf_counter_ns()
        self._wake()

    def finish(self, error: CompletionError | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.error = error
        self.done_ns = time.perf_counter_ns()
        self._wake()
        for callback in self._on_done:
            callback(self)
        self._on_done.clear()

    @property
    def cancelled(self) -> bool:
        return isinstance(self.error, Cancelled)

    def on_done(self, callback: Callable[[Stream], None]) -> None:
        if self.done:
            callback(self)
        else:
            self._on_done.append(callback)

    def run(self, work: Coroutine[Any, Any, None]) -> None:
        """Run the stream's producer as a task. However the task ends, even cancelled before its first
        step (when its own cleanup never runs), the stream is finished and its waiters are woken."""
        self.task = asyncio.ensure_future(work)
        self.task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Future[None]) -> None:
        if task.cancelled():
            self.finish(Cancelled("superseded"))
        elif task.exception() is not None:
            self.finish(CompletionError(f"stream failed: {task.exception()!r}"))
        else:
            self.finish()

    def cancel(self) -> None:
        """Stop the producer, once. A cancelled stream is not done until its response is closed, and a
        second cancellation landing in that close interrupts it: httpcore then never returns the
        connection, which stays ACTIVE and owned by nobody (a keystroke cancels every stream not done, so
        a typist did this to one pool slot every few thousand keys; bench/bench_soak.py)."""
        if self.task is not None and not self.task.done() and not self._cancel_sent:
            self._cancel_sent = True
            self.task.cancel()

    def supersede(self) -> None:
        """The user moved away from this stream: stop it, unless it is patient and its request was sent and
        is still being read by the server (no text yet), in which case it stops at its first token."""
        if self.patient and self.stats.request_sent_ns and not self.text and not self.done:
            self._stop_at_first_token = True
        else:
            self.cancel()

    def keep(self) -> None:
        """The user came back to this stream (it serves a request again): let it run."""
        self._stop_at_first_token = False

    @property
    def stopping(self) -> bool:
        """Superseded, and stopping at its first token."""
        return self._stop_at_first_token

    def changed(self) -> Coroutine[Any, Any, Any]:
        """Wait until the text grows or the stream ends. The event is taken when this is called, not
        when the wait starts, so a change in between is never missed."""
        if self._changed is None:
            self._changed = asyncio.Event()
        return self._changed.wait()

    def _wake(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()

    def typed_through(self, request: CompletionRequest) -> int | None:
        """How many characters of this stream's text the user has typed since the anchor, if the
        document at `request` is exactly anchor + that text (and unchanged around it); else None."""
        if request.uri != self.uri or request.line < self.line:
            return None
        lines_down = request.line - self.line
        if lines_down == 0:
            typed = request.character - self.character
            if typed < 0 or "\n" in self.text[:typed]:
                return None
        else:
            newline = -1
            for _ in range(lines_down):
                newline = self.text.find("\n", newline + 1)
                if newline < 0:
                    return None
            typed = newline + 1 + request.character
        if typed > len(self.text):
            return None
        expected = self.before + self.text[:typed]
        if request.prefix(len(expected)) != expected:
            return None
        if request.suffix(len(self.after)) != self.after:
            return None
        return typed

    def typed_ahead(self, request: CompletionRequest) -> int | None:
        """Characters typed since the anchor when the user is ahead of a live stream whose text so far
        is their start (and the text around is unchanged); else None."""
        if self.done or self.error is not None or request.uri != self.uri or request.line < self.line:
            return None
        document = request.document
        if request.line == self.line:
            typed = request.character - self.character
        else:
            typed = len(document.line_content(self.line)) - self.character + 1
            for index in range(self.line + 1, request.line):
                typed += len(document.line_content(index)) + 1
            typed += request.character
        if typed <= len(self.text):
            return None
        head = request.prefix(len(self.before) + typed)
        if head[: len(self.before) + len(self.text)] != self.before + self.text:
            return None
        if request.suffix(len(self.after)) != self.after:
            return None
        return typed


class StreamStore:
    """The streams of each document, newest last, a few per document."""

    def __init__(self) -> None:
        self._by_uri: dict[str, deque[Stream]] = {}

    def find(self, request: CompletionRequest, *, exact: bool = False) -> tuple[Stream, int] | None:
        """The newest stream the user is typing through at `request`, with the characters typed
        (`exact`: only a stream anchored exactly at the cursor)."""
        for stream in reversed(self._by_uri.get(request.uri, ())):
            if stream.error is not None and not stream.text:
                continue
            typed = stream.typed_through(request)
            if typed is not None and (typed == 0 or not exact):
                return stream, typed
        return None

    def get(self, stream_id: str) -> Stream | None:
        for streams in self._by_uri.values():
            for stream in streams:
                if stream.id == stream_id:
                    return stream
        return None

    def find_ahead(self, request: CompletionRequest) -> tuple[Stream, int] | None:
        """The newest live stream the user has typed ahead of (see `Stream.typed_ahead`)."""
        for stream in reversed(self._by_uri.get(request.uri, ())):
            typed = stream.typed_ahead(request)
            if typed is not None:
                return stream, typed
        return None

    def live(self, uri: str) -> list[Stream]:
        return [stream for stream in self._by_uri.get(uri, ()) if not stream.done]

    def add(self, request: CompletionRequest, model: str, *, prefetch: bool = False, patient: bool = False) -> Stream:
        stream = Stream(
            patient=patient,
            uri=request.uri,
            line=request.line,
            character=request.character,
            before=request.prefix(BEFORE_CHARS),
            after=request.suffix(AFTER_CHARS),
            model=model,
            prefetch=prefetch,
        )
        streams = self._by_uri.setdefault(request.uri, deque())
        streams.append(stream)
        while len(streams) > STREAMS_PER_DOCUMENT:
            streams.popleft().cancel()
        return stream

    def cancel_others(self, uri: str, keep: Stream | None, *, keep_prefetch: bool = False) -> None:
        """Stop the model streams of `uri` that the user has moved away from (`keep_prefetch`: not the
        speculative ones, which may still lie ahead of a user typing through a suggestion)."""
        for stream in self._by_uri.get(uri, ()):
            if stream is not keep and not stream.done and not (keep_prefetch and stream.prefetch):
                stream.supersede()
        if keep is not None:
            keep.keep()

    def cancel_elsewhere(self, uri: str) -> list[Stream]:
        """Stop the live streams of every document but `uri` (the user works in `uri` now); returns them."""
        stopped = [s for other, streams in self._by_uri.items() if other != uri for s in streams if not s.done]
        for stream in stopped:
            stream.cancel()
        return stopped

    def forget(self, uri: str) -> None:
        for stream in self._by_uri.pop(uri, ()):
            stream.cancel()

    def close(self) -> list[asyncio.Task[None]]:
        """Cancel every stream; returns their tasks, to await their endings."""
        tasks = [s.task for streams in self._by_uri.values() for s in streams if s.task is not None]
        for uri in list(self._by_uri):
            self.forget(uri)
        return tasks


def log_failure(stream: Stream, *, level: int = logging.WARNING) -> None:
    if stream.error is not None:
        log.log(level, "stream %s (%s) ended: %s", stream.id, stream.model, describe(stream.error))


async def read_into(
    stream: Stream,
    tier: Tier,
    request: ModelRequest,
    *,
    remember: Callable[[Stream], None],
    cleaner: AnswerCleaner | None = None,
) -> None:
    """Stream `tier`'s answer into `stream` through the tier's one read path (`Tier.reading`), calling
    `remember` as it grows and at the end. With a `cleaner` (a completion asked as a conversation:
    `answer.answer_cleaner`) the text goes in as the cleaner releases it, and the stream's first token is
    the first text it releases (a fence line or a sentence of chatter is not the answer's)."""
    stats = stream.stats
    shown = False

    def append(chunk: str) -> None:
        nonlocal shown
        if cleaner is not None:
            chunk = cleaner.feed(chunk)
            if not shown:
                shown = bool(chunk)
                stats.first_token_ns = time.perf_counter_ns() if shown else 0
            if not chunk:
                return  # held back, or past the answer's end (read on for the usage, not shown)
        stream.append(chunk)
        remember(stream)

    try:
        async with tier.reading(request, stats, speculative=stream.prefetch) as reading:
            async for chunk in reading:
                append(chunk)
    except asyncio.CancelledError:
        stream.finish(Cancelled("superseded"))
        remember(stream)
        raise
    end = reading.end
    assert end is not None
    tail = cleaner.finish() if cleaner is not None and not end.cut else ""
    if tail:
        # What the cleaner held back ends the answer, or is what came before a failure (a stream cut
        # locally was closed mid-answer, and hands over nothing more).
        if not shown and end.error is None:
            stats.first_token_ns = time.perf_counter_ns()
        stream.append(tail)
        remember(stream)
    if end.error is None and stream.stats.finish_reason == "length":
        # Cut off by max_tokens (or locally): the last line is unfinished, and showing it would break the code.
        stream.text = stream.text[: stream.text.rfind("\n") + 1]
    stream.finish(end.error)
    remember(stream)
    # The first of failures in a row is a warning; the next ones are detail (the breaker tells the user of
    # an outage once), not a warning each in the editor's log (VS Code's Output had one per stream).
    log_failure(stream, level=logging.WARNING if tier.breaker.failures <= 1 else logging.DEBUG)
