"""Edit tasks from a git history: each commit is an instruction with a known right answer.

For every non-merge commit (newest first): the instruction is the commit's subject line, without the
pull-request number a forge appends ("Fix X (#1234)": a user's instruction names none, and in a history
where every subject carries one it is a word of every instruction); the primary
file is the source file with the most changed lines; the selection is the region of the primary file,
in the parent's version, that the commit changed (from its first to its last changed line; an empty
range at the insertion point when the commit only added lines); the truth is the commit's whole diff
(lines added plus removed, and every file it touched, source or not).

Skipped, and counted by reason: root commits, commits that change only binary files, commits that
change no source file, and huge ones (vendored code, generated files, mass reformatting) whose
truth says little about an editor's edits.

Only `git` (a subprocess) is used; nothing is checked out and the repository is not modified. git runs as
the product's door runs it (`completion.machine.git`: its guard options, its fixed environment, outside the
repository), and only commands that read objects, each with the options that keep the repository's
programs (diff drivers, textconv, signatures) from running: a history under evaluation is someone else's.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tandem.completion.edit.file_edits import line_offset
from tandem.completion.machine import git as machine_git
from tandem.eval.code_label import code_hard, file_role
from tandem.eval.code_label import is_source as is_source  # kept importable from here
from tandem.eval.user_selection import code_anchor, enclosing_block


class GitError(RuntimeError):
    """git failed, or `repo` is not a git repository."""


@dataclass(frozen=True, kw_only=True)
class FileChange:
    """One file of a commit's diff (a rename is listed under its new path)."""

    path: str
    added: int
    deleted: int
    binary: bool = False
    old_path: str = ""


@dataclass(frozen=True, kw_only=True)
class EditTask:
    """One commit as an edit task: the instruction and selection a user would give, and the truth."""

    commit: str
    parent: str
    instruction: str
    path: str
    # The primary file in the parent ("" when the commit creates it) and after the commit.
    parent_text: str
    truth_text: str
    # The selection: 0-based lines [first_line, end_line) and offsets [start, end) of parent_text.
    first_line: int
    end_line: int
    start: int
    end: int
    changes: tuple[FileChange, ...]
    # The parent's line a user would be working at (`user_selection.code_anchor`); None: the first changed.
    code_anchor: int | None = None

    @property
    def selection(self) -> str:
        return self.parent_text[self.start : self.end]

    @property
    def changed_lines(self) -> int:
        return sum(c.added + c.deleted for c in self.changes)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.changes)

    def is_hard(self, *, max_lines: int = 20) -> bool:
        """The old label: more than one file of any kind, or more than `max_lines` changed lines."""
        return len(self.changes) > 1 or self.changed_lines > max_lines

    def is_code_hard(self, *, max_lines: int = 20, count_tests: bool = False) -> bool:
        """The label about code (`code_label.code_hard`): more than one source file, or more than
        `max_lines` changed lines of source."""
        return code_hard(self.changes, max_lines=max_lines, count_tests=count_tests)

    @property
    def user_selection(self) -> tuple[int, int]:
        """Offsets [start, end) of the selection a user would make for this edit: the innermost function
        or block enclosing the changed code they would be working at (`code_anchor`; the first changed
        line without one), which does not know how far the change goes (`user_selection`)."""
        anchor = self.first_line if self.code_anchor is None else self.code_anchor
        first, end = enclosing_block(self.parent_text, anchor)
        return line_offset(self.parent_text, first), line_offset(self.parent_text, end)

    def selected_lines(self, kind: str = "changed") -> tuple[int, int]:
        """Lines [first, end) of `parent_text` that a kind of selection selects: "changed" (the changed
        region), "user" (`user_selection`) or "first" (`user_selection_at_first_change`)."""
        if kind == "changed":
            return self.first_line, self.end_line
        start, end = self.selected_span(kind)
        return self.parent_text.count("\n", 0, start), self.parent_text.count("\n", 0, end)

    def selected_span(self, kind: str = "changed") -> tuple[int, int]:
        """Offsets [start, end) of `parent_text` that a kind of selection selects (`selected_lines`)."""
        if kind == "changed":
            return self.start, self.end
        return self.user_selection if kind == "user" else self.user_selection_at_first_change

    def selected_text(self, kind: str = "changed") -> str:
        """The text a kind of selection selects (`selected_lines`)."""
        start, end = self.selected_span(kind)
        return self.parent_text[start:end]

    @property
    def user_selection_at_first_change(self) -> tuple[int, int]:
        """Offsets [start, end) of the function or block enclosing the first changed line: the user's
        selection before `code_anchor` (often the import paragraph), kept to compare figures with."""
        first, end = enclosing_block(self.parent_text, self.first_line)
        return line_offset(self.parent_text, first), line_offset(self.parent_text, end)


