"""Every source of ignore rules git reads, read for the privacy rules, for every workspace folder, kept current.

git's idea of "ignored" comes from more than one `.gitignore`: each directory's `.gitignore` (also inside
directories tandem never walks, such as `.idea/` or `build/`), the repository's `info/exclude` (in its git
directory, wherever that is: `.git` may be a file naming another place, and a worktree's excludes live in
the main repository's common directory), and the excludes file (`core.excludesFile`: the repository's own
config's if it sets one, else the user's global one, by default `$XDG_CONFIG_HOME/git/ignore`; tandem reads
both, which is stricter than git). tandem adds its own `.tandemignore` files. `IgnoreRules` reads all of
them into a `PrivacyFilter` (`cache.privacy`), which matches them with git's semantics (pathspec's
`GitIgnoreSpec`: last match wins, deeper files win; a directory that is excluded excludes everything under
it) in linear time (RE2).

Why not `git check-ignore`: git's own `wildmatch` backtracks: `*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b` against a
name of forty `a`s runs for minutes (measured here with git 2.39), so a repository could hold every
question about privacy for as long as it liked. git is asked only where its answer is a fact and costs
nothing to compute: where the git directory is (`rev-parse`) and where the user's global excludes file is
(`git config`, in the user's own configuration and in the repository's, read by the door's hardened git).

Kept current: before a path is judged, the state (size, times, inode) of each ignore file that applies to it
is compared with the state it had when last read; one saved, created or deleted since is read again (or
dropped). A file that cannot be read (a pipe, too large, not text) closes its directory: nothing under it is
sent (fail closed).
"""

from __future__ import annotations

import logging
import os
import pathlib
import subprocess
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tandem.cache.privacy import IGNORE_FILE_NAMES, RANK_GLOBAL, RANK_IGNORE_FILE, RANK_INFO_EXCLUDE
from tandem.completion.machine import git
from tandem.completion.machine.containment import Folders, real_path
from tandem.completion.machine.files import read_file

if TYPE_CHECKING:
    from tandem.cache.privacy import PrivacyFilter

log = logging.getLogger(__name__)

# An ignore file larger than this is not read (its directory is then closed).
MAX_IGNORE_FILE_BYTES = 1_000_000
# How a repository-wide source is named among a folder's ignore files (in reasons shown in the log).
GLOBAL_LABEL = "(your global git excludes file)"
REPOSITORY_EXCLUDES_LABEL = "(the repository's core.excludesFile)"
INFO_EXCLUDE_LABEL = "(the repository's info-exclude file)"

State = tuple[int, int, int, int] | None


def _state(path: pathlib.Path | str) -> State:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)


_global_lock = threading.Lock()
_global_file: list[pathlib.Path | None] = []


def global_excludes_file() -> pathlib.Path | None:
    """The user's global excludes file as git finds it (`core.excludesFile` in the user's global or system
    configuration, else `$XDG_CONFIG_HOME/git/ignore`), asked once. Run in `/` with the user's own
    configuration and no repository (`GIT_CEILING_DIRECTORIES`), so no repository's config takes part."""
    with _global_lock:
        if _global_file:
            return _global_file[0]
        found: pathlib.Path | None = None
        git_path = git.executable()
        if git_path is not None:
            kept = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM")
            environment = {key: value for key, value in os.environ.items() if key in kept}
            environment.update({"PATH": git.search_path(), "LC_ALL": "C", "GIT_CEILING_DIRECTORIES": "/"})
            try:
                done = subprocess.run(
                    [git_path, "config", "--path", "--get", "core.excludesFile"],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    env=environment,
                    cwd="/",
                    timeout=git.TIMEOUT_S,
                    check=False,
                )
                value = done.stdout.decode("utf-8", "surrogateescape").strip()
                found = pathlib.Path(value).expanduser() if done.returncode == 0 and value else None
            except (OSError, subprocess.SubprocessError):
                found = None
        if found is None:
            base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.environ.get("HOME", "/"), ".config")
            found = pathlib.Path(base) / "git" / "ignore"
        _global_file.append(found if found.is_absolute() else None)
        return _global_file[0]


