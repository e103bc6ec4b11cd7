"""Text shown to a person (window/showMessage, status, the log) with its control characters escaped.

File names come from a repository and paths and reasons from a model's answer; either may hold terminal
escape sequences (`\x1b]0;...\x07` retitles a terminal, `\x1b[2J` clears it), carriage returns that
overwrite a log line, or bidirectional controls that reorder what is read. Every such character is shown
as its escape (`\\x1b`), so what reaches a screen is what is in the text, and nothing acts on the screen.
"""

from __future__ import annotations

import logging
import unicodedata

# Escaped besides the C0/C1 controls: format characters (bidirectional overrides and isolates, zero-width
# characters) and line or paragraph separators.
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _escape(character: str) -> str:
    code = ord(character)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def shown(text: str, *, keep_newlines: bool = False) -> str:
    """`text` with every control, format and separator character escaped (newlines kept if asked)."""
    if text.isprintable():
        return text
    return "".join(
        character
        if (keep_newlines and character == "\n") or unicodedata.category(character) not in _ESCAPED_CATEGORIES
        else _escape(character)
        for character in text
    )


class ShownFormatter(logging.Formatter):
    """A log formatter that escapes the message (and the traceback, keeping its lines) as `shown` does:
    a log line names files and quotes reasons, and a log is read in a terminal."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = shown(record.message)
        return super().formatMessage(record)

    def formatException(self, ei: object) -> str:
        return shown(super().formatException(ei), keep_newlines=True)  # type: ignore[arg-type]
