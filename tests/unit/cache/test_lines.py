"""LineBuffer against a plain-string model, and the position codec against Python's own encoders."""

from __future__ import annotations

import random

import pytest

from tandem.cache.lines import LineBuffer, content_length, split_lines
from tandem.lsp.positions import PositionCodec


def _offset(text: str, line: int, char: int) -> int:
    lines = text.split("\n")
    return sum(len(x) + 1 for x in lines[:line]) + char


@pytest.mark.parametrize("seed", range(20))
def test_random_edits_match_string_model(seed: int) -> None:
    rng = random.Random(seed)
    text = "".join(rng.choice("ab \n") for _ in range(rng.randint(0, 40)))
    buffer = LineBuffer(text)
    for _ in range(60):
        lines = text.split("\n")
        l1 = rng.randrange(len(lines))
        c1 = rng.randint(0, len(lines[l1]))
        l2 = rng.randint(l1, len(lines) - 1)
        c2 = rng.randint(c1 if l2 == l1 else 0, len(lines[l2]))
        new = "".join(rng.choice("xy\n") for _ in range(rng.randint(0, 5)))
        text = text[: _offset(text, l1, c1)] + new + text[_offset(text, l2, c2) :]
        edit = buffer.replace((l1, c1), (l2, c2), new)
        assert buffer.text() == text
        assert buffer.line_count == text.count("\n") + 1
        assert edit.start_line == l1 and edit.old_line_count == l2 - l1 + 1


def test_positions_past_the_end_are_clamped() -> None:
    buffer = LineBuffer("abc\ndef")
    buffer.replace((0, 99), (0, 99), "!")
    assert buffer.text() == "abc!\ndef"
    buffer.replace((7, 0), (9, 0), "?")
    assert buffer.text() == "abc!\ndef?"


def test_crlf_lines_keep_their_terminator() -> None:
    buffer = LineBuffer("ab\r\ncd\r\n")
    assert buffer.line_content(0) == "ab"
    buffer.replace((0, 2), (0, 2), "X")
    assert buffer.text() == "abX\r\ncd\r\n"
    assert content_length("x\r\n") == 1
    assert split_lines("a\nb") == ["a\n", "b"]


def test_text_around_cursor_is_bounded() -> None:
    buffer = LineBuffer("one\ntwo\nthree\n")
    assert buffer.text_before(2, 2, 100) == "one\ntwo\nth"
    assert buffer.text_before(2, 2, 5) == "wo\nth"
    assert buffer.text_after(0, 1, 6) == "ne\ntwo"


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_codec_round_trips_multibyte_lines(encoding: str) -> None:
    codec = PositionCodec(encoding)
    line = "naïve = '日本語' + '🎉' # ok"
    python_codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[encoding]
    unit = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[encoding]
    for column in range(len(line) + 1):
        client = len(line[:column].encode(python_codec)) // unit
        assert codec.to_client(line, column) == client
        assert codec.to_server(line, client) == column


def test_codec_column_inside_a_character_lands_before_it() -> None:
    codec = PositionCodec("utf-8")
    assert codec.to_server("é!", 1) == 0  # byte 1 is inside 'é'
    assert codec.to_server("ab", 99) == 2


def test_split_lines_breaks_only_at_newlines_whatever_else_the_text_holds() -> None:
    # str.splitlines (the fast path) also breaks at \v, \f, \x1c-\x1e, \x85, \u2028 and \u2029: LSP does not.
    rng = random.Random(37)
    pieces = ["ab", "\n", " ", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029", "é", "\n\n"]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        parts = text.split("\n")
        assert split_lines(text) == [p + "\n" for p in parts[:-1]] + [parts[-1]], repr(text)
    assert split_lines("") == [""]
    assert split_lines("a\n") == ["a\n", ""]
    assert split_lines("a\u2028b\n\fc") == ["a\u2028b\n", "\fc"]
