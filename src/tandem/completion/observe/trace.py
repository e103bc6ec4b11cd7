"""One trace record per request, appended as a JSON line to a file that rotates at a size cap.

A record holds phase timestamps in milliseconds since the request was received (`ms`), the model and
route, where the answer came from, token usage and its estimated cost. It never holds document text or API
keys: the only strings taken from a request are its file name, language and client name.

The schema (every field, its unit, the kinds and phases, and how to add a field or a kind) is documented
in docs/trace.md; `SCHEMA_VERSION` is written into every record as `schema`. A test checks that every
field a record writes is documented there.

Phases, in the order a request meets them: received, cache_lookup, debounce_end, context_built,
request_sent, first_byte, first_token, first_line, answered, done (the stream behind it finished).
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import pathlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tandem.completion.machine.state import is_state_file
from tandem.completion.machine.trace_files import open_trace, rotate_trace
from tandem.completion.providers.errors import describe

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.inline.streams import Stream

log = logging.getLogger(__name__)

# Bumped when a field changes meaning or is removed; adding a field keeps the version (readers ignore
# fields they do not know).
SCHEMA_VERSION = 1

# One record per request of each kind (docs/trace.md says what each kind's request is).
KINDS: tuple[str, ...] = ("inline", "completion", "next_edit", "edit", "prefetch", "accept")

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
# perf_counter (monotonic, what phases are measured with) to Unix time, fixed once per process.
_WALL_OFFSET_NS = time.time_ns() - time.perf_counter_ns()
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
    outcome: str = ""  # shown | empty | superseded | cancelled | error | not-configured | refused
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
    # Estimated from the model's configured prices ([models.X] price_*_per_mtok); 0 when none are set.
    cost_usd: float = 0.0
    # How the model request travelled (`base.StreamStats`): "http" or "websocket"; over a WebSocket, whether
    # the connection had served before, whether the turn continued the previous response ("continued",
    # "full", "fallback"), and the bytes of the turn sent.
    transport: str = ""
    connection_reused: bool = False
    continuation: str = ""
    bytes_sent: int = 0
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
        if stats.request_sent_ns:
            self.transport = stats.transport
            self.connection_reused = stats.connection_reused
            self.continuation = stats.continuation
            self.bytes_sent = stats.bytes_sent
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
            "schema": SCHEMA_VERSION,
            "id": self.id,
            "t": round(time.time(), 3),
            "received_at": round((self.received_ns + _WALL_OFFSET_NS) / 1e9, 6),
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
            "cost_usd": round(self.cost_usd, 8),
            "transport": {
                "kind": self.transport,
                "reused": self.connection_reused,
                "continuation": self.continuation,
                "bytes_sent": self.bytes_sent,
            },
            "ms": ms,
        }


@dataclass(kw_only=True)
class EditTraceRecord(TraceRecord):
    """An edit's trace record: the route score, features (counts, never text) and attempts besides (written
    by `completion.edit`; its shape is the trace's, so it lives here)."""

    route_score: float = 0.0
    features: dict[str, Any] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    escalation: str = ""
    context_files: int = 0
    applied_files: int = 0
    plan: str = ""
    # The primary file's lines shown, [first, end) 0-based, when it was too long for the window to show whole.
    shown_lines: list[int] | None = None

    def to_json(self) -> dict[str, Any]:
        data = super().to_json()
        data["edit"] = {
            "route_score": round(self.route_score, 4),
            "features": self.features,
            "attempts": self.attempts,
            "escalation": self.escalation,
            "plan": self.plan,
            "context_files": self.context_files,
            "applied_files": self.applied_files,
            "shown_lines": self.shown_lines,
        }
        return data


def estimate_cost_usd(model: ModelConfig | None, *, tokens_in: int, tokens_out: int, tokens_cached: int) -> float:
    """What the tokens cost at `model`'s configured prices (USD per million tokens; 0 when unpriced)."""
    if model is None:
        return 0.0
    uncached = max(tokens_in - tokens_cached, 0)
    cached_price = model.price_cached_input_per_mtok or model.price_input_per_mtok
    return (
        uncached * model.price_input_per_mtok + tokens_cached * cached_price + tokens_out * model.price_output_per_mtok
    ) / 1e6


def inert_json(value: Any) -> str:
    """One JSON line that a shell reading the file would find nothing to run in. File names and errors
    come from the workspace and the model: JSON already escapes quotes, newlines and control characters
    (and, ASCII-only, everything else); `$`, backquotes and `!` are escaped too (`\\u0024`...), the only
    characters a shell still acts on inside a double-quoted string."""
    line = json.dumps(value, separators=(",", ":"))
    return line.replace("$", "\\u0024").replace("`", "\\u0060").replace("!", "\\u0021")


def default_trace_path() -> pathlib.Path:
    state = os.environ.get("XDG_STATE_HOME") or str(pathlib.Path.home() / ".local" / "state")
    return pathlib.Path(state) / "tandem" / "trace.jsonl"


class Tracer:
    """Appends records to a JSONL file that rotates at `max_bytes` (`trace.jsonl` -> `trace.jsonl.1` ...,
    `keep` old files kept, the names the standard library's rotating log handler uses); a disabled tracer
    (no path) drops them.

    Records also go to `sinks` (callables taking the record, such as the live status and the OpenTelemetry
    exporter): a sink must be cheap and must not raise on the request path.
    """

    def __init__(self, path: pathlib.Path | None, *, max_bytes: int = 20_000_000, keep: int = 3) -> None:
        if path is not None and is_state_file(path, rotations=keep):
            # Writing or rotating over the day's spend would reset its limit.
            log.warning("tandem: no trace written: %s is (or rotates onto) one of tandem's own state files", path)
            path = None
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep
        self.sinks: list[Callable[[TraceRecord], None]] = []
        # Called once by `close` (a sink's own shutdown, such as the OpenTelemetry exporter's).
        self.closers: list[Callable[[], None]] = []
        self._file: io.FileIO | None = None
        self._size = 0
        self.written = 0

    def write(self, record: TraceRecord) -> None:
        for sink in self.sinks:
            sink(record)
        if self.path is None:
            return
        line = (inert_json(record.to_json()) + "\n").encode("utf-8")
        if self._file is None:
            self._open()
        elif self._size and self._size + len(line) > self.max_bytes:
            self._rotate()
        assert self._file is not None
        # Unbuffered: one write per record, so a crash or a reader (the replay harness) never sees half a
        # line. (The standard library's rotating handler costs ~3x this per record: a LogRecord, a lock and
        # two stat calls each time.)
        self._file.write(line)
        self._size += len(line)
        self.written += 1

    def _open(self, *, truncate: bool = False) -> None:
        assert self.path is not None
        self._file, self._size = open_trace(self.path, truncate=truncate)

    def _rotate(self) -> None:
        assert self.path is not None and self._file is not None
        self._file.close()
        if self.keep > 0:
            rotate_trace(self.path, self.keep)
            self._open()
        else:
            self._open(truncate=True)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        closers, self.closers = self.closers, []
        for closer in closers:
            closer()
