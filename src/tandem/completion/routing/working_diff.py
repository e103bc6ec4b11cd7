"""The user's change in progress, for the router: lines changed and the files they are in.

The reference is git's HEAD where the workspace is a git repository (so a refactor saved file by file
still counts as one change in progress), otherwise the text on disk, which is the text at the last
save. Nothing is kept per keystroke: this runs once per edit request, in a worker thread.

    reference      saved changes                              unsaved changes (open documents)
    git HEAD       HEAD's blob vs the file on disk            buffer vs HEAD's blob (disk if untracked)
    no git         none                                       buffer vs disk

git never reads the working tree here (`git diff` would, through the repository's clean filters and its
fsmonitor: programs the repository names). HEAD's blobs come from `machine.git` (`ls-tree`, `cat-file`),
the files on disk from `machine.files`, and the diff is computed in-process (`change_in_progress.working_diff_of`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

from tandem.completion.machine import git, worktree
from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import read_text
from tandem.completion.routing.change_in_progress import WorkingDiff, working_diff_of

log = logging.getLogger(__name__)

# Files larger than this are not diffed.
MAX_DIFFED_BYTES = worktree.MAX_COMPARED_BYTES


def git_toplevel(root: Path) -> Path | None:
    """The repository's top directory if `root` is inside a git work tree with a HEAD commit."""
    return git.toplevel(root)


def _text(blob: bytes | None) -> str | None:
    if blob is None or worktree.is_lfs_pointer(blob):
        return None
    return blob.decode("utf-8", "replace")


def working_diff(root: Path | None, open_documents: Mapping[str, str]) -> WorkingDiff:
    """The change in progress in the workspace at `root`, given the open documents' current texts
    ({absolute path: text}). Paths in the result are relative to the repository (or `root`)."""
    if root is None:
        return working_diff_of({})
    folders = Folders([root])
    top = git.toplevel(root)
    head = git.head_files(top) if top is not None else None
    base = top if top is not None and head is not None else root
    pairs: dict[str, tuple[str, str]] = {}
    unsaved: dict[str, str] = {}
    for absolute, current in open_documents.items():
        try:
            relative = Path(absolute).relative_to(base).as_posix()
        except ValueError:
            continue  # outside the workspace
        unsaved[relative] = current
    if top is not None and head is not None:
        changed = worktree.changed_files(top, head, folders) or []
        wanted = [*changed, *(path for path in unsaved if path in head)]
        blobs = git.read_blobs(top, [head[path].oid for path in wanted])
        for path in dict.fromkeys(wanted):
            reference = _text(blobs.get(head[path].oid))
            if reference is None:
                continue
            # An unsaved change, else a saved one (a deleted file reads as empty).
            now = unsaved.get(path)
            if now is None:
                now = read_text(top / path, max_bytes=MAX_DIFFED_BYTES, within=folders)
            pairs[path] = (reference, now or "")
    for path, current in unsaved.items():
        if path in pairs:
            continue
        on_disk = read_text(base / path, max_bytes=MAX_DIFFED_BYTES, within=folders)
        if on_disk is not None and on_disk != current:
            pairs[path] = (on_disk, current)
    return working_diff_of(pairs)
