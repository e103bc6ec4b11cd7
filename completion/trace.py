"""One trace record per request, appended as a JSON line.

A record holds phase timestamps in milliseconds since the request was received (`ms`), the model and
route, where the answer came from, and token usage. It never holds document text or API keys: the only
strings taken from a request are its file name, language and client name.

Phases, in the order a request meets them: received, cache_lookup, debounce_end, context_built,
request_sent, first_byte, first_token, first_line, answered, done (the stream behind it finished).
"""

from __future__ import annotations

import itertools
import json
import os
import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from tandem.completion.errors import describe

if TYPE_CHECKING:
    from tandem.completion.streams import Stream

PHASES: tuple[str, ...] = (
    "received",
    "cache_lookup",
    "debounce_end",
    "context_built",
    "request_sent",
    "first_byte",
    "first_token",
    "first_line",
    "answered",
    "done",
)

_ids = itertools.count(1)
# Rough token size of text when no tokenizer is at hand.
_CHARS_PER_TOKEN = 4


@dataclass(kw_only=True)
class TraceRecord:
    kind: str
    received_ns: int
    id: str = field(default_factory=lambda: f"r{next(_ids)}")
    file: str = ""
    language: str = ""
    client: str = ""
    mode: str = ""
    model: str = ""
    tier: str = ""
    route_reasons: list[str] = field(default_factory=list)
    # "model" (this request started a model stream), "stream" (served from one already running or
    # finished), "none" (nothing was asked of a model).
    source: str = "none"
    stream_id: str = ""
    outcome: str = ""  # shown | empty | superseded | cancelled | error | not-configured
    # True when the answer had to wait for model output (a new call, or a stream not yet far enough).
    waited_for_model: bool = False
    error: str = ""
    chars: int = 0
    prompt_chars: int = 0
    # Tokens in the context window sent, and the share of them identical to the previous window's start
    # (what the provider's prefix cache can reuse).
    context_tokens: int = 0
    prefix_reuse: float = 0.0
    # Served from a speculative (prefetch) stream.
    prefetched: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_cached: int = 0
    # The provider sent no usage (the stream was stopped first): tokens counted here instead.
    tokens_estimated: bool = False
    marks_ns: dict[str, int] = field(default_factory=dict)

    def stream_ended(self, stream: Stream, *, count_tokens: Callable[[str], int] | None = None) -> None:
        """Fill in what the model stream behind this record did: phase times, usage, failure."""
        stats = stream.stats
        self.mark("request_sent", stats.request_sent_ns)
        self.mark("first_byte", stats.first_byte_ns)
        self.mark("first_token", stats.first_token_ns)
        self.mark("first_line", stream.first_line_ns)
        self.mark("done", stream.done_ns)
        self.tokens_in = stats.usage.input_tokens
        self.tokens_out = stats.usage.output_tokens
        self.tokens_cached = stats.usage.cached_tokens
        if not self.tokens_out and stats.request_sent_ns and stream.error is not None:
            # A stream stopped before the provider's usage chunk still cost tokens: count what arrived
            # and what was sent, so that tokens per accepted character does not flatter speculation.
            count = count_tokens or (lambda text: -(-len(text) // _CHARS_PER_TOKEN))
            self.tokens_out = count(stream.text)
            self.tokens_in = self.context_tokens or self.prompt_chars // _CHARS_PER_TOKEN
            self.tokens_estimated = True
        if self.kind == "prefetch":
            self.outcome = self.outcome or ("cancelled" if stream.cancelled else "done")
        if stream.error is not None and not stream.cancelled and not self.error:
            self.error = describe(stream.error)

    def mark(self, phase: str, at_ns: int | None = None) -> None:
        """Record when `phase` happened (now unless given); the first mark of a phase wins."""
        if phase not in self.marks_ns and (at_ns is None or at_ns > 0):
            self.marks_ns[phase] = at_ns if at_ns is not None else time.perf_counter_ns()

    def to_json(self) -> dict[str, Any]:
        ms = {
            phase: round((self.marks_ns[phase] - self.received_ns) / 1e6, 3)
            for phase in PHASES
            if phase in self.marks_ns
        }
        ms["received"] = 0.0
        return {
            "id": self.id,
            "t": round(time.time(), 3),
            "kind": self.kind,
            "file": self.file,
            "language": self.language,
            "client": self.client,
            "mode": self.mode,
            "model": self.model,
            "tier": self.tier,
            "route_reasons": self.route_reasons,
            "source": self.source,
            "stream_id": self.stream_id,
            "outcome": self.outcome,
            "waited_for_model": self.waited_for_model,
            "error": self.error,
            "chars": self.chars,
            "prompt_chars": self.prompt_chars,
            "context_tokens": self.context_tokens,
            "prefix_reuse": self.prefix_reuse,
            "prefetched": self.prefetched,
            "tokens": {
                "in": self.tokens_in,
                "out": self.tokens_out,
                "cached": self.tokens_cached,
                "estimated": self.tokens_estimated,
            },
            "ms": ms,
        }


def default_trace_path() -> pathlib.Path:
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "tandem" / "trace.jsonl"


class Tracer:
    """Appends records to a JSONL file; a disabled tracer (no path) drops them."""

    def __init__(self, path: pathlib.Path | None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        self.written = 0

    def write(self, record: TraceRecord) -> None:
        if self.path is None:
            return
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("a", encoding="utf-8")
        self._file.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
        # Flushed per record so a crash or a reader (the replay harness) never sees half a file.
        self._file.flush()
        self.written += 1

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