def read_ignore_files(root: pathlib.Path, directory: str, names: Iterable[str], privacy: PrivacyFilter) -> None:
    """Read `directory`'s ignore files (those among `names`) into `privacy`; one that is there but cannot be
    read (a pipe, a device, too large, not text) closes the directory; one that is gone is dropped."""
    for name in IGNORE_FILE_NAMES:
        if name in names:
            where = f"{directory}/{name}" if directory else name
            _read_into(root / where, where, privacy, closes=directory, within=Folders([root]))


def _read_into(
    file: pathlib.Path,
    where: str,
    privacy: PrivacyFilter,
    *,
    closes: str,
    within: Folders | None,
    rank: int = RANK_IGNORE_FILE,
    outer: bool = False,
) -> None:
    read = read_file(file, max_bytes=MAX_IGNORE_FILE_BYTES, within=within)
    text = read.text()
    if text is None:
        privacy.remove_ignore_file(where, outer=outer)
        if not read.missing:
            why = f"has an unreadable {posixpath_name(where)} ({read.refusal or 'not text'})"
            log.info("%s: %s; nothing under it will be sent", closes or "the workspace", why)
            privacy.close_directory(closes, why)
        return
    skipped = privacy.set_ignore_file(where, text, rank=rank, outer=outer)
    if skipped:
        log.info("%s: %d line(s) that are no pattern skipped, as git skips them", where, len(skipped))


def posixpath_name(where: str) -> str:
    return where.rsplit("/", 1)[-1]


class _Folder:
    """One workspace folder: where its rules are keyed in the filter, and its repository-wide sources."""

    def __init__(self, root: pathlib.Path, prefix: str) -> None:
        self.root = root
        self.prefix = prefix  # how the filter names paths in this folder ("" for the first folder)
        directories = git.git_directories(root)
        excludes = [directory / "info" / "exclude" for directory in directories or ()]
        # The common directory's file is the one git reads (the last one named).
        self.info_exclude = excludes[-1] if excludes else None
        # The repository's own core.excludesFile (git reads it in place of the user's global one; tandem both).
        self.excludes_file = git.excludes_file(root) if directories else None
        # Where the folder is inside its work tree ("" at the top): git's rules above it apply to it too.
        top = git.work_tree_top(root) if directories else None
        real_root, real_top = real_path(root), real_path(top) if top is not None else None
        inside = real_top is not None and (real_root == real_top or real_top in real_root.parents)
        self.top = real_top if inside else None
        self.base = real_root.relative_to(real_top).as_posix() if inside and real_top is not None else ""
        if self.base == ".":
            self.base = ""
        # Only the first folder (the filter's root, prefix "") is matched from its repository's top.
        self.outer = bool(self.base) and not prefix and self.top is not None
        self.within = Folders([root])


# (file, its name in the filter, the directory it closes if unreadable, rank, read within, outer)
Source = tuple[str, str, str, int, Folders | None, bool]


