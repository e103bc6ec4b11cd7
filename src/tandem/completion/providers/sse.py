"""An incremental Server-Sent Events parser (the `text/event-stream` format), with no I/O.

Feed it the response body in whatever pieces the network delivers (split mid-line, between the `\\r`
and `\\n` of a CRLF, or, for bytes, inside a UTF-8 sequence) and it returns each event once its blank
line has arrived:

    parser = SseParser()
    for chunk in body_chunks:
        for event in parser.feed(chunk):
            handle(event.data)
    leftover = parser.close()

Field rules follow the WHATWG HTML "server-sent events" section: lines end in LF, CR or CRLF; a line
starting with `:` is a comment; `data` lines are joined with `\\n`; one space after the colon is dropped;
an event with no data is not dispatched.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class SseEvent:
    """One dispatched event. `event` is empty when the stream named no type (the spec's "message")."""

    data: str
    event: str = ""
    id: str = ""
    retry_ms: int | None = None


class SseParser:
    """Turns chunks of an event stream into `SseEvent`s. One parser per response body."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._line_parts: list[str] = []
        # A chunk ended in "\r": if the next one starts with "\n", that "\n" ends no second line.
        self._after_cr = False
        self._at_stream_start = True
        self._data: list[str] = []
        self._event = ""
        self._last_id = ""
        self._retry_ms: int | None = None

    def feed(self, chunk: str | bytes) -> list[SseEvent]:
        """Parse `chunk` and return the events it completed (often none, sometimes several)."""
        text = self._decoder.decode(chunk) if isinstance(chunk, bytes) else chunk
        return self._feed_text(text)

    def close(self) -> list[SseEvent]:
        """End of the body. Returns a last event whose lines were all complete but whose blank line
        never came (servers that end on `data: [DONE]\\n`); a line cut off mid-way is discarded, as the
        spec says."""
        events = self._feed_text(self._decoder.decode(b"", final=True))
        self._line_parts.clear()
        if self._data:
            events.append(self._dispatch())
        self._reset_event()
        return events

    def _feed_text(self, text: str) -> list[SseEvent]:
        events: list[SseEvent] = []
        if not text:
            return events
        if self._at_stream_start:
            self._at_stream_start = False
            if text.startswith("\ufeff"):
                text = text[1:]
        if self._after_cr:
            self._after_cr = False
            if text.startswith("\n"):
                text = text[1:]
        if not text:
            return events
        self._after_cr = text.endswith("\r")
        if "\r" in text:
            # Every line ending becomes "\n"; a trailing "\r" already ends its line (see _after_cr).
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if len(lines) == 1:
            self._line_parts.append(text)
            return events
        if self._line_parts:
            lines[0] = "".join(self._line_parts) + lines[0]
            self._line_parts.clear()
        if lines[-1]:
            self._line_parts.append(lines[-1])
        for line in lines[:-1]:
            # The two lines of nearly every event, read here; any other line as the spec says.
            if line[:6] == "data: ":
                self._data.append(line[6:])
                continue
            if not line and self._data:
                events.append(self._dispatch())
                self._reset_event()
                continue
            event = self._process_line(line)
            if event is not None:
                events.append(event)
        return events

    def _process_line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data:
                # The spec: a blank line with an empty data buffer dispatches nothing and resets the type.
                self._reset_event()
                return None
            event = self._dispatch()
            self._reset_event()
            return event
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._retry_ms = int(value)
        return None

    def _dispatch(self) -> SseEvent:
        return SseEvent(data="\n".join(self._data), event=self._event, id=self._last_id, retry_ms=self._retry_ms)

    def _reset_event(self) -> None:
        self._data = []
        self._event = ""
