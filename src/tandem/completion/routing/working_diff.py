"""The user's change in progress, for the router: lines changed and the files they are in.

The reference is git's HEAD where the workspace is a git repository (so a refactor saved file by file
still counts as one change in progress), otherwise the text on disk, which is the text at the last
save. Nothing is kept per keystroke: this runs once per edit request, in a worker thread, and costs one
`git diff --numstat` plus a diff of each open document that differs from its saved text.

    reference      saved changes                    unsaved changes (open documents)
    git HEAD       `git diff HEAD --numstat`        buffer vs `git show HEAD:path` (disk if untracked)
    no git         none                             buffer vs disk

git obeys the repository's own `.git/config`, which a repository that arrives as an archive or a shared
folder (not a fresh clone) brings along: `core.fsmonitor`, a `filter.*.clean` or a `diff.*.textconv`
command runs on `git diff`. Such a repository is read without git (its saved changes are not counted).
"""

from __future__ import annotations

import logging
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from tandem.completion.routing.router import WorkingDiff, working_diff_of

log = logging.getLogger(__name__)

_GIT_TIMEOUT_S = 10.0
# Repository config keys that make git run a command (or read config from elsewhere) during diff or show.
_RUNS_COMMANDS = re.compile(
    r"^(core\.(fsmonitor|hookspath|sshcommand|gitproxy|askpass|pager|editor)|filter\.|diff\.|merge\.|include"
    r"|credential\.|pager\.|gpg\.|uploadpack\.|protocol\.)",
    re.IGNORECASE,
)


def _git(root: Path, *args: str) -> bytes | None:
    """git's stdout, or None when git is missing, fails, or takes too long (the router then goes without)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "-c", "core.fsmonitor=false", *args],
            capture_output=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        log.debug("git %s: %s", args[0], error)
        return None
    return done.stdout if done.returncode == 0 else None


def commands_in_config(root: Path) -> list[str]:
    """The repository's own config keys that would make git run a command (reading config runs nothing)."""
    out = _git(root, "config", "--local", "--includes", "--name-only", "--list")
    keys = out.decode("utf-8", "replace").split() if out is not None else []
    return [key for key in keys if _RUNS_COMMANDS.match(key)]


def git_toplevel(root: Path) -> Path | None:
    """The repository's top directory if `root` is inside a git work tree with a HEAD commit, and its own
    config makes git run nothing."""
    out = _git(root, "rev-parse", "--show-toplevel", "--verify", "HEAD")
    if out is None:
        return None
    risky = commands_in_config(root)
    if risky:
        log.info("not running git in %s: its config names commands (%s)", root, ", ".join(risky[:3]))
        return None
    first = out.decode("utf-8", "replace").splitlines()
    return Path(first[0]) if first else None


def saved_changes(top: Path) -> dict[str, int]:
    """{path relative to `top`: lines added plus removed} between HEAD and the files on disk."""
    out = _git(top, "diff", "HEAD", "--numstat", "-z", "--no-renames")
    changes: dict[str, int] = {}
    if out is None:
        return changes
    for entry in out.decode("utf-8", "replace").split("\0"):
        parts = entry.split("\t", 2)
        if len(parts) != 3:
            continue
        added, deleted, path = parts
        changes[path] = (int(added) if added.isdigit() else 1) + (int(deleted) if deleted.isdigit() else 0)
    return changes


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def working_diff(root: Path | None, open_documents: Mapping[str, str]) -> WorkingDiff:
    """The change in progress in the workspace at `root`, given the open documents' current texts
    ({absolute path: text}). Paths in the result are relative to the repository (or `root`)."""
    if root is None:
        return working_diff_of({})
    top = git_toplevel(root)
    base = top or root
    counts: dict[str, int] = dict(saved_changes(top)) if top is not None else {}
    for absolute, current in open_documents.items():
        path = Path(absolute)
        try:
            relative = path.relative_to(base).as_posix()
        except ValueError:
            continue  # outside the workspace
        on_disk = _read(path)
        if on_disk == current:
            continue  # saved: already counted by git, or unchanged
        reference = on_disk
        if top is not None:
            shown = _git(top, "show", f"HEAD:{relative}")
            reference = shown.decode("utf-8", "replace") if shown is not None else on_disk
        diff = working_diff_of({relative: (reference or "", current)})
        if diff.lines:
            counts[relative] = diff.lines
        else:
            counts.pop(relative, None)
    return WorkingDiff(lines=sum(counts.values()), files=tuple(sorted(counts)))
