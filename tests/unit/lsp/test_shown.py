"""Text shown to a person is escaped (`lsp.shown`): control, format and separator characters."""

from __future__ import annotations

import logging

from tandem.lsp.shown import ShownFormatter, shown
from tandem.lsp.status import Status


def test_terminal_escapes_bidi_controls_and_carriage_returns_are_escaped() -> None:
    assert shown("a\x1b]0;t\x07b") == "a\\x1b]0;t\\x07b"
    assert shown("x\ry\u202ez\u2028") == "x\\x0dy\\u202ez\\u2028"
    assert shown("two\nlines", keep_newlines=True) == "two\nlines"
    assert shown("héllo wörld ✓") == "héllo wörld ✓"


def test_the_status_and_the_log_escape_what_they_carry() -> None:
    status = Status(state="error", text="tandem \x1b[2J", tooltip="bad\x07")
    assert status.to_json()["text"] == "tandem \\x1b[2J" and status.to_json()["tooltip"] == "bad\\x07"
    record = logging.LogRecord("t", logging.INFO, __file__, 1, "%s refused", ("f\x1b[31m.py",), None)
    assert ShownFormatter("%(message)s").format(record) == "f\\x1b[31m.py refused"
