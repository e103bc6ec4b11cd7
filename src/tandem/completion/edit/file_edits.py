"""The values an edit is made of, and why an edit can fail.

A `FileEdit` replaces `[start, end)` (offsets in code points into the text the edit was computed
against) with `new_text`. Edits of one file never overlap; `apply_edits` applies them.

    CompletionError                  (completion.providers.errors)
    └── EditError                    an edit answer could not be turned into a safe change
        ├── AnswerParseError         the answer is malformed, truncated or does not match the files
        │                            (also a BadResponse: the model answered, but unusably)
        ├── EditInvalid              the edited file would not parse, or the change is far too large
        └── EditConflict             the user changed the same text meanwhile; nothing is applied

Every message is written for the user ("block 2 for views.py: SEARCH text not found: ...").
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tandem.completion.providers.errors import BadResponse, CompletionError


class EditError(CompletionError):
    """An edit could not be turned into a safe change of the user's files."""


class AnswerParseError(EditError, BadResponse):
    """The model's answer is malformed, truncated, or does not match the files it names."""


class EditInvalid(EditError):
    """The edit parses, but applying it would break a file or change far more than expected."""

    words = "edit rejected"


class EditConflict(EditError):
    """The user changed the text the edit touches after it was requested."""

    words = "edit not applied"


@dataclass(frozen=True, kw_only=True)
class FileEdit:
    """Replace `[start, end)` of `path`'s original text with `new_text`.

    Offsets are code-point indices into the text the caller handed in. `creates` marks a file that did
    not exist (start == end == 0 over an empty original).
    """

    path: str
    start: int
    end: int
    new_text: str
    creates: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"bad edit range [{self.start}, {self.end}) for {self.path}")


def line_col(text: str, offset: int) -> tuple[int, int]:
    """(line, column) of `offset` in `text`, both 0-based, column in code points."""
    line = text.count("\n", 0, offset)
    line_start = text.rfind("\n", 0, offset) + 1
    return line, offset - line_start


def line_offset(text: str, line: int) -> int:
    """Offset of the start of 0-based `line`; `len(text)` past the end."""
    offset = 0
    for _ in range(line):
        nl = text.find("\n", offset)
        if nl < 0:
            return len(text)
        offset = nl + 1
    return offset


def edits_by_path(edits: Iterable[FileEdit]) -> dict[str, list[FileEdit]]:
    """Edits grouped by path, each group sorted by start."""
    groups: dict[str, list[FileEdit]] = {}
    for edit in edits:
        groups.setdefault(edit.path, []).append(edit)
    for group in groups.values():
        group.sort(key=lambda e: (e.start, e.end))
    return groups


def check_disjoint(edits: Iterable[FileEdit]) -> None:
    """Raise `AnswerParseError` if two edits of one file overlap (two inserts at one point also do)."""
    for path, group in edits_by_path(edits).items():
        for before, after in itertools.pairwise(group):
            if after.start < before.end or (after.start == before.start):
                raise AnswerParseError(f"{path}: two changes overlap near offset {after.start}")


def apply_edits(text: str, edits: Iterable[FileEdit]) -> str:
    """`text` with `edits` (all of one file, non-overlapping) applied."""
    out: list[str] = []
    cursor = 0
    for edit in sorted(edits, key=lambda e: (e.start, e.end)):
        if edit.start < cursor or edit.end > len(text):
            raise ValueError(f"{edit.path}: edit [{edit.start}, {edit.end}) overlaps or exceeds the text")
        out.append(text[cursor : edit.start])
        out.append(edit.new_text)
        cursor = edit.end
    out.append(text[cursor:])
    return "".join(out)


def apply_all(originals: Mapping[str, str], edits: Iterable[FileEdit]) -> dict[str, str]:
    """The new text of every file the edits touch (a created file starts empty)."""
    return {path: apply_edits(originals.get(path, ""), group) for path, group in edits_by_path(edits).items()}


def _line_changes(originals: Mapping[str, str], edits: Iterable[FileEdit]) -> tuple[int, int]:
    removed = added = 0
    for edit in edits:
        old = originals.get(edit.path, "")[edit.start : edit.end].splitlines()
        new = edit.new_text.splitlines()
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
    return removed, added


def changed_lines(originals: Mapping[str, str], edits: Iterable[FileEdit]) -> int:
    """Lines removed plus lines added, as a diff would count them (unchanged lines inside an edit
    that the model merely repeated are not counted)."""
    return sum(_line_changes(originals, edits))


def removed_lines(originals: Mapping[str, str], edits: Iterable[FileEdit]) -> int:
    """Lines of the originals that the edits remove or replace (as `changed_lines` counts them)."""
    return _line_changes(originals, edits)[0]