@dataclass(frozen=True, kw_only=True)
class HistoryScan:
    """The tasks found, the commits looked at, and how many were skipped for which reason."""

    tasks: tuple[EditTask, ...]
    commits_seen: int
    skipped: Mapping[str, int] = field(default_factory=dict)


# The commands the evaluation runs, each with what switches off the programs a repository can name for it
# (external diff and drivers' `command`, textconv, gpg for signatures). None of them reads the working tree,
# so no filter or fsmonitor starts either.
_COMMANDS: dict[str, tuple[str, ...]] = {
    "log": ("--no-ext-diff", "--no-textconv", "--no-show-signature"),
    "diff": ("--no-ext-diff", "--no-textconv"),
    "show": ("--no-ext-diff", "--no-textconv", "--no-show-signature"),
    "ls-tree": (),
    "cat-file": (),
}


def git(repo: Path, *args: str, input_bytes: bytes | None = None) -> bytes:
    """stdout of git `args` on the repository at `repo`, run with the door's guard and environment
    (`completion.machine.git`); raises `GitError` with git's own message on failure, and for a command
    not in `_COMMANDS`."""
    options = _COMMANDS.get(args[0]) if args else None
    if options is None:
        raise GitError(f"git {args[0] if args else ''}: not a command the evaluation runs")
    # git runs outside the repository (`-C` names it), so a relative `repo` is made absolute here.
    argv = machine_git.command(Path(os.path.abspath(repo)), [args[0], *options, *args[1:]])
    if argv is None:
        raise GitError("cannot run git: no git in the absolute entries of PATH")
    try:
        done = subprocess.run(
            argv,
            input=input_bytes or b"",
            capture_output=True,
            check=False,
            env=machine_git.environment(),
            cwd=machine_git.NEUTRAL_DIRECTORY,
        )
    except OSError as error:
        raise GitError(f"cannot run git: {error}") from error
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]} failed: {message[-1] if message else done.returncode}")
    return done.stdout


def _numstat(repo: Path, parent: str, commit: str) -> list[FileChange]:
    out = git(repo, "diff", "--numstat", "-z", "-M", parent, commit).decode("utf-8", "replace")
    fields = out.split("\0")
    changes: list[FileChange] = []
    i = 0
    while i < len(fields) and fields[i]:
        added, deleted, path = fields[i].split("\t", 2)
        old_path = ""
        if not path:  # a rename: the old and new paths follow as their own fields
            old_path, path = fields[i + 1], fields[i + 2]
            i += 2
        binary = added == "-"
        changes.append(
            FileChange(
                path=path,
                added=0 if binary else int(added),
                deleted=0 if binary else int(deleted),
                binary=binary,
                old_path=old_path,
            )
        )
        i += 1
    return changes


def _span(field: str) -> tuple[int, int]:
    """Lines [first, end) (0-based) of a hunk header's "N,K" side; "N,0" (no line on this side) is the
    empty range after line N."""
    start_s, _, count_s = field.partition(",")
    start, count = int(start_s), int(count_s) if count_s else 1
    return (start, start) if count == 0 else (start - 1, start - 1 + count)


def _hunk_ranges(repo: Path, parent: str, commit: str, change: FileChange) -> list[tuple[int, int, int, int]]:
    """Each hunk of one file's diff as its line ranges (0-based, end exclusive) in the parent and in the
    commit: (first, end, first, end)."""
    paths = [change.old_path, change.path] if change.old_path else [change.path]
    out = git(repo, "diff", "-U0", "--no-color", "-M", parent, commit, "--", *paths)
    ranges: list[tuple[int, int, int, int]] = []
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("@@ -"):
            old, new = line[4:].split(" ", 2)[:2]
            ranges.append((*_span(old), *_span(new.lstrip("+"))))
    return ranges


# A trailing pull-request reference, as GitHub's squash merges write it: "Fix X (#1234)".
_PULL_REQUEST = re.compile(r"\s*\(#\d+\)\s*$")


def instruction_of(subject: str) -> str:
    """The instruction a user would have given for a commit with this subject line."""
    return _PULL_REQUEST.sub("", subject.strip()) or subject.strip()


def _show(repo: Path, rev: str, path: str) -> str:
    return git(repo, "show", f"{rev}:{path}").decode("utf-8", "replace")


