"""Rebasing an edit over the user's typing (`completion.edit.rebase`), as properties over several user
changes and repeated lines, where one change on distinct lines let a wrong rebase pass
(`python tools/mutation.py --module tandem.completion.edit.rebase`).

The safety property: an edit applied after a rebase replaces exactly the text the model saw, so nothing the
user typed since is overwritten; a rebase may refuse instead, never guess."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tandem.completion.edit.file_edits import EditConflict, FileEdit
from tandem.completion.edit.rebase import rebase_edits
from tandem.completion.routing.change_in_progress import user_changes

# Few distinct lines, so that texts repeat lines often; some without a final newline, some with a tab (a
# character that sorts before the newline).
LINES = st.sampled_from(["a\n", "b\n", "x = 1\n", "\n", "    pass\n", "a", "\tb\n", "a\t"])


def _text(lines: list[str]) -> str:
    # Only the last line may lack its newline.
    return "".join(line if line.endswith("\n") or i == len(lines) - 1 else line + "\n" for i, line in enumerate(lines))


def _apply(text: str, edits: list[FileEdit]) -> str:
    for edit in sorted(edits, key=lambda e: e.start, reverse=True):
        text = text[: edit.start] + edit.new_text + text[edit.end :]
    return text


@st.composite
def _line_ranges(draw: st.DrawFn, count: int, fewest: int, most: int) -> list[tuple[int, int]]:
    """`fewest` to `most` sorted, disjoint [first, end) line ranges of at most two lines (possibly empty: an
    insertion) in `count` lines."""
    firsts = sorted(set(draw(st.lists(st.integers(0, count), min_size=fewest, max_size=most))))
    ranges: list[tuple[int, int]] = []
    for first in firsts:
        end = min(count, first + draw(st.integers(0, 2)))
        if not ranges or first > ranges[-1][1] or (first == ranges[-1][1] and first != ranges[-1][0]):
            ranges.append((first, end))
    return ranges


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[str, str, list[FileEdit], list[tuple[int, int, list[str]]]]:
    lines = draw(st.lists(LINES, min_size=4, max_size=24))
    base = _text(lines)
    starts = [0]
    for line in base.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    count = len(starts) - 1
    edits = [
        FileEdit(path="f.py", start=starts[a], end=starts[b], new_text=f"EDIT{i}\n")
        for i, (a, b) in enumerate(draw(_line_ranges(count, 1, 3)))
    ]
    user = [(a, b, draw(st.lists(LINES, max_size=3))) for a, b in draw(_line_ranges(count, 2, 4))]
    user = [(a, b, new) for a, b, new in user if a != b or new]
    current_lines = base.splitlines(keepends=True)
    for a, b, new in reversed(user):
        current_lines[a:b] = [line if line.endswith("\n") else line + "\n" for line in new]
    return base, "".join(current_lines), edits, user


@settings(max_examples=200)
@given(_scenario())
def test_a_rebased_edit_replaces_exactly_the_text_the_model_saw(
    scenario: tuple[str, str, list[FileEdit], list[tuple[int, int, list[str]]]],
) -> None:
    base, current, edits, _ = scenario
    try:
        moved = rebase_edits(edits, {"f.py": base}, {"f.py": current})
    except EditConflict:
        return
    assert len(moved) == len(edits)
    for edit, after in zip(edits, moved, strict=True):
        assert current[after.start : after.end] == base[edit.start : edit.end]
        assert after.new_text == edit.new_text
    assert all(a.end <= b.start for a, b in itertools.pairwise(moved))


@settings(max_examples=200)
@given(st.lists(LINES, max_size=14), st.lists(LINES, max_size=14))
def test_user_changes_account_for_every_difference_in_whole_lines(old: list[str], new: list[str]) -> None:
    base, current = _text(old), _text(new)
    changes = user_changes(base, current)
    assert changes == sorted(changes)
    assert sum(delta for _, _, delta in changes) == len(current) - len(base)
    # Between the changes, base and current agree (shifted by what the changes before added or removed).
    shift, previous = 0, 0
    for start, end, delta in changes:
        assert previous <= start <= end
        assert base[previous:start] == current[previous + shift : start + shift]
        # A change is whole lines: it starts at a line start and ends at one (or at the end, or is an insertion).
        assert start == 0 or base[start - 1] == "\n"
        assert end in (start, len(base)) or base[end - 1] == "\n"
        shift += delta
        previous = end
    assert base[previous:] == current[previous + shift :]
    assert (changes == []) == (base == current)
    # Nothing in the lines the texts share at their start, or at their end, is reported changed (with
    # repeated lines a diff of more than the lines between could pick another copy).
    shared = 0
    while shared < min(len(base), len(current)) and base[shared] == current[shared]:
        shared += 1
    first = base.rfind("\n", 0, shared) + 1
    tail = 0
    while tail < min(len(base), len(current)) - first and base[-1 - tail] == current[-1 - tail]:
        tail += 1
    last = len(base) - tail
    if last > 0 and base[last - 1] != "\n":
        last = len(base) if base.find("\n", last) < 0 else base.find("\n", last) + 1
    assert all(first <= start and end <= last for start, end, _ in changes), (first, last, changes)


def test_several_user_changes_apart_from_the_edits_keep_all_of_them() -> None:
    lines = [f"line {i}\n" for i in range(20)]
    base = "".join(lines)
    offset = [sum(len(line) for line in lines[:i]) for i in range(21)]
    edits = [
        FileEdit(path="f.py", start=offset[5], end=offset[6], new_text="FIVE\n"),
        FileEdit(path="f.py", start=offset[12], end=offset[14], new_text="TWELVE\n"),
    ]
    current_lines = list(lines)
    current_lines[17] = "seventeen, typed\n"
    current_lines[9:10] = ["nine\n", "and more\n"]
    current_lines[1:3] = []
    current = "".join(current_lines)
    moved = rebase_edits(edits, {"f.py": base}, {"f.py": current})
    expected = current.replace("line 5\n", "FIVE\n").replace("line 12\nline 13\n", "TWELVE\n")
    assert _apply(current, moved) == expected


def test_an_edit_next_to_any_of_several_user_changes_is_refused() -> None:
    lines = [f"line {i}\n" for i in range(12)]
    base = "".join(lines)
    edit = FileEdit(path="f.py", start=base.index("line 6"), end=base.index("line 7"), new_text="SIX\n")
    for touched in (5, 6, 7):
        current = base.replace("line 1\n", "").replace(f"line {touched}\n", f"line {touched} typed\n")
        with pytest.raises(EditConflict, match=f"you changed line {touched + 1} "):
            rebase_edits([edit], {"f.py": base}, {"f.py": current})
    # An insertion right at either end of the edit meets it too.
    for at in (edit.start, edit.end):
        with pytest.raises(EditConflict):
            rebase_edits([edit], {"f.py": base}, {"f.py": base[:at] + "new\n" + base[at:]})


def test_edits_in_several_files_are_each_rebased_on_their_own_file() -> None:
    base = {"a.py": "a0\na1\na2\n", "b.py": "b0\nb1\nb2\n"}
    current = {"a.py": "typed\na0\na1\na2\n", "b.py": "b0\nb1\nb2\n"}
    edits = [
        FileEdit(path="a.py", start=6, end=9, new_text="A2\n"),
        FileEdit(path="b.py", start=3, end=6, new_text="B1\n"),
    ]
    moved = {edit.path: edit for edit in rebase_edits(edits, base, current)}
    assert _apply(current["a.py"], [moved["a.py"]]) == "typed\na0\na1\nA2\n"
    assert _apply(current["b.py"], [moved["b.py"]]) == "b0\nB1\nb2\n"
    with pytest.raises(EditConflict, match="computed without this file's text"):
        rebase_edits(edits, {"a.py": base["a.py"]}, current)
    created = FileEdit(path="new.py", start=0, end=0, new_text="x\n", creates=True)
    # A file to create that does not exist yet does not end the rebase of the other files' edits.
    assert len(rebase_edits([created, *edits], base, current)) == 3
    # A file to create that still exists empty is created; one with text in it is not overwritten.
    assert rebase_edits([created], {"new.py": ""}, {"new.py": ""}) == [created]


def test_changes_among_many_repeated_blank_lines_are_found_line_by_line() -> None:
    """Blank lines are most of a long file: a diff that treats popular lines as junk merges two changed
    lines with the blank line between them into one change."""
    base = "".join(f"l{i}\n\n" for i in range(300))
    current = base
    for i in (10, 130, 131, 250):
        current = current.replace(f"l{i}\n", f"L{i}\n")
    at = base.index
    assert user_changes(base, current) == [
        (at(f"l{i}\n"), at(f"l{i}\n") + len(f"l{i}\n"), 0) for i in (10, 130, 131, 250)
    ]
    edit = FileEdit(path="f.py", start=at("l251\n"), end=at("l251\n") + 5, new_text="EDIT\n")
    (moved,) = rebase_edits([edit], {"f.py": base}, {"f.py": current})
    assert _apply(current, [moved]) == current.replace("l251\n", "EDIT\n")


def test_a_one_line_change_in_a_large_file_is_found_by_halving_not_by_scanning() -> None:
    """A keystroke in a 1 MB file: the common prefix and suffix are found in a few dozen comparisons (a
    search that scanned instead would take minutes here, and the test's time limit would end it)."""
    base = "".join(f"line {i:06d} of the file\n" for i in range(40_000))
    middle = base.index("line 020000")
    current = base[:middle] + "typed " + base[middle:]
    assert user_changes(base, current) == [(middle, middle, 6)]
    # Typed near both ends: the shared prefix and suffix are short, the text between long.
    near_start, near_end = base.index("line 000100"), base.index("line 039900")
    current = base[:near_start] + "typed " + base[near_start:near_end] + "typed " + base[near_end:]
    line = len("line 000100 of the file\n")
    assert user_changes(base, current) == [(near_start, near_start + line, 6), (near_end, near_end, 6)]


@pytest.mark.parametrize(
    ("base", "current", "changes"),
    [
        ("\n\n", "\n", [(1, 2, -1)]),
        ("\na\n", "\n\na\n", [(1, 1, 1)]),
        ("b\n\n", "\n\n", [(0, 2, -1)]),
    ],
)
def test_user_changes_start_after_the_shared_lines_even_at_the_first_character(
    base: str, current: str, changes: list[tuple[int, int, int]]
) -> None:
    assert user_changes(base, current) == changes
