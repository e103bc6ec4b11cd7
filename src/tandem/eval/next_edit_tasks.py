"""Next-edit tasks from a git history: commits that make several separate changes to one file.

For every non-merge commit (newest first) and every source file it modifies, the file's line diff (parent
-> commit) is split into hunks (changes separated by at least one unchanged line). A file qualifies when it
has 2 to `max_hunks` hunks, each small enough to type (at most `max_hunk_lines` lines on either side and
`max_hunk_chars` characters of new text), all within `max_span_lines` lines of each other (next edits are
predicted near the cursor; a change a screen away is another task). The first hunk is the change the user
makes; the others are the truth the next edits are measured against.

Only `git` (a subprocess) is used; nothing is checked out and the repository is not modified.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from tandem.eval.code_label import is_source
from tandem.eval.history import git

# Larger files are skipped (a replay opens the whole file).
MAX_FILE_BYTES = 200_000


@dataclass(frozen=True, kw_only=True)
class NextEditTask:
    commit: str
    subject: str
    path: str
    before: str
    after: str
    hunks: int


@dataclass(frozen=True, kw_only=True)
class TaskLimits:
    min_hunks: int = 2
    max_hunks: int = 6
    max_hunk_lines: int = 6
    max_hunk_chars: int = 240
    max_span_lines: int = 40


def line_hunks(before: str, after: str) -> list[tuple[int, int, int, int]]:
    """(i1, i2, j1, j2) of each change between the texts' lines, in order."""
    old, new = before.split("\n"), after.split("\n")
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def qualifies(before: str, after: str, limits: TaskLimits) -> int:
    """The number of hunks if the file change makes a task, else 0."""
    found = line_hunks(before, after)
    if not max(2, limits.min_hunks) <= len(found) <= limits.max_hunks:
        return 0
    new = after.split("\n")
    for i1, i2, j1, j2 in found:
        if max(i2 - i1, j2 - j1) > limits.max_hunk_lines or len("\n".join(new[j1:j2])) > limits.max_hunk_chars:
            return 0
    if found[-1][1] - found[0][0] > limits.max_span_lines:
        return 0
    return len(found)


def next_edit_tasks(
    repo: Path, *, limit: int, scan: int = 2000, limits: TaskLimits | None = None
) -> tuple[list[NextEditTask], int]:
    """Up to `limit` tasks from the newest `scan` commits, and how many commits were looked at."""
    limits = limits or TaskLimits()
    log = git(repo, "log", "--no-merges", f"-n{scan}", "--format=%H%x00%P%x00%s").decode("utf-8", "replace")
    tasks: list[NextEditTask] = []
    looked = 0
    for line in log.splitlines():
        commit, parents, subject = [*line.split("\0"), "", ""][:3]
        if len(parents.split()) != 1:
            continue
        looked += 1
        out = git(repo, "diff", "--numstat", "-z", "--no-renames", "--diff-filter=M", parents, commit)
        paths = [
            entry.split("\t", 2)[2] for entry in out.decode("utf-8", "replace").split("\0") if entry.count("\t") == 2
        ]
        for path in paths:
            if not is_source(path):
                continue
            before_bytes = git(repo, "show", f"{parents}:{path}")
            after_bytes = git(repo, "show", f"{commit}:{path}")
            if max(len(before_bytes), len(after_bytes)) > MAX_FILE_BYTES or b"\0" in before_bytes[:8192]:
                continue
            try:
                before, after = before_bytes.decode("utf-8"), after_bytes.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if "\r" in before or "\r" in after:
                continue
            count = qualifies(before, after, limits)
            if count:
                tasks.append(
                    NextEditTask(commit=commit, subject=subject, path=path, before=before, after=after, hunks=count)
                )
                break  # one file per commit
        if len(tasks) >= limit:
            break
    return tasks, looked
