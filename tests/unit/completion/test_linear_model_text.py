"""No pattern over a model's answer takes more than linear time: a 28 KB line in an answer held the event
loop for 8-10 s (`edit.parse`'s fence-path pattern tried every split of a long run of path characters) and
a long first line, held while it might be chatter, was re-read on every chunk (`AnswerCleaner`).

The async tests run on the tests' watched loop (tests/loop_watch_fixture.py): holding it over 100 ms fails
them. The property tests pin the rewritten patterns to what the old ones accepted (the old patterns are the
specification here, kept as written)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tandem.completion.edit.file_edits import AnswerParseError
from tandem.completion.edit.parse import EditTarget, _fence_path, _path_line, parse_answer
from tandem.completion.inline.answer import AnswerCleaner

LONG = 28_000
OLD_FENCE_PATH = re.compile(r"^\s*(?:`{3,}|~{3,})\w*[ :]([\w.-]*[/.][\w./-]+)\s*$")
OLD_PATH_LINE = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*)?(?:file(?:name)?:\s*)?`?([\w./\\-]+\.\w+|[\w.-]+/[\w./-]+)`?(?:\*\*)?:?\s*$",
    re.IGNORECASE,
)
LINES = st.text(alphabet="`~ \t:#*./\\-_aZ9é!\nfilename", max_size=24)


@given(LINES)
def test_a_fence_naming_a_file_is_read_as_before(line: str) -> None:
    old = OLD_FENCE_PATH.match(line)
    assert _fence_path(line) == (old.group(1) if old else None)


@given(LINES)
def test_a_line_naming_a_file_is_read_as_before(line: str) -> None:
    old = OLD_PATH_LINE.match(line)
    assert _path_line(line) == (old.group(1) if old else None)


@pytest.mark.parametrize(
    "line",
    [
        "```python " + "a." * (LONG // 2) + " !",
        "```py " + "." * LONG + "!",
        "a." * (LONG // 2) + "!",
        "a/" * (LONG // 2) + "!",
        "### " + "-" * LONG + "!",
    ],
)
async def test_a_28_kb_line_in_an_edit_answer_is_read_without_holding_the_loop(line: str) -> None:
    target = EditTarget(originals={"app.py": "x = 1\n"}, primary="app.py")
    answer = f"{line}\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
    try:
        edits = parse_answer(answer, target)
    except AnswerParseError:
        return
    assert edits


# A model allowed more tokens (`max_tokens` up to 1,000,000) may send a first line this long: 100 KB held the
# loop for about 1.6 s before, as the head of the answer was re-read on every chunk.
HEAD = 100_000


@pytest.mark.parametrize("first", ["sure" + "x" * HEAD, " " * HEAD, "\n" * HEAD, "Here is" + " the code" * (HEAD // 9)])
async def test_a_100_kb_first_line_streamed_in_small_chunks_does_not_hold_the_loop(first: str) -> None:
    cleaner = AnswerCleaner()
    shown = []
    for at in range(0, len(first), 4):  # about a token at a time
        shown.append(cleaner.feed(first[at : at + 4]))
    shown.append(cleaner.finish())
    assert "".join(shown).strip() == first.strip()  # not chatter after all: all of it is the answer
