"""Carrying an edit over the user's typing: rebase when the changes are apart, refuse when they meet.

An edit is computed against the text the model saw (`base`). By the time it arrives, the user may have
typed (`current`). The user's changes are found line by line (`routing.change_in_progress.user_changes`:
common prefix and suffix first, so a keystroke in a large file costs little), and each edit range is
shifted by what the user inserted or removed before it. If a user change touches or sits inside an edit's
range, nothing is applied and the refusal says where: the user's newer text is never overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from tandem.completion.edit.file_edits import EditConflict, FileEdit, edits_by_path, line_col
from tandem.completion.routing.change_in_progress import user_changes


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
