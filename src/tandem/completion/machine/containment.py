"""Where a path really is: inside the workspace folders or not, after `..`, absolute paths and links.

A cloned repository is written by someone else. It may hold links that lead out of it
(`creds.py -> ~/.aws/credentials`, a linked directory), and a model it prompt-injects may answer with
paths that leave it (`../../.bashrc`, `/home/me/.profile`, `src/../../x.py`). Every read for context and
every write of an edit asks `Folders` first. A path is inside when its real location (every `..` and every
link resolved, as the kernel would on open) lies inside the real location of a workspace folder.

    read_refusal(path)    reading it for context would follow a link out of the workspace
    write_refusal(path)   writing it would land outside the workspace folders, or inside `.git`
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable

# Writing here makes git run it (hooks) or changes what git runs (config): never an edit's target.
_NEVER_WRITTEN = ".git"


def folder_refusal(path: pathlib.Path) -> str:
    """ "" if `path` may be a workspace folder, else why not (for the user). A folder is where tandem reads
    files for context and writes edits: never the root of the file system, the home directory or a directory
    holding it (a repository's `.code-workspace` may name any of them), never a relative path (it would be
    taken from wherever the server happens to run)."""
    if not path.is_absolute():
        return f"{path} is not an absolute path"
    home = os.environ.get("HOME", "")
    guarded = {pathlib.Path("/")}
    if home and os.path.isabs(home):
        guarded |= {pathlib.Path(os.path.normpath(home)), real_path(pathlib.Path(home))}
    for place in (pathlib.Path(os.path.normpath(path)), real_path(path)):
        for top in guarded:
            if place == top or place in top.parents:
                what = (
                    "the root of the file system"
                    if place == pathlib.Path("/")
                    else ("your home directory" if place == top else "a directory that holds your home directory")
                )
                return f"{path} is {what}"
    return ""


def real_path(path: pathlib.Path) -> pathlib.Path:
    """`path` with every link and `..` resolved (as far as it exists; the rest is normalised)."""
    return pathlib.Path(os.path.realpath(path))


def really_inside(path: str | pathlib.Path, directories: Iterable[str | pathlib.Path]) -> bool:
    """True if `path`'s real location lies below the real location of one of `directories` (the directory
    itself is not below itself)."""
    real = os.path.realpath(path)
    return any(real.startswith(os.path.realpath(d).rstrip("/") + "/") for d in directories)


class Folders:
    """The workspace folders, as given and as they really are."""

    def __init__(self, roots: Iterable[pathlib.Path]) -> None:
        # Relative roots are dropped (the lsp edge refuses them with a message; `folder_refusal`): taken from
        # the server's current directory, they would make a link out look inside.
        self.roots = tuple(pathlib.Path(os.path.normpath(root)) for root in roots if pathlib.Path(root).is_absolute())
        self.real_roots = tuple(real_path(root) for root in self.roots)

    def __bool__(self) -> bool:
        return bool(self.roots)

    def _real_root_of(self, real: pathlib.Path) -> pathlib.Path | None:
        return next((root for root in self.real_roots if real == root or root in real.parents), None)

    def contains(self, path: pathlib.Path) -> bool:
        """True if `path` really lies inside a workspace folder."""
        return self._real_root_of(real_path(path)) is not None

    def lexically_inside(self, path: pathlib.Path) -> bool:
        """True if `path`, without following links, names a place inside a workspace folder."""
        plain = pathlib.Path(os.path.normpath(os.path.abspath(path)))
        return any(plain == root or root in plain.parents for root in (*self.roots, *self.real_roots))

    def real_relative(self, path: pathlib.Path) -> str | None:
        """Where `path` really is, relative to the workspace folder that holds it (POSIX); None outside."""
        real = real_path(path)
        root = self._real_root_of(real)
        return None if root is None else real.relative_to(root).as_posix()

    def read_refusal(self, path: pathlib.Path, shown: str) -> str:
        """ "" if `path` may be read for context, else why not. A path that is inside the workspace by
        name but leads out of it through a link is refused; one outside by name (a document the user
        opened from elsewhere) is not this check's business."""
        if not self.lexically_inside(path) or self.contains(path):
            return ""
        return f"{shown} is a link to a file outside the workspace"

    def write_refusal(self, path: pathlib.Path, shown: str) -> str:
        """ "" if an edit may write `path`, else a message naming it."""
        real = real_path(path)
        root = self._real_root_of(real)
        if root is None:
            where = "through a link " if self.lexically_inside(path) else ""
            return f"{shown} is {where}outside the workspace folders"
        if any(part.lower() == _NEVER_WRITTEN for part in real.relative_to(root).parts):
            return f"{shown} is inside .git (git would run or obey what is written there)"
        return ""
