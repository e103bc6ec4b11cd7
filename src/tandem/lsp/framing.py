"""Base-protocol framing of the client's byte stream (`Content-Length: N` headers, a blank line, N bytes of
JSON), read so that no input can stop the server or leave it deaf.

pygls' stdio loop exits on a header line longer than its reader's limit and on a too-short Content-Length
of a large body (an uncaught ValueError), and desynchronises for good on a non-numeric, too-small or
too-large length or a lower-case header. `FrameReader` is pure (bytes in, events out) so it can be fuzzed:

- headers are matched case-insensitively and lines may end in '\\n' as well as '\\r\\n';
- bytes that are not a header (garbage between messages, a body without a header) are skipped up to the
  next `Content-Length`, also when it starts in the middle of a line;
- a body that is not JSON at its declared length is checked against the bytes around it: a complete JSON
  value followed by the next header means the length was too large; a JSON value that ends after the
  declared length means it was too small; either way the message is delivered and the stream resynchronised;
- a body that is none of these is reported (the caller answers a parse error), and skipped;
- a value nested deeper than `MAX_JSON_DEPTH` is cut there before it is parsed (each subtree below the
  limit becomes `null`, found by one linear scan): Python's JSON decoder recurses once per level and a
  value ~1,000 deep raised RecursionError out of the loop (Helix and Emacs forward a repository's settings
  as initializationOptions and didChangeConfiguration). The message is still delivered, so a request is
  still answered and a setting cut this way is refused by the config loader with its key named.

Events: `Message(value)` for each JSON value, `Problem(kind, detail)` for each thing skipped or repaired.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Longest header line kept; longer ones are garbage (a real header line is a few dozen bytes).
MAX_HEADER_LINE_BYTES = 1 << 16
# Largest body accepted (a 200 MB document is far past what tandem completes; see lsp.documents).
MAX_BODY_BYTES = 256 << 20

_HEADER = re.compile(rb"([A-Za-z][A-Za-z0-9-]*)[ \t]*:[ \t]*(.*?)[ \t]*", re.DOTALL)
_CONTENT_LENGTH = re.compile(rb"content-length[ \t]*:", re.IGNORECASE)
_HEADER_LINE = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r?\n", re.IGNORECASE)
_DIGITS = re.compile(rb"[0-9]{1,12}")
_DECODER = json.JSONDecoder()
# The deepest JSON value read whole. LSP's own messages nest about ten levels (client capabilities); the
# rest of the room is for settings. Far below the decoder's recursion limit.
MAX_JSON_DEPTH = 64
# A JSON string (escapes included) or one bracket: the only tokens that change the nesting.
_NESTING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


@dataclass(frozen=True)
class Message:
    value: Any


@dataclass(frozen=True)
class Problem:
    """Something in the stream skipped or repaired: `kind` is stable (for logging once), `detail` says what."""

    kind: str
    detail: str
    # True when the client may be waiting for an answer that will not come: the caller answers a parse error.
    lost: bool = False


Event = Message | Problem


class FrameReader:
    """Feed bytes as they arrive; get back the messages and problems they complete."""

    def __init__(self, *, max_header_line: int = MAX_HEADER_LINE_BYTES, max_body: int = MAX_BODY_BYTES) -> None:
        self._buffer = bytearray()
        self._max_line = max_header_line
        self._max_body = max_body
        # Header state of the message being read.
        self._length: int | None = None
        self._in_headers = False
        self._bad_length = False
        # Discarding the rest of an over-long line.
        self._skipping_line = False
        # Bytes of a body still arriving already searched for a following header (each byte is searched
        # once: a large body arrives in many reads).
        self._scanned = 0

    @property
    def pending(self) -> int:
        """Bytes held, waiting for the rest of a message."""
        return len(self._buffer)

    @property
    def awaiting_body(self) -> bool:
        return self._length is not None and not self._in_headers

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events: list[Event] = []
        while self._whole_message(events) or self._step(events):
            pass
        return events

    def _whole_message(self, events: list[Event]) -> bool:
        """A message as clients send nearly all of them (`Content-Length: N`, perhaps `Content-Type: ...` as
        pygls and vscode-jsonrpc write it, a blank line, N bytes of JSON nested at most `MAX_JSON_DEPTH`
        deep), read in one go between messages; False, with nothing consumed, for anything else, which
        `_step` reads line by line as it would have anyway."""
        if self._length is not None or self._in_headers or self._skipping_line:
            return False
        buffer = self._buffer
        if not buffer.startswith(b"Content-Length: "):
            return False
        length_end = buffer.find(b"\r\n", 16, 40)
        value = bytes(buffer[16:length_end])
        if length_end < 0 or not _DIGITS.fullmatch(value) or int(value) > self._max_body:
            return False
        at = length_end + 2
        if buffer.startswith(b"Content-Type: ", at):
            line_end = buffer.find(b"\r\n", at, at + 256)
            if line_end < 0 or buffer.find(b"\n", at, line_end) >= 0:
                return False
            at = line_end + 2
        if not buffer.startswith(b"\r\n", at):
            return False
        start = at + 2
        end = start + int(value)
        if len(buffer) < end or bytes(buffer[start : start + 1]) not in (b"{", b"["):
            return False
        body = bytes(buffer[start:end])
        bounded, cut = bound_depth(body)
        if cut:
            return False
        try:
            message = json.loads(bounded)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return False
        del buffer[:end]
        events.append(Message(message))
        return True

    def give_up(self) -> list[Event]:
        """No more bytes are coming for now (the client is waiting for an answer): a body whose declared
        length was too large is settled as the JSON value it holds. An incomplete body is kept: its rest may
        still come, and a message dropped here could be an edit (the next header settles it instead)."""
        if self._length is None or self._in_headers or not self._buffer:
            return []
        decoded = _leading_value(self._buffer)
        if decoded is None or bytes(self._buffer[decoded[1] :]).strip():
            # Not one whole value: if another message follows, this one is lost; otherwise wait on.
            events: list[Event] = []
            if _next_header(self._buffer, 1) is not None and self._resync(events, "an unreadable body"):
                while self._step(events):
                    pass
            return events
        events = [
            Problem("length-too-large", f"Content-Length {self._length}, body {decoded[1]} bytes"),
            Message(decoded[0]),
        ]
        del self._buffer[:]
        self._reset()
        return events

    # -- the state machine --------------------------------------------------------------------------

    def _reset(self) -> None:
        self._length = None
        self._in_headers = False
        self._bad_length = False
        self._scanned = 0

    def _step(self, events: list[Event]) -> bool:
        """Consume one line or one body; False when more bytes are needed."""
        if self._length is not None and not self._in_headers:
            return self._body(events)
        newline = self._buffer.find(b"\n")
        if newline < 0:
            if self._skipping_line:
                self._buffer.clear()
            elif len(self._buffer) > self._max_line:
                events.append(Problem("header-too-long", f"a header line over {self._max_line} bytes skipped"))
                self._buffer.clear()
                self._reset()
                self._skipping_line = True
            return False
        line = bytes(self._buffer[:newline]).rstrip(b"\r")
        del self._buffer[: newline + 1]
        if self._skipping_line:
            self._skipping_line = False
            return True
        if newline > self._max_line:
            events.append(Problem("header-too-long", f"a header line of {newline} bytes skipped"))
            self._reset()
            return True
        self._header_line(line, events)
        return True

    def _header_line(self, line: bytes, events: list[Event]) -> None:
        if not line.strip():
            if self._in_headers:
                self._in_headers = False
                if self._length is None or self._bad_length:
                    if not self._bad_length:
                        events.append(Problem("no-length", "a header block without Content-Length", lost=True))
                    self._reset()
            return
        if not self._in_headers:
            # Between messages only a header may start; anything before a Content-Length is garbage.
            found = _CONTENT_LENGTH.search(line)
            header = _HEADER.fullmatch(line)
            if header is None or (found is not None and found.start() > 0):
                if found is None:
                    events.append(Problem("garbage", f"{len(line)} bytes between messages skipped"))
                    return
                events.append(Problem("garbage", f"{found.start()} bytes before a header skipped"))
                line = line[found.start() :]
                header = _HEADER.fullmatch(line)
                if header is None:  # pragma: no cover - the search above matched a header name
                    return
            self._in_headers = True
            self._length = None
            self._bad_length = False
        header = _HEADER.fullmatch(line)
        if header is None:
            events.append(Problem("garbage", "a line that is not a header inside a header block", lost=True))
            self._reset()
            return
        if header.group(1).lower() != b"content-length":
            return  # Content-Type and unknown headers carry nothing tandem needs
        value = header.group(2)
        if not _DIGITS.fullmatch(value) or int(value) > self._max_body:
            events.append(Problem("bad-length", f"Content-Length {value[:40]!r} is not a usable length", lost=True))
            self._bad_length = True
            return
        self._length = int(value)
        self._bad_length = False

    def _body(self, events: list[Event]) -> bool:
        assert self._length is not None
        length = self._length
        first = bytes(self._buffer[:64]).lstrip()[:1]
        if first and first not in b"{[":
            return self._resync(events, "a body that is not a JSON object")
        if len(self._buffer) < length:
            # A declared length larger than the body shows once the next header is here.
            return self._too_large(events)
        body = bytes(self._buffer[:length])
        bounded, cut = bound_depth(body)
        try:
            value = json.loads(bounded)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return self._misfit(body, events)
        if cut:
            events.append(Problem("too-deep", f"{cut} value(s) nested deeper than {MAX_JSON_DEPTH} read as null"))
        del self._buffer[:length]
        self._reset()
        events.append(Message(value))
        return True

    def _too_large(self, events: list[Event]) -> bool:
        """A whole JSON value followed by the next message's header: the declared length was too large."""
        start = max(0, self._scanned - 64)  # a header line may straddle two reads
        self._scanned = len(self._buffer)
        for header in _headers(self._buffer, start):
            decoded = _leading_value(self._buffer[:header])
            if decoded is None or bytes(self._buffer[decoded[1] : header]).strip():
                continue  # "Content-Length:" inside the body's own text, or not after a whole value
            events.append(Problem("length-too-large", f"Content-Length {self._length}, body {decoded[1]} bytes"))
            events.append(Message(decoded[0]))
            del self._buffer[:header]
            self._reset()
            return True
        return False

    def _misfit(self, body: bytes, events: list[Event]) -> bool:
        """The declared length does not frame a JSON value."""
        # Too large: a whole value, then other bytes (the next message's header, or garbage): the value is
        # the message, and reading goes on as headers right after it.
        decoded = _leading_value(body)
        if decoded is not None:
            events.append(Problem("length-too-large", f"Content-Length {self._length}, body {decoded[1]} bytes"))
            events.append(Message(decoded[0]))
            del self._buffer[: decoded[1]]
            self._reset()
            return True
        # Too small: a value that runs past the declared length (what follows it is read as headers).
        decoded = _leading_value(self._buffer)
        if decoded is not None:
            events.append(Problem("length-too-small", f"Content-Length {self._length}, body {decoded[1]} bytes"))
            events.append(Message(decoded[0]))
            del self._buffer[: decoded[1]]
            self._reset()
            return True
        plausible = _headers(self._buffer)
        if not plausible:
            return False  # perhaps the rest of a too-short body is still on its way
        return self._resync(events, "a body that is not JSON", plausible[0])

    def _resync(self, events: list[Event], what: str, header: int | None = None) -> bool:
        """Drop the body being read, up to the next `Content-Length:` (False: none yet; wait for bytes)."""
        if header is None:
            header = _next_header(self._buffer, 0)
        if header is None:
            # Keep what could be the beginning of a header split across reads.
            keep = 64
            if len(self._buffer) > keep:
                del self._buffer[:-keep]
            return False
        events.append(Problem("bad-body", f"{what}: {header} bytes dropped", lost=True))
        del self._buffer[:header]
        self._reset()
        return True


