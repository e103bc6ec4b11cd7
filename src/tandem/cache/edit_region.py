"""The editable region around the cursor, and turning a model's rewrite of it into the smallest edits.

A next-edit model is shown lines [start, end) of the document (the *region*) and answers with the region
rewritten. `hunks` diffs the rewrite against the region line by line; `settled_hunks` does the same for a
rewrite still streaming, returning only the hunks that can no longer change (the rewrite has come back in
step with the region for a few lines after them); `char_edit` shrinks a hunk to the characters it
changes. `judge` says why an edit must not be shown: a no-op, the undoing of the user's last edit, or a
change outside the region (the model rewrote the lines around it too).

All positions are (line, code-point column) of the document; lines are without their terminators.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# Lines of a rewrite that must match the region again before a hunk before them counts as complete.
SETTLE_LINES = 2


@dataclass(frozen=True)
class Region:
    """Lines [start, end) of a document, as they were when the request was made."""

    start: int
    lines: tuple[str, ...]

    @property
    def end(self) -> int:
        return self.start + len(self.lines)

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def region_bounds(line_count: int, cursor_line: int, *, above: int, below: int) -> tuple[int, int]:
    """[start, end) of the region: `above` lines over the cursor, `below` under it, shifted to stay in
    the document (so a cursor near the top gets more lines below)."""
    size = above + below + 1
    start = max(0, cursor_line - above)
    end = min(line_count, start + size)
    start = max(0, end - size)
    return start, end


@dataclass(frozen=True)
class Hunk:
    """Region lines [start, start + len(old)) (region-relative) become `new`."""

    start: int
    old: tuple[str, ...]
    new: tuple[str, ...]


def rewrite_lines(rewrite: str) -> tuple[str, ...]:
    """A rewrite as lines (one final newline is not an extra empty line)."""
    if rewrite.endswith("\n"):
        rewrite = rewrite[:-1]
    return tuple(rewrite.split("\n"))


def hunks(region: tuple[str, ...], rewrite: tuple[str, ...]) -> list[Hunk]:
    """Every place the rewrite differs from the region, smallest first by position."""
    matcher = difflib.SequenceMatcher(None, region, rewrite, autojunk=False)
    return [Hunk(i1, region[i1:i2], rewrite[j1:j2]) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def settled_hunks(region: tuple[str, ...], partial: str, *, done: bool, distinct: bool = False) -> list[Hunk]:
    """The hunks of a rewrite that has streamed as far as `partial` and cannot change any more: all of
    them when the stream is `done`; otherwise those followed by `SETTLE_LINES` lines that match the
    region again (the model is copying the region once more) or, with `distinct`, by one matching line
    that is distinctive (see `_distinctive`: a model writing it is copying the region, not writing a new
    line that happens to look like it)."""
    if done:
        return hunks(region, rewrite_lines(partial))
    complete = partial[: partial.rfind("\n") + 1]
    if not complete:
        return []
    lines = tuple(complete[:-1].split("\n"))
    matcher = difflib.SequenceMatcher(None, region, lines, autojunk=False)
    opcodes = matcher.get_opcodes()
    settled: list[Hunk] = []
    pending: list[Hunk] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal":
            pending.append(Hunk(i1, region[i1:i2], lines[j1:j2]))
        elif pending and (i2 - i1 >= SETTLE_LINES or (distinct and _distinctive(region, region[i1], lines))):
            settled += pending
            pending = []
    return settled


def _distinctive(region: tuple[str, ...], line: str, rewrite: tuple[str, ...]) -> bool:
    """A line long enough to be written by chance only rarely (eight or more characters besides indentation,
    a letter among them) that occurs once in the region and once in the rewrite so far."""
    text = line.strip()
    if len(text) < 8 or not any(char.isalpha() for char in text):
        return False
    return region.count(line) == 1 and rewrite.count(line) == 1


def ends_a_clause(before_cursor: str) -> bool:
    """Whether the text of the line before the cursor ends where a change often ends: after a closing
    bracket or quote, a colon, a comma or a semicolon, or with only indentation left of the cursor (a new
    line was begun, or a line emptied). Not after a space, an opening bracket, a dot or an operator (what
    follows them is still to be typed) nor inside a word (the word may go on)."""
    if not before_cursor.strip():
        return True
    return before_cursor[-1] in _CLAUSE_ENDS


_CLAUSE_ENDS = frozenset(")]}:,;\"'`")


@dataclass(frozen=True)
class CharEdit:
    """Replace document text between (start_line, start_char) and (end_line, end_char) with `text`."""

    start_line: int
    start_char: int
    end_line: int
    end_char: int
    text: str

    def apply(self, lines: list[str]) -> list[str]:
        """`lines` (the whole document, or any list indexed by document line) with this edit made."""
        head = lines[self.start_line][: self.start_char] if self.start_line < len(lines) else ""
        tail = lines[self.end_line][self.end_char :] if self.end_line < len(lines) else ""
        middle = (head + self.text + tail).split("\n")
        return [*lines[: self.start_line], *middle, *lines[self.end_line + 1 :]]


def char_edit(hunk: Hunk, region: Region, *, line_count: int) -> CharEdit:
    """The smallest character edit doing what `hunk` does (common start and end of its lines kept)."""
    start = region.start + hunk.start
    if not hunk.old:
        # A pure insertion before region line `hunk.start` (or after the document's last line).
        text = "\n".join(hunk.new)
        if start < line_count:
            return CharEdit(start, 0, start, 0, text + "\n")
        last = line_count - 1
        end_char = len(region.lines[last - region.start]) if region.start <= last < region.end else 0
        return CharEdit(last, end_char, last, end_char, "\n" + text)
    old = "\n".join(hunk.old)
    new = "\n".join(hunk.new)
    end_line = start + len(hunk.old) - 1
    end_char = len(hunk.old[-1])
    if not hunk.new:
        # Whole lines removed: take a line terminator with them.
        if start + len(hunk.old) < line_count:
            return CharEdit(start, 0, end_line + 1, 0, "")
        if start > 0:
            previous = region.lines[hunk.start - 1] if hunk.start > 0 else ""
            return CharEdit(start - 1, len(previous), end_line, end_char, "")
        return CharEdit(start, 0, end_line, end_char, "")
    prefix, suffix = common_ends(old, new)
    first_line, first_char = _locate(hunk.old, prefix)
    last_line, last_char = _locate(hunk.old, len(old) - suffix)
    return CharEdit(start + first_line, first_char, start + last_line, last_char, new[prefix : len(new) - suffix])


def common_ends(old: str, new: str) -> tuple[int, int]:
    """(the length of the start `old` and `new` share, the length of the end they share after it)."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[len(old) - 1 - suffix] == new[len(new) - 1 - suffix]:
        suffix += 1
    return prefix, suffix