class IgnoreRules:
    """Reads every ignore source of the workspace folders into a `PrivacyFilter` and keeps it current.

    Paths are as the filter sees them: relative to the first folder, or absolute for the others. Each
    question stats the ignore files that apply to its path; within one epoch (`new_epoch`: the gate starts
    one per request) a file is stat'ed once, so a request's many questions cost one look at each file."""

    def __init__(self, roots: Sequence[pathlib.Path]) -> None:
        self.roots = tuple(pathlib.Path(os.path.normpath(os.path.abspath(root))) for root in roots)
        self._folders: dict[pathlib.Path, _Folder] = {}
        self._states: dict[str, State] = {}
        self._lock = threading.Lock()
        self._epoch = 0
        self._seen: dict[str, tuple[int, State]] = {}
        # Sources by (folder root, directory inside it).
        self._sources: dict[tuple[pathlib.Path, str], list[Source]] = {}

    def prepare(self) -> None:
        """Ask git now what it knows about every folder (its git directory, its work tree's top, the user's
        global excludes file): blocking calls, made here in a worker thread at start so that the first
        document opened does not make them on the event loop."""
        global_excludes_file()
        for root in self.roots:
            # Asked without the lock: a document opened meanwhile is judged at once (asking git itself)
            # rather than waiting here for every folder's answers.
            prefix = "" if root == self.roots[0] else root.as_posix().lstrip("/")
            folder = _Folder(root, prefix)
            with self._lock:
                self._fixed(self._folders.setdefault(root, folder))

    def forget(self) -> None:
        """Read every file again on its next use (the filter was replaced)."""
        with self._lock:
            self._states.clear()

    def new_epoch(self) -> None:
        """Files are stat'ed again from now on (a new request: an ignore file may have been saved since)."""
        self._epoch += 1

    def _folder_of(self, path: str) -> tuple[_Folder, str] | None:
        """The folder holding `path` and the path inside it."""
        if not self.roots:
            return None
        if not os.path.isabs(path):
            root = self.roots[0]
            relative = path
        else:
            plain = pathlib.Path(os.path.normpath(path))
            inside = [r for r in self.roots[1:] if r in plain.parents]
            if not inside:
                return None
            root = max(inside, key=lambda r: len(r.parts))
            relative = plain.relative_to(root).as_posix()
        folder = self._folders.get(root)
        if folder is None:
            prefix = "" if root == self.roots[0] else root.as_posix().lstrip("/")
            folder = self._folders[root] = _Folder(root, prefix)
        return folder, relative

    def _fixed(self, folder: _Folder) -> list[Source]:
        """The sources that apply to every path of `folder`: the global excludes file, info/exclude, and the
        ignore files between the repository's top and the folder."""
        key = (folder.root, "\0")
        known = self._sources.get(key)
        if known is not None:
            return known
        join = (lambda name: f"{folder.prefix}/{name}") if folder.prefix else (lambda name: name)
        outer = folder.outer
        sources: list[Source] = []
        # Both excludes files: git reads the repository's in place of the user's, tandem reads both (stricter).
        both = ((global_excludes_file(), GLOBAL_LABEL), (folder.excludes_file, REPOSITORY_EXCLUDES_LABEL))
        for excludes, name in both:
            if excludes is not None:
                label = name if outer else join(name)
                sources.append((str(excludes), label, folder.prefix, RANK_GLOBAL, None, outer))
        if folder.info_exclude is not None:
            label = INFO_EXCLUDE_LABEL if outer else join(INFO_EXCLUDE_LABEL)
            sources.append((str(folder.info_exclude), label, folder.prefix, RANK_INFO_EXCLUDE, None, outer))
        if outer and folder.top is not None:
            above = folder.base.split("/")
            within = Folders([folder.top])
            for depth in range(len(above)):
                inside = "/".join([*above[:depth], ".gitignore"])
                sources.append((str(folder.top / inside), inside, "", RANK_IGNORE_FILE, within, True))
        self._sources[key] = sources
        return sources

    def _in_directory(self, folder: _Folder, directory: str) -> list[Source]:
        key = (folder.root, directory)
        known = self._sources.get(key)
        if known is None:
            join = (lambda name: f"{folder.prefix}/{name}") if folder.prefix else (lambda name: name)
            closes = join(directory) if directory else folder.prefix
            known = []
            for name in IGNORE_FILE_NAMES:
                inside = f"{directory}/{name}" if directory else name
                known.append((os.path.join(folder.root, inside), join(inside), closes, RANK_IGNORE_FILE,
                              folder.within, False))  # fmt: skip
            if len(self._sources) > 100_000:
                self._sources.clear()
            self._sources[key] = known
        return known

    def _state_now(self, file: str) -> State:
        seen = self._seen.get(file)
        if seen is not None and seen[0] == self._epoch:
            return seen[1]
        state = _state(file)
        if len(self._seen) > 100_000:
            self._seen.clear()
        self._seen[file] = (self._epoch, state)
        return state

    def refresh(self, path: str, privacy: PrivacyFilter) -> None:
        """Before `path` is judged: the ignore sources that apply to it, read again where they changed."""
        if "://" in path:
            return
        with self._lock:
            found = self._folder_of(path)
            if found is None:
                return
            folder, relative = found
            if folder.outer and privacy.repository_base != folder.base:
                privacy.set_repository_base(folder.base)
            sources = list(self._fixed(folder))
            parts = relative.split("/")[:-1]
            for depth in range(len(parts) + 1):
                sources += self._in_directory(folder, "/".join(parts[:depth]))
            for file, where, closes, rank, limit, is_outer in sources:
                key = f"outer:{where}" if is_outer else where
                state = self._state_now(file)
                if key not in self._states and state is None:
                    self._states[key] = None  # never there: nothing to read
                elif self._states.get(key, ()) != state:
                    self._states[key] = state
                    _read_into(pathlib.Path(file), where, privacy, closes=closes, within=limit, rank=rank,
                               outer=is_outer)  # fmt: skip
