"""Answering early (units) and cleaning suggestions (post-processing)."""

from __future__ import annotations

from tandem.completion.inline.postprocess import Surroundings, clean, cut_unbalanced, trim_suffix_overlap
from tandem.completion.inline.units import UnitContext, useful_unit, wants_multiline


def test_single_line_waits_for_the_newline() -> None:
    ctx = UnitContext(line_before="x = ", line_after="", multiline=False)
    assert useful_unit("foo(1", False, ctx) is None
    assert useful_unit("foo(1)\nbar", False, ctx) == "foo(1)"
    assert useful_unit("foo(1)", True, ctx) == "foo(1)"


def test_at_the_end_of_a_complete_line_single_line_answers_with_the_next_line() -> None:
    ctx = UnitContext(line_before="    # Add the two before.", line_after="", multiline=False)
    assert useful_unit("\n    ret", False, ctx) is None
    assert useful_unit("\n    return a + b\n", False, ctx) == "\n    return a + b"
    assert useful_unit("\n\n\ndef greet(name):\n", False, ctx) == "\n\n\ndef greet(name):"
    assert useful_unit("\n    return a + b", True, ctx) == "\n    return a + b"
    # Text after the cursor stays on its line: a newline there is the end of the suggestion.
    closing = UnitContext(line_before="print(x", line_after=")", multiline=False)
    assert useful_unit("\nnext_line()\n", False, closing) == ""


def test_a_unit_never_ends_in_the_carriage_return_of_a_crlf_line_end() -> None:
    """Issue 36 item 1: a model shown a CRLF file writes CRLF; the '\r' belongs to the line end, and an
    editor inserting `:\r` before its own line end wrote `:\r\r\n`."""
    ctx = UnitContext(line_before="x = ", line_after="", multiline=False)
    assert useful_unit("foo(1)\r\nbar", False, ctx) == "foo(1)"
    end_of_line = UnitContext(line_before="    # Add the two before.", line_after="", multiline=False)
    assert useful_unit("\r\n    return a + b\r\n", False, end_of_line) == "\r\n    return a + b"
    assert useful_unit("\r\n    ret", False, end_of_line) is None
    block = UnitContext(line_before="def f(x):", line_after="", multiline=True)
    assert useful_unit("\r\n    y = x\r\n    return y\r\ndef g", False, block) == "\r\n    y = x\r\n    return y"


def test_block_ends_at_dedent() -> None:
    ctx = UnitContext(line_before="def f(x):", line_after="", multiline=True)
    assert useful_unit("\n    y = x\n    ret", False, ctx) is None
    assert useful_unit("\n    y = x\n    return y\ndef g", False, ctx) == "\n    y = x\n    return y"


def test_block_ends_at_blank_line_and_includes_closing_brace() -> None:
    ctx = UnitContext(line_before="    ", line_after="", multiline=True)
    assert useful_unit("a = 1\n    b = 2\n\n    c", False, ctx) == "a = 1\n    b = 2"
    brace = UnitContext(line_before="function f() {", line_after="", multiline=True)
    assert useful_unit("\n  return 1;\n}\nnext", False, brace) == "\n  return 1;\n}"


def test_block_is_bounded_by_max_lines() -> None:
    ctx = UnitContext(line_before="", line_after="", multiline=True, max_lines=3)
    assert useful_unit("a\nb\nc\nd\ne\n", False, ctx) == "a\nb\nc"


def test_multiline_mode_choice() -> None:
    assert wants_multiline("def f():", "", "auto")
    assert wants_multiline("    ", "", "auto")
    assert not wants_multiline("x = fo", "", "auto")
    assert not wants_multiline("    ", ")", "always")
    assert wants_multiline("x = fo", "", "always")
    assert not wants_multiline("", "", "never")


def test_stray_closer_on_the_cursor_line_ends_the_suggestion() -> None:
    assert cut_unbalanced("a, b)) + 1", "foo(") == "a, b)"
    assert cut_unbalanced("x]", "") == "x"
    assert cut_unbalanced("')' + y", "f(") == "')' + y"


def test_overlap_with_text_after_cursor_is_trimmed() -> None:
    around = Surroundings(line_before="print(", line_after=")")
    assert trim_suffix_overlap("'hi')", around) == "'hi'"
    around = Surroundings(line_before="x = [", line_after="]  # end")
    assert trim_suffix_overlap("1, 2]  # end", around) == "1, 2"


def test_repeats_and_empties_are_dropped() -> None:
    assert clean("   \n ", Surroundings(line_before="", line_after="")) == ""
    assert (
        clean("return value", Surroundings(line_before="    ", line_after="", previous_line="    return value")) == ""
    )
    following = ("", "def g():")
    kept = clean("\n    return 1\n\ndef g():", Surroundings(line_before="def f():", line_after="", following=following))
    assert kept == "\n    return 1"
    assert clean("total += x", Surroundings(line_before="    ", line_after="", previous_line="for x in xs:")) == (
        "total += x"
    )