def _next_header(data: bytes | bytearray, start: int) -> int | None:
    """Offset of the next whole `Content-Length: N` line at or after `start`, or None. A raw line break
    cannot occur inside a JSON string, so such a line is never part of a body's own text."""
    found = _HEADER_LINE.search(data, start)
    return None if found is None else found.start()


def _headers(data: bytes | bytearray, start: int = 0) -> list[int]:
    """Offsets of every whole `Content-Length: N` line in `data` from `start`, in its usual spellings
    (found with `find`, which is ~10x faster than a case-insensitive regex over a multi-megabyte body)."""
    offsets = []
    for needle in (b"ength", b"ENGTH"):
        at = data.find(needle, start)
        while at >= 0:
            begin = at - len(b"Content-L")
            if begin >= 0 and _HEADER_LINE.match(data, begin):
                offsets.append(begin)
            at = data.find(needle, at + 1)
    return sorted(offsets)


def _leading_value(data: bytes | bytearray) -> tuple[Any, int] | None:
    """The JSON value at the start of `data` (after whitespace) and where it ends, or None."""
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        text = bytes(data[: error.start]).decode("utf-8")
    stripped = len(text) - len(text.lstrip())
    try:
        value, end = _DECODER.raw_decode(text, stripped)
    except (ValueError, RecursionError):
        return None
    return value, len(text[:end].encode("utf-8"))


def bound_depth(body: bytes, limit: int = MAX_JSON_DEPTH) -> tuple[bytes, int]:
    """`body` with every array or object that opens deeper than `limit` replaced by `null`, and how many
    were replaced; one pass over the body (strings are skipped whole by the regex). A body with no more
    brackets than `limit` cannot be that deep and is returned as it is, unscanned."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return body, 0
    depth, cut_at, last, cuts = 0, -1, 0, 0
    parts: list[bytes] = []
    for token in _NESTING.finditer(body):
        char = body[token.start()]
        if char in b"[{":
            depth += 1
            if depth == limit + 1:
                cut_at = token.start()
        elif char in b"]}":
            depth -= 1
            if depth == limit and cut_at >= 0:
                parts += [body[last:cut_at], b"null"]
                last, cut_at, cuts = token.end(), -1, cuts + 1
    if cut_at >= 0:  # never closed: the body is not JSON either way; nothing deep is left to the decoder
        parts.append(body[last:cut_at])
        return b"".join(parts), cuts + 1
    if not cuts:
        return body, 0
    parts.append(body[last:])
    return b"".join(parts), cuts
