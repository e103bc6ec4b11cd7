"""Carrying an edit over the user's typing: rebase when the changes are apart, refuse when they meet.

An edit is computed against the text the model saw (`base`). By the time it arrives, the user may have
typed (`current`). The user's changes are found line by line (common prefix and suffix first, so a
keystroke in a large file costs little), and each edit range is shifted by what the user inserted or
removed before it. If a user change touches or sits inside an edit's range, nothing is applied and the
refusal says where: the user's newer text is never overwritten.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import replace

from tandem.completion.edit.file_edits import EditConflict, FileEdit, edits_by_path, line_col


def user_changes(base: str, current: str) -> list[tuple[int, int, int]]:
    """The user's changes as (start, end, delta): `base[start:end]` was replaced by text whose length
    differs by `delta`. Offsets are into `base`; the list is sorted and disjoint."""
    if base == current:
        return []
    # Trim the common prefix and suffix to whole lines, then diff only the middle's lines.
    prefix = len(_common_prefix(base, current))
    prefix = base.rfind("\n", 0, prefix) + 1
    limit = min(len(base), len(current)) - prefix
    suffix = _common_suffix_len(base, current, limit)
    base_end = len(base) - suffix
    if base_end > 0 and base[base_end - 1] != "\n":
        # Start the common suffix at a line start, so the middle is whole lines.
        next_line = base.find("\n", base_end)
        base_end = len(base) if next_line < 0 else next_line + 1
        suffix = len(base) - base_end
    cur_end = len(current) - suffix
    old_lines = base[prefix:base_end].splitlines(keepends=True)
    new_lines = current[prefix:cur_end].splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    changes: list[tuple[int, int, int]] = []
    old_offsets = _offsets(old_lines, prefix)
    new_offsets = _offsets(new_lines, 0)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old_len = old_offsets[i2] - old_offsets[i1]
        new_len = new_offsets[j2] - new_offsets[j1]
        changes.append((old_offsets[i1], old_offsets[i2], new_len - old_len))
    return changes


def _common_prefix(a: str, b: str) -> str:
    lo, hi = 0, min(len(a), len(b))
    # Binary search on slice equality: C-speed comparisons instead of a Python loop per character.
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return a[:lo]


def _common_suffix_len(a: str, b: str, limit: int) -> int:
    lo, hi = 0, max(limit, 0)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _offsets(lines: list[str], start: int) -> list[int]:
    out = [start]
    for line in lines:
        out.append(out[-1] + len(line))
    return out


def _meets(edit: FileEdit, change: tuple[int, int, int]) -> bool:
    start, end, _ = change
    # Touching counts: text typed right at an edit's boundary may belong to what the edit replaces.
    return start <= edit.end and end >= edit.start


def rebase_edits(edits: Sequence[FileEdit], base: Mapping[str, str], current: Mapping[str, str]) -> list[FileEdit]:
    """`edits` (computed over `base`) moved onto `current`; raises `EditConflict` if the user changed
    text an edit touches, or a file's current text is unknown."""
    rebased: list[FileEdit] = []
    for path, group in edits_by_path(edits).items():
        if path not in current:
            if group[0].creates:
                rebased.extend(group)
                continue
            raise EditConflict(f"{path}: its current text is unknown, so the edit cannot be checked")
        if path not in base:
            raise EditConflict(f"{path}: the edit was computed without this file's text")
        if group[0].creates and current[path]:
            raise EditConflict(f"{path} was created meanwhile; not overwriting it")
        changes = user_changes(base[path], current[path])
        for edit in group:
            clash = next((c for c in changes if _meets(edit, c)), None)
            if clash is not None:
                line, _ = line_col(base[path], clash[0])
                raise EditConflict(
                    f"{path}: you changed line {line + 1} while the edit was being made, and the edit "
                    "changes that text too; nothing was applied"
                )
            shift = sum(delta for start, end, delta in changes if end <= edit.start)
            rebased.append(replace(edit, start=edit.start + shift, end=edit.end + shift))
    return rebased