def scan_history(repo: Path, *, limit: int = 200, max_changed_lines: int = 1500, max_files: int = 40) -> HistoryScan:
    """Up to `limit` edit tasks from `repo`'s history, newest first (at most 4 x `limit` commits are
    examined). Commits over `max_changed_lines` or `max_files` count as huge and are skipped."""
    log = git(repo, "log", "--no-merges", f"-n{max(1, limit) * 4}", "--format=%H%x1f%P%x1f%s%x1e")
    skipped: Counter[str] = Counter()
    tasks: list[EditTask] = []
    seen = 0
    for record in log.decode("utf-8", "replace").split("\x1e"):
        if len(tasks) >= limit or not record.strip():
            continue
        commit, parents, subject = record.strip("\n").split("\x1f", 2)
        seen += 1
        task, why = _task(repo, commit, parents.split(), instruction_of(subject), max_changed_lines, max_files)
        if task is None:
            skipped[why] += 1
        else:
            tasks.append(task)
    return HistoryScan(tasks=tuple(tasks), commits_seen=seen, skipped=dict(skipped))


def edit_tasks(repo: Path, *, limit: int = 200) -> list[EditTask]:
    """The tasks of `scan_history` (which also says what was skipped and why)."""
    return list(scan_history(repo, limit=limit).tasks)


def _task(
    repo: Path, commit: str, parents: list[str], subject: str, max_changed_lines: int, max_files: int
) -> tuple[EditTask | None, str]:
    if not parents:
        return None, "root commit (no parent)"
    parent = parents[0]
    changes = _numstat(repo, parent, commit)
    if not changes:
        return None, "empty commit"
    if all(c.binary for c in changes):
        return None, "binary files only"
    total = sum(c.added + c.deleted for c in changes)
    if total > max_changed_lines or len(changes) > max_files:
        return None, f"huge (over {max_changed_lines} lines or {max_files} files)"
    sources = [c for c in changes if is_source(c.path) and not c.binary]
    if not sources:
        return None, "no source file changed"
    # The file a user would select in: code before tests, docs and configuration, then the most changed.
    primary = max(sources, key=lambda c: (file_role(c.path) == "source", c.added + c.deleted, c.path))
    old_path = primary.old_path or primary.path
    ranges = _hunk_ranges(repo, parent, commit, primary)
    created = primary.deleted == 0 and [r[:2] for r in ranges] == [(0, 0)]
    try:
        parent_text = "" if created else _show(repo, parent, old_path)
    except GitError:
        parent_text = ""  # added in this commit
    try:
        truth_text = _show(repo, commit, primary.path)
    except GitError:
        truth_text = ""  # deleted by this commit
    first = min((r[0] for r in ranges), default=0)
    end = max((r[1] for r in ranges), default=0)
    if not parent_text:
        first = end = 0
    return (
        EditTask(
            commit=commit,
            parent=parent,
            instruction=subject,
            path=primary.path,
            parent_text=parent_text,
            truth_text=truth_text,
            first_line=first,
            end_line=end,
            start=line_offset(parent_text, first),
            end=line_offset(parent_text, end),
            changes=tuple(changes),
            code_anchor=code_anchor(parent_text, truth_text, ranges) if parent_text else None,
        ),
        "",
    )


def tree_blobs(repo: Path, rev: str, *, max_files: int | None = None, max_file_bytes: int = 200_000) -> dict[str, str]:
    """{path: blob id} of the source files in `rev`'s tree, skipping files over `max_file_bytes` and
    keeping at most `max_files` (in path order) when given."""
    out = git(repo, "ls-tree", "-r", "-l", "-z", rev).decode("utf-8", "replace")
    blobs: dict[str, str] = {}
    for entry in out.split("\0"):
        if not entry or (max_files is not None and len(blobs) >= max_files):
            continue
        meta, _, path = entry.partition("\t")
        parts = meta.split()
        if len(parts) != 4 or parts[1] != "blob" or not is_source(path):
            continue
        if parts[3] == "-" or int(parts[3]) > max_file_bytes:
            continue
        blobs[path] = parts[2]
    return blobs


def read_blobs(repo: Path, blob_ids: list[str]) -> dict[str, str]:
    """{blob id: text} for `blob_ids`, read with one `git cat-file --batch`."""
    if not blob_ids:
        return {}
    out = git(repo, "cat-file", "--batch", input_bytes="".join(b + "\n" for b in blob_ids).encode())
    texts: dict[str, str] = {}
    at = 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        header = out[at:header_end].decode().split()
        if len(header) < 3 or header[1] == "missing":
            at = header_end + 1
            continue
        size = int(header[2])
        body = out[header_end + 1 : header_end + 1 + size]
        texts[header[0]] = body.decode("utf-8", "replace")
        at = header_end + 1 + size + 1
    return texts
