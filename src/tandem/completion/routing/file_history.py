"""The selected file's own change history, for the router: how often it changed together with other code.

An edit is hard when it needs more than one source file (or many lines of one), and a file that has always
changed with others is likely to again. So the router is given, from the workspace's git history, the
file's last commits (at most `MAX_COMMITS`, merges left out, mass changes over `HUGE_FILES` files or
`HUGE_LINES` lines left out as the history scan leaves them out): how many of them also changed another
code file, how many changed more than 20 lines of code, and which code files changed with it. "Code" is
`change_roles.code_files`, the notion of source the label about code uses (tests count only in a commit that
changes no source file). The evaluation reads the history before each task's commit (`rev` = its parent),
the server before HEAD: the answer is never in it. The same is read for the selected lines alone (their
last `MAX_LINE_COMMITS` commits, `git log -L`): a file that changes with everything may have functions that
do not. And the repository's last commits (`read_past_commits`, at most `MAX_PAST_COMMITS`, mass changes left
out as above), each only as its subject line and whether it was hard by the label: the router compares an
instruction with those subjects (`completion.routing.similar_commits`).

A repository is the user's, but it may be hostile: git obeys the repository's own `.git/config`. The
history is read with `git log` through `machine.git.log`, which runs it so that no program the repository
names can start (see `tandem.completion.machine.git`). The read is bounded: `MAX_COMMITS` commits,
`MAX_OUTPUT_BYTES` of output (the commits read whole before the cut are kept), `TIMEOUT_S` seconds per git
call, and it runs in a worker thread. No git, no repository, a file git does not know, a timeout: the
history is absent (None), not an error.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tandem.completion.machine import git
from tandem.completion.machine.containment import real_path
from tandem.completion.routing.change_roles import code_files
from tandem.completion.routing.working_diff import git_toplevel

log = logging.getLogger(__name__)

MAX_COMMITS = 50
# The selected lines' history: their last commits (`git log -L`, which follows the lines through the file's
# history, and costs more than the file's).
MAX_LINE_COMMITS = 20
MAX_OUTPUT_BYTES = 2_000_000
# git walks the whole history for a file changed rarely: ~10 ms per 1,000 commits here, so a repository of
# over ~150,000 commits may go without the history of such a file rather than hold the edit up.
TIMEOUT_S = 1.5
# A commit of more files or changed lines than this is a mass change (vendoring, reformatting), as the
# history scan of the evaluation counts it: it says nothing about one edit.
HUGE_FILES = 40
HUGE_LINES = 1500
# More changed lines of code than this in one commit make it large (the label's threshold).
LARGE_LINES = 20
# The repository's last commits compared with an instruction: ~0.1-0.2 s of git for 300 here.
MAX_PAST_COMMITS = 300


@dataclass(frozen=True, kw_only=True)
class Change:
    """One file of a past commit."""

    path: str
    added: int
    deleted: int
    binary: bool = False


@dataclass(frozen=True, kw_only=True)
class FileHistory:
    """A file's last commits, as counts (no text of any file)."""

    path: str
    # Commits read (mass changes left out).
    commits: int = 0
    # Of them: the commits that changed another code file too ...
    co_changed: int = 0
    # ... and those that changed more than `LARGE_LINES` lines of code.
    large: int = 0
    # Distinct other code files changed in those commits, and the most frequent few (for a reason).
    co_files: int = 0
    partners: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class PastCommit:
    """One of the repository's past commits: its subject line, and whether it was hard by the label about
    code (more than one code file, or more than `LARGE_LINES` changed lines of code)."""

    subject: str
    hard: bool


def _mass_change(changes: list[Change]) -> bool:
    return len(changes) > HUGE_FILES or sum(c.added + c.deleted for c in changes) > HUGE_LINES


def is_hard(changes: list[Change]) -> bool:
    """The label about code for one commit's files (`tandem.eval.code_label.code_hard`)."""
    code = code_files(changes)
    return len(code) > 1 or sum(c.added + c.deleted for c in code) > LARGE_LINES


def summarise(path: str, commits: list[list[Change]]) -> FileHistory:
    """The history of `path` from its past commits (each a list of the files it changed)."""
    read = co_changed = large = 0
    partners: Counter[str] = Counter()
    for changes in commits:
        if not changes or _mass_change(changes):
            continue
        read += 1
        code = code_files(changes)
        others = {c.path for c in code if c.path != path}
        co_changed += bool(others)
        large += sum(c.added + c.deleted for c in code) > LARGE_LINES
        partners.update(others)
    return FileHistory(
        path=path,
        commits=read,
        co_changed=co_changed,
        large=large,
        co_files=len(partners),
        partners=tuple(p for p, _ in partners.most_common(3)),
    )


def parse_log(out: bytes, *, complete: bool = True) -> list[list[Change]]:
    """The commits of `git log --numstat -z --no-renames --format=%x01%H` output. Cut short (`complete`
    False), the last commit, perhaps read in part, is dropped."""
    return [changes for _, changes in _parse(out, complete=complete)]


def parse_subjects_log(out: bytes, *, complete: bool = True) -> list[tuple[str, list[Change]]]:
    """(subject, files) of each commit of `git log --numstat -z --no-renames --format=%x01%H%x02%s` output,
    cut short as `parse_log`."""
    return [(header.partition("\x02")[2], changes) for header, changes in _parse(out, complete=complete)]