def _locate(lines: tuple[str, ...], offset: int) -> tuple[int, int]:
    """(line, column) of character `offset` in "\\n".join(lines)."""
    for index, line in enumerate(lines):
        if offset <= len(line):
            return index, offset
        offset -= len(line) + 1
    return len(lines) - 1, len(lines[-1])


@dataclass(frozen=True)
class LastEdit:
    """The user's most recent edit: document lines [start, start + len(new)) were `old` before it."""

    start: int
    old: tuple[str, ...]
    new: tuple[str, ...]


def judge(
    hunk: Hunk,
    region: Region,
    *,
    last: LastEdit | None,
    before: tuple[str, ...] = (),
    after: tuple[str, ...] = (),
) -> str:
    """Why `hunk` must not be shown ("" = it may be): "no-op", "reversal" (it puts back what the user's
    last edit replaced), or "outside" (it inserts copies of the lines just outside the region: the model
    rewrote past the region's edges). `before`/`after`: the document lines just before and after it."""
    if hunk.old == hunk.new:
        return "no-op"
    if not hunk.old and hunk.new:
        at_start, at_end = hunk.start == 0, hunk.start == len(region.lines)
        if at_end and after and tuple(hunk.new) == after[: len(hunk.new)]:
            return "outside"
        if at_start and before and tuple(hunk.new) == before[len(before) - len(hunk.new) :]:
            return "outside"
    if last is not None and _reverses(hunk, region, last):
        return "reversal"
    return ""


def _reverses(hunk: Hunk, region: Region, last: LastEdit) -> bool:
    """Whether making `hunk` leaves the lines of `last` as they were before it."""
    edit_start = region.start + hunk.start
    edit_end = edit_start + len(hunk.old)
    last_end = last.start + len(last.new)
    if edit_end < last.start or edit_start > last_end or (not hunk.old and edit_start == last_end and last.new):
        return False
    low, high = min(edit_start, last.start), max(edit_end, last_end)
    if low < region.start or high > region.end:
        return False

    def doc(a: int, b: int) -> tuple[str, ...]:
        return region.lines[a - region.start : b - region.start]

    result = doc(low, edit_start) + hunk.new + doc(edit_end, high)
    expected = doc(low, last.start) + last.old + doc(last_end, high)
    return result == expected
