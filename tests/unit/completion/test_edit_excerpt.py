"""Unit tests of the part of a file an edit shows when the whole file does not fit the window."""

from __future__ import annotations

from tandem.completion.edit.prompt import EditPrompt, edit_messages, excerpt_span, read_edit_prompt

TEXT = "".join(f"line {n}\n" for n in range(100))  # every line 7 or 8 characters


def test_the_part_grows_from_the_selection_a_line_each_side_in_turn() -> None:
    assert excerpt_span(TEXT, 50, 52, budget_chars=16) == (50, 52)
    assert excerpt_span(TEXT, 50, 52, budget_chars=32) == (49, 53)
    a, b = excerpt_span(TEXT, 50, 52, budget_chars=400) or (0, 0)
    assert a <= 50 and b >= 52 and abs((50 - a) - (b - 52)) <= 1
    assert sum(len(line) for line in TEXT.splitlines(keepends=True)[a:b]) <= 400


def test_a_side_that_reaches_the_file_end_leaves_the_budget_to_the_other() -> None:
    a, b = excerpt_span(TEXT, 1, 2, budget_chars=80) or (0, 0)
    assert (a, b) == (0, 11)  # 10 lines of 7 characters and one of 8: from the start, then downwards
    assert excerpt_span(TEXT, 0, 100, budget_chars=10_000) == (0, 100)


def test_a_cursor_shows_its_line_and_a_selection_that_does_not_fit_shows_nothing() -> None:
    assert excerpt_span(TEXT, 50, 50, budget_chars=8) == (50, 51)
    assert excerpt_span(TEXT, 10, 90, budget_chars=100) is None


def test_a_part_says_which_lines_of_how_many_and_reads_back() -> None:
    prompt = EditPrompt(path="a.py", text=TEXT, first_line=50, end_line=52, instruction="fix", shown=(40, 60))
    messages = edit_messages(prompt)
    file_message = messages[1]["content"]
    assert file_message.splitlines()[0].endswith("a.py lines 41-60 of 100")
    assert "line 39\n" not in file_message and "line 40\n" in file_message and "line 60\n" not in file_message
    back = read_edit_prompt(messages)
    assert back is not None and back.shown == (40, 60) and back.path == "a.py"
    assert back.text == "".join(TEXT.splitlines(keepends=True)[40:60])
    assert (back.first_line, back.end_line) == (50, 52)


def test_lines_are_counted_at_newlines_only() -> None:
    """A form feed (common between sections of older Python files) does not end a line for an editor."""
    text = "a = 1\n\x0c\nb = 2\x0c c = 3\nd = 4\n"
    prompt = EditPrompt(path="a.py", text=text, first_line=2, end_line=3, instruction="fix", shown=(2, 4))
    header, *body = edit_messages(prompt)[1]["content"].split("\n")
    assert header.endswith("lines 3-4 of 4")
    assert "\n".join(body).startswith("b = 2\x0c c = 3\nd = 4\n")
    assert excerpt_span(text, 2, 3, budget_chars=len("b = 2\x0c c = 3\n")) == (2, 3)
    # The selected lines, numbered as the editor numbers them.
    assert "    3| b = 2\x0c c = 3\n" in edit_messages(prompt)[-1]["content"]
