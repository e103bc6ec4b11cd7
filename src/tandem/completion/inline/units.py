"""Answer early: the smallest useful part of a growing model stream.

Single-line mode answers at the first complete line; multi-line mode at a block boundary (a dedent below
the block's indentation, a blank line after content, or `max_lines`). At the end of a line the stream says
is complete (its text starts with a newline), single-line mode answers with the next line instead, so the
suggestion for it appears without the user pressing Enter first. `useful_unit` returns None while the
stream has not yet decided the unit, so the caller waits for more text.

Lines end in '\n' or '\r\n' (a model shown a CRLF file writes CRLF): a unit never ends in the '\r' of a
line break, which is the line end's and not the line's (an editor inserting it wrote `...:\r\r\n`).
"""

from __future__ import annotations

from dataclasses import dataclass

_OPENERS = (":", "{", "(", "[", "=>", "->")
_CLOSERS = (")", "]", "}")


@dataclass(frozen=True, kw_only=True)
class UnitContext:
    """What the unit rules need to know about the cursor's line."""

    line_before: str
    line_after: str
    multiline: bool
    max_lines: int = 12
    # Single-line mode answers at a word's end before the line is complete (a model that writes ~30
    # tokens/s, as a local one: a whole line takes longer than the gap between two keys).
    early: bool = False


def wants_multiline(line_before: str, line_after: str, setting: str) -> bool:
    """Multi-line when nothing follows on the line and the cursor starts a line or opens a block."""
    if setting == "never" or line_after.strip():
        return False
    if setting == "always":
        return True
    stripped = line_before.rstrip()
    return not stripped or stripped.endswith(_OPENERS)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def useful_unit(text: str, done: bool, ctx: UnitContext) -> str | None:
    """The prefix of `text` to show now, or None if more of the stream is needed to decide."""
    if not ctx.multiline:
        end = text.find("\n")
        if text[: max(end, 0)] in ("", "\r") and end >= 0 and not ctx.line_after.strip():
            return _next_line(text, done)
        if end >= 0:
            return text[:end].removesuffix("\r")
        if done:
            return text
        return _words(text) if ctx.early else None
    return _block(text, done, ctx)


# Where a partial line may end: after a word, before what follows it.
_WORD_ENDS = frozenset(" \t.,:;()[]{}=+-*/<>!&|%\"'")
# The least of a partial line worth showing.
_EARLY_MIN_CHARS = 3


def _words(text: str) -> str | None:
    """The stream's unfinished line up to its last word boundary, if that holds a few characters."""
    for index in range(len(text) - 1, -1, -1):
        if text[index] in _WORD_ENDS:
            head = text[:index].rstrip(" \t") if text[index] in " \t" else text[: index + 1]
            return head if len(head.strip()) >= _EARLY_MIN_CHARS else None
    return None


def _next_line(text: str, done: bool) -> str | None:
    """The line after a complete one: the newline, any blank lines, and the first line with content."""
    start = len(text) - len(text.lstrip("\r\n \t"))
    end = text.find("\n", start)
    if end >= 0:
        return text[:end].removesuffix("\r")
    return text if done else None


def _block(text: str, done: bool, ctx: UnitContext) -> str | None:
    lines = text.split("\n")
    complete = len(lines) if done else len(lines) - 1
    first = ctx.line_before + lines[0]
    cursor_indent = _indent(ctx.line_before) if ctx.line_before.strip() else len(ctx.line_before)
    base: int | None = None
    if first.strip() and not first.rstrip().endswith(_OPENERS):
        base = _indent(first)
    kept = 1
    seen_content = bool(lines[0].strip())
    for j in range(1, len(lines)):
        line = lines[j]
        known = j < complete or bool(line.strip())
        if not known:
            return None
        if kept >= ctx.max_lines:
            break
        if not line.strip():
            if j >= complete:
                return None
            if seen_content:
                break
            kept += 1
            continue
        indent = _indent(line)
        if base is None:
            if j >= complete:
                # The line's indentation may still grow; wait for it to finish.
                return None
            base = indent
        if indent < base:
            if line.strip().startswith(_CLOSERS) and indent >= cursor_indent and j < complete:
                kept = j + 1  # the closing bracket of the block we opened
            break
        if j >= complete:
            return None
        seen_content = True
        kept = j + 1
    else:
        if not done:
            return None
    return "\n".join(lines[:kept]).rstrip()
