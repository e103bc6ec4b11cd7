"""The user's change in progress as the router counts it, from texts alone (no I/O).

`user_changes` finds what changed between two texts of a file, line by line (`edit.rebase` carries an
edit over the same changes); `working_diff_of` counts them over files into a `WorkingDiff`, which
`working_diff` reads for an edit from the repository and the open documents.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class WorkingDiff:
    """The user's change in progress: changed lines, and the files they are in."""

    lines: int = 0
    files: tuple[str, ...] = ()


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


def working_diff_of(files: Mapping[str, tuple[str, str]]) -> WorkingDiff:
    """The user's change in progress from {path: (reference text, current text)}; the reference is the
    text when opened or last saved, or git's HEAD. Lines counted as removed plus added."""
    lines = 0
    changed: list[str] = []
    for path, (reference, current) in files.items():
        shift = 0
        count = 0
        for start, end, delta in user_changes(reference, current):
            removed = reference[start:end]
            added = current[start + shift : end + shift + delta]
            count += removed.count("\n") + added.count("\n") or 1
            shift += delta
        if count:
            lines += count
            changed.append(path)
    return WorkingDiff(lines=lines, files=tuple(sorted(changed)))
