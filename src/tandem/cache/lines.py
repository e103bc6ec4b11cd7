"""A document's text as a list of lines, updated in place at the cost of the edit, not of the file.

pygls' `TextDocument` rebuilds its whole source string on every incremental change; in a 1 MB file that
is ~30 ms a keystroke. `LineBuffer` splices only the lines an edit touches (plus a pointer move in the
list), so a keystroke costs microseconds whatever the file size.

Columns here are code points (Python string indices). Converting to the client's position encoding is the
caller's job (lsp/positions.py), so this module knows nothing of UTF-16 or UTF-8.

Line breaks are LSP's three: '\n', '\r\n' and a lone '\r'. An edit can join a lone '\r' and a '\n' into
one '\r\n' (typing Enter after a line that ends in '\r'), so `replace` re-splits across that seam.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BREAK = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Edit:
    """Lines [start_line, start_line + old_line_count) were replaced by `new_line_count` lines."""

    start_line: int
    old_line_count: int
    new_line_count: int


# Breaks other than LSP's that `str.splitlines` also splits at.
_OTHER_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def split_lines(text: str) -> list[str]:
    """Split keeping each line's terminator; the last element is the text after the last line break."""
    if "\r" not in text:
        if _OTHER_BREAKS.search(text) is None:
            # Each line made once, with its '\n' (splitting, then adding the '\n', made every line twice:
            # 8 MB of garbage for the bench's 20 largest files, left scattered between live objects).
            lines = text.splitlines(keepends=True)
            if not lines or lines[-1].endswith("\n"):
                lines.append("")
            return lines
        parts = text.split("\n")
        return [p + "\n" for p in parts[:-1]] + [parts[-1]]
    lines = []
    start = 0
    for match in _BREAK.finditer(text):
        lines.append(text[start : match.end()])
        start = match.end()
    lines.append(text[start:])
    return lines


def content_length(line: str) -> int:
    """Length of `line` without its terminator ('\\n', '\\r\\n' or '\\r')."""
    n = len(line)
    if n and line[n - 1] == "\n":
        n -= 1
        if n and line[n - 1] == "\r":
            n -= 1
    elif n and line[n - 1] == "\r":
        n -= 1
    return n


class LineBuffer:
    """Mutable text as lines; every line but the last ends with a line break."""

    __slots__ = ("_lines",)

    def __init__(self, text: str = "") -> None:
        self._lines = split_lines(text)

    @property
    def line_count(self) -> int:
        return len(self._lines)

    def line(self, index: int) -> str:
        """Line `index` with its terminator; '' past the end."""
        return self._lines[index] if 0 <= index < len(self._lines) else ""

    def line_content(self, index: int) -> str:
        line = self.line(index)
        return line[: content_length(line)]

    def lines(self, start: int, end: int) -> list[str]:
        return self._lines[max(start, 0) : max(end, 0)]

    def text(self) -> str:
        """The whole text (O(size): not for the keystroke path)."""
        return "".join(self._lines)

    def clamp(self, line: int, char: int) -> tuple[int, int]:
        """The nearest valid position: past the last line is the end of the text; past a line's end is its end."""
        last = len(self._lines) - 1
        if line > last:
            return last, content_length(self._lines[last])
        if line < 0:
            return 0, 0
        return line, max(0, min(char, content_length(self._lines[line])))

    def replace(self, start: tuple[int, int], end: tuple[int, int], text: str) -> Edit:
        """Replace the text between two (line, char) positions; returns which lines changed."""
        (sl, sc), (el, ec) = self.clamp(*start), self.clamp(*end)
        if (el, ec) < (sl, sc):
            (sl, sc), (el, ec) = (el, ec), (sl, sc)
        head = self._lines[sl][:sc]
        tail = self._lines[el][ec:]
        if sl > 0 and not head and (text or tail)[:1] == "\n" and self._lines[sl - 1].endswith("\r"):
            # The previous line's lone '\r' and this '\n' become one '\r\n': that line is part of the edit.
            sl -= 1
            head = self._lines[sl]
        if sl == el and "\n" not in text and "\r" not in text:
            # The common keystroke: one line in, one line out.
            new = [head + text + tail]
        else:
            new = split_lines(head + text + tail)
            if tail[-1:] in ("\n", "\r"):
                # `tail` kept line el's terminator, so the split's final '' is not a line of its own.
                new.pop()
        self._lines[sl : el + 1] = new
        return Edit(sl, el - sl + 1, len(new))

    def text_before(self, line: int, char: int, max_chars: int) -> str:
        """Up to `max_chars` characters ending at (line, char)."""
        line, char = self.clamp(line, char)
        parts = [self._lines[line][:char]]
        size = char
        index = line - 1
        while size < max_chars and index >= 0:
            parts.append(self._lines[index])
            size += len(self._lines[index])
            index -= 1
        text = "".join(reversed(parts))
        return text[-max_chars:] if len(text) > max_chars else text

    def text_after(self, line: int, char: int, max_chars: int) -> str:
        """Up to `max_chars` characters starting at (line, char)."""
        line, char = self.clamp(line, char)
        parts = [self._lines[line][char:]]
        size = len(parts[0])
        index = line + 1
        while size < max_chars and index < len(self._lines):
            parts.append(self._lines[index])
            size += len(self._lines[index])
            index += 1
        text = "".join(parts)
        return text[:max_chars]
