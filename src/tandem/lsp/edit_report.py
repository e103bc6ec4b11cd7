"""What the user reads when an edit ends: which model made it, which files it changed, by how much.

One line, composed here for every editor (the server shows it with window/showMessage and returns it as
the `message` of `tandem.edit`'s answer), e.g.

    tandem: fast model (sim-spark) edited textwrap.py (+3 -1 lines)
    tandem: accurate model (sim-codex) edited 2 files (+6 -4 lines): models.py (+3 -2), views.py (+3 -2, not open)

A file the edit changed that is not open in the editor is named with "not open", so an edit that
touches only such a file is never silent.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from tandem.completion.edit.file_edits import FileEdit


@dataclass(frozen=True, kw_only=True)
class FileChange:
    path: str
    added: int
    removed: int
    created: bool = False
    opened: bool = True

    def words(self, unit: str = "") -> str:
        parts = [f"+{self.added} -{self.removed}{unit}"]
        if self.created:
            parts.append("new file")
        elif not self.opened:
            parts.append("not open")
        return ", ".join(parts)


def changes(edits: Collection[FileEdit], current: Mapping[str, str], open_paths: Collection[str]) -> list[FileChange]:
    """Lines added and removed per file, in path order."""
    totals: dict[str, list[int]] = {}
    created: set[str] = set()
    for edit in edits:
        old = current.get(edit.path, "")[edit.start : edit.end].splitlines()
        new = edit.new_text.splitlines()
        added = removed = 0
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes():
            if tag != "equal":
                removed += i2 - i1
                added += j2 - j1
        total = totals.setdefault(edit.path, [0, 0])
        total[0] += added
        total[1] += removed
        if edit.creates:
            created.add(edit.path)
    return [
        FileChange(path=path, added=a, removed=r, created=path in created, opened=path in open_paths)
        for path, (a, r) in sorted(totals.items())
    ]


def applied_message(tier: str, model: str, files: list[FileChange], *, rebased: bool = False) -> str:
    """The one line for an applied edit."""
    who = f"{tier} model ({model})" if model else f"{tier} model"
    added, removed = sum(f.added for f in files), sum(f.removed for f in files)
    if len(files) == 1:
        [only] = files
        what = f"{only.path} ({only.words(' lines')})"
    else:
        what = f"{len(files)} files (+{added} -{removed} lines): " + ", ".join(
            f"{f.path} ({f.words()})" for f in files
        )
    after = "; moved around what you typed meanwhile" if rebased else ""
    return f"tandem: {who} edited {what}{after}"