def _parse(out: bytes, *, complete: bool) -> list[tuple[str, list[Change]]]:
    commits: list[tuple[str, list[Change]]] = []
    chunks = out.decode("utf-8", "replace").split("\x01")[1:]
    if not complete:
        chunks = chunks[:-1]
    for chunk in chunks:
        header, *fields = chunk.split("\0")  # the header: the commit's hash (and subject)
        changes: list[Change] = []
        for entry in fields:
            parts = entry.lstrip("\n").split("\t", 2)
            if len(parts) != 3 or not parts[2]:
                continue
            added, deleted, changed = parts
            binary = not (added.isdigit() and deleted.isdigit())
            changes.append(Change(path=changed, added=0 if binary else int(added),
                                  deleted=0 if binary else int(deleted), binary=binary))  # fmt: skip
        commits.append((header, changes))
    return commits


def read_history(
    top: Path,
    path: str,
    *,
    rev: str = "HEAD",
    max_commits: int = MAX_COMMITS,
    timeout: float = TIMEOUT_S,
    max_output: int = MAX_OUTPUT_BYTES,
) -> FileHistory | None:
    """The history of `path` (relative to the repository's top `top`) up to and including `rev`. Runs one
    guarded `git log` (see the module docstring); None when git cannot answer."""
    if not path or rev.startswith("-"):
        return None
    query = git.LogQuery(rev=rev, path=path, max_count=max_commits, full_diff=True)
    done = git.log(query, top, timeout_s=timeout, limit=max_output)
    if done is None:
        return None
    out, complete = done
    return summarise(path, parse_log(out, complete=complete))


def read_lines_history(
    top: Path,
    path: str,
    first_line: int,
    end_line: int,
    *,
    rev: str = "HEAD",
    max_commits: int = MAX_LINE_COMMITS,
    timeout: float = TIMEOUT_S,
    max_output: int = MAX_OUTPUT_BYTES,
) -> FileHistory | None:
    """The history of lines [first_line, end_line) (0-based) of `path` as it is at `rev`: the last commits
    that changed them (`git log -L`, no patch shown), then those commits' files (`git log --no-walk`), both
    guarded like `read_history`. An empty range has no history (0 commits); None when git cannot answer
    (also when the range is past the file's end at `rev`)."""
    if not path or rev.startswith("-"):
        return None
    if end_line <= first_line:
        return FileHistory(path=path)
    lines = git.LogQuery(rev=rev, path=path, lines=(first_line, end_line), max_count=max_commits, no_merges=False)
    done = git.log(lines, top, timeout_s=timeout, limit=max_output)
    if done is None:
        return None
    shas = [c.strip("\0\n").split("\n", 1)[0] for c in done[0].decode("ascii", "replace").split("\x01")[1:]]
    shas = [sha for sha in shas if len(sha) >= 40 and all(ch in "0123456789abcdef" for ch in sha)]
    if not shas:
        return FileHistory(path=path)
    files = git.LogQuery(commits=tuple(shas), no_merges=False)
    done = git.log(files, top, timeout_s=timeout, limit=max_output)
    if done is None:
        return None
    return summarise(path, parse_log(done[0], complete=done[1]))


def read_past_commits(
    top: Path,
    *,
    rev: str = "HEAD",
    max_commits: int = MAX_PAST_COMMITS,
    timeout: float = TIMEOUT_S,
    max_output: int = MAX_OUTPUT_BYTES,
) -> tuple[PastCommit, ...] | None:
    """The repository's last commits up to and including `rev`, newest first, merges and mass changes left
    out: one guarded `git log` (see the module docstring); None when git cannot answer."""
    if rev.startswith("-"):
        return None
    query = git.LogQuery(rev=rev, max_count=max_commits, subject=True)
    done = git.log(query, top, timeout_s=timeout, limit=max_output)
    if done is None:
        return None
    return tuple(
        PastCommit(subject=subject, hard=is_hard(changes))
        for subject, changes in parse_subjects_log(done[0], complete=done[1])
        if changes and not _mass_change(changes)
    )


def _relative(root: Path, top: Path, path: str) -> str | None:
    try:
        return real_path(root / path).relative_to(real_path(top)).as_posix()
    except (OSError, ValueError):
        return None


def file_history(root: Path | None, path: str) -> FileHistory | None:
    """The history before HEAD of the workspace file `path` (relative to `root`), for the router; None when
    the workspace is no git repository, or git cannot
    answer. Blocking: call it in a worker thread."""
    return histories(root, path, 0, 0)[0]


def histories(
    root: Path | None, path: str, first_line: int, end_line: int
) -> tuple[FileHistory | None, FileHistory | None]:
    """The histories before HEAD of the workspace file `path` and of its lines [first_line, end_line) (the
    selection), for the router; each None as for `file_history`. Blocking: call it in a worker thread."""
    if root is None or not path:
        return None, None
    top = git_toplevel(root)
    relative = _relative(root, top, path) if top is not None else None
    if top is None or relative is None:
        return None, None
    return read_history(top, relative), read_lines_history(top, relative, first_line, end_line)


def selected_lines_history(root: Path | None, path: str, first_line: int, end_line: int) -> FileHistory | None:
    """The history before HEAD of lines [first_line, end_line) of the workspace file `path` alone (what
    `histories` reads second), for the router; None as for `file_history`. Blocking: call it in a worker
    thread."""
    if root is None or not path:
        return None
    top = git_toplevel(root)
    relative = _relative(root, top, path) if top is not None else None
    if top is None or relative is None:
        return None
    return read_lines_history(top, relative, first_line, end_line)


def past_commits(root: Path | None) -> tuple[PastCommit, ...] | None:
    """The last commits before HEAD of the workspace's repository, for the router; None as for
    `file_history`. Blocking: call it in a worker thread."""
    top = git_toplevel(root) if root is not None else None
    return read_past_commits(top) if top is not None else None
