"""Listing the workspace: an iterative walk, bounded in depth and in entries, that says what it did not see.

A repository can hold a directory tree 1,000 levels deep (a recursive walk dies there, and the ignore
files below are never read), millions of entries, directories that cannot be listed. Whatever stops the
walk, the directories it did not list are named in `Walk.unfinished`, so that the caller can refuse
everything under them (fail closed: nothing under a directory whose ignore files were not read goes to a
model).

Links to directories are not followed (a link is a file entry here, judged where it leads by the reader),
and nothing is read: `walk` lists names, `files.read_file` reads.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# Deeper directories are not listed (everything under them is refused).
MAX_DEPTH = 64
# Entries (files and directories) listed at most; the directories not yet listed then are unfinished.
MAX_ENTRIES = 500_000


@dataclass
class Walk:
    """What a walk did not finish: {relative directory: why} (everything under each is unseen)."""

    unfinished: dict[str, str] = field(default_factory=dict)
    entries: int = 0


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory else name


def walk(
    root: pathlib.Path,
    record: Walk,
    *,
    descend: Callable[[str], bool],
    max_depth: int = MAX_DEPTH,
    max_entries: int = MAX_ENTRIES,
) -> Iterator[tuple[str, list[str]]]:
    """(relative directory, names of its non-directory entries, sorted) for each directory under `root`,
    each before the directories under it, entering only the subdirectories `descend(relative subdirectory)`
    allows (asked after the directory's own entry was yielded, so that its ignore files are read first)."""
    pending: list[tuple[str, int]] = [("", 0)]
    while pending:
        directory, depth = pending.pop()
        if record.entries >= max_entries:
            record.unfinished[directory] = f"over {max_entries} entries"
            continue
        if depth > max_depth:
            record.unfinished[directory] = f"deeper than {max_depth} levels"
            continue
        files: list[str] = []
        subdirectories: list[str] = []
        try:
            with os.scandir(root / directory if directory else root) as entries:
                for entry in entries:
                    record.entries += 1
                    if record.entries > max_entries:
                        break
                    try:
                        is_directory = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_directory = False
                    (subdirectories if is_directory else files).append(entry.name)
        except OSError as error:
            record.unfinished[directory] = f"cannot be listed ({error.strerror})"
            continue
        if record.entries > max_entries:
            record.unfinished[directory] = f"over {max_entries} entries"
            continue
        yield directory, sorted(files)
        for name in sorted(subdirectories, reverse=True):
            relative = _join(directory, name)
            if descend(relative):
                pending.append((relative, depth + 1))
