"""Where an edit may write: one decision, by allow-list, for every file an answer names.

A model's answer is text from a provider that a repository may have prompt-injected. An edit is written
without asking only where it is ordinary work on code: an EXISTING file the model was SHOWN (the
selection's file, its context files), when it is not a place below. A document the user has open from
outside the workspace folders (not through a link) counts as one, since the user brought it.

Everything else needs the user's explicit confirmation (`CONFIRM`): every new file (a test runner collects
a new `tests/test_x.py`, Sphinx runs a new `docs/conf.py`, Fabric a `fabfile.py`, gulp a `gulpfile.js`: no
list of such names is complete, so no new file is written unasked) and every existing file the model was
not shown. The client shows it and the user accepts or rejects it (LSP `ChangeAnnotation.needsConfirmation`);
a client that cannot ask is refused (`can_confirm`), by the same decision. Outside the workspace folders,
and inside git's own directory, nothing is written at all (`REFUSE`): git's directory is found by asking
git (`git.git_directories`: `.git` may be a file naming another place, a worktree's common directory is
elsewhere), and any directory named `.git` is refused too.

`_LOADED_ON_AN_EVENT` names files that an editor, a shell, git, a test runner, a package manager or a CI
runner executes or loads when something happens (a folder is opened, a directory entered, a commit made, a
test run, a package installed, a branch pushed). An edit to one of them always asks, shown to the model or
not. Every dot file and dot directory asks already (most of the list lives there); the patterns below are
the ones that do not start with a dot.

The list, with each tool's own documentation as its source, is in `docs/machine.md` ("Writes").
"""

from __future__ import annotations

import enum
import pathlib
import posixpath
import threading
from dataclasses import dataclass

from tandem.cache.privacy import compile_patterns
from tandem.completion.machine import git
from tandem.completion.machine.containment import Folders, real_path

# Loaded or executed on an event (see the table above); dot files and dot directories ask anyway.
_LOADED_PATTERNS = (
    "tandem.toml",
    "*.code-workspace",
    "/hooks/", "githooks/", "git-hooks/",
    "*.pth", "sitecustomize.py", "usercustomize.py", "site-packages/", "dist-packages/",
    "conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml", "noxfile.py", "setup.py",
    "manage.py", "Pipfile",
    "package.json", "node_modules/", "*.config.js", "*.config.cjs", "*.config.mjs", "*.config.ts",
    "build.rs", "Makefile", "GNUmakefile", "makefile", "*.mk", "justfile", "Justfile", "Taskfile.yml",
    "Rakefile", "Gemfile", "*.gemspec", "build.gradle", "build.gradle.kts", "settings.gradle",
    "settings.gradle.kts", "gradlew", "mvnw", "pom.xml", "*.nix", "CMakeLists.txt", "meson.build",
    "azure-pipelines.yml", "Jenkinsfile", "bitbucket-pipelines.yml", "appveyor.yml", "cloudbuild.yaml",
    "Dockerfile", "docker-compose.yml", "compose.yaml", "Procfile",
    "Cargo.toml", "go.mod", "go.work", "composer.json", "gradle-wrapper.properties", "gradle/wrapper/",
    "requirements*.txt", "constraints*.txt", "package-lock.json", "yarn.lock", "pnpm-lock.yaml",
    "Vagrantfile", "Tiltfile", "Earthfile", "mise.toml",
)  # fmt: skip
_LOADED_ON_AN_EVENT = compile_patterns(_LOADED_PATTERNS)
_LOADED_LOWER = compile_patterns(pattern.lower() for pattern in _LOADED_PATTERNS)


class Write(enum.Enum):
    ALLOW = "allow"
    CONFIRM = "confirm"
    REFUSE = "refuse"


@dataclass(frozen=True)
class WriteDecision:
    """Whether an edit may write a file, and why (the reason names the file, for the user)."""

    write: Write
    reason: str = ""


def _confirm_reason(relative: str, shown: str, shown_to_model: bool, exists: bool) -> str:
    """Why `relative` needs the user's word ("" if it does not)."""
    parts = relative.split("/")
    # Either case: on a case-insensitive file system (macOS, Windows) `Tandem.TOML` is `tandem.toml`.
    loaded = _LOADED_ON_AN_EVENT.match_file(relative) or _LOADED_LOWER.match_file(relative.lower())
    if loaded or any(part.startswith(".") for part in parts):
        return f"{shown} is a file that an editor, a shell, git or a tool loads or runs on its own"
    if not exists:
        return f"{shown} is a new file"
    if not shown_to_model:
        return f"{shown} was not shown to the model"
    return ""


_git_lock = threading.Lock()
_git_directories: dict[pathlib.Path, tuple[pathlib.Path, ...]] = {}


def git_directories(folders: Folders) -> tuple[pathlib.Path, ...]:
    """The real paths of git's own directories for the workspace folders, as git finds them (asked once
    per folder)."""
    found: list[pathlib.Path] = []
    for root in folders.roots:
        with _git_lock:
            known = _git_directories.get(root)
        if known is None:
            known = tuple(real_path(directory) for directory in git.git_directories(root) or ())
            with _git_lock:
                _git_directories[root] = known
        found += known
    return tuple(found)


def write_decision(
    path: pathlib.Path,
    *,
    folders: Folders,
    shown: str,
    shown_to_model: bool,
    exists: bool,
    open_outside: bool = False,
    can_confirm: bool = True,
) -> WriteDecision:
    """The one decision on writing `path` (`shown`: its name for the user). `shown_to_model`: the model
    was shown the file; `exists`: it is there (or open) now; `open_outside`: it is a document the user has
    open in the editor, outside the workspace folders; `can_confirm`: the editor can ask the user to
    confirm a change (without it, a change that needs the user's word is refused)."""
    decision = _decision(
        path, folders=folders, shown=shown, shown_to_model=shown_to_model, exists=exists, open_outside=open_outside
    )
    if decision.write is Write.CONFIRM and not can_confirm:
        why = f"{decision.reason}; this editor cannot ask you to confirm such a change, so it is not written"
        return WriteDecision(Write.REFUSE, why)
    return decision


def _decision(
    path: pathlib.Path, *, folders: Folders, shown: str, shown_to_model: bool, exists: bool, open_outside: bool
) -> WriteDecision:
    real = real_path(path)
    for directory in git_directories(folders):
        if real == directory or directory in real.parents:
            return WriteDecision(Write.REFUSE, f"{shown} is inside git's own directory (git would run or obey it)")
    plain = pathlib.Path(posixpath.normpath(str(path.absolute())))
    if open_outside and folders and not folders.lexically_inside(path) and real == plain:
        # The user's own document, opened from elsewhere: held to the same names as a workspace file.
        reason = _confirm_reason(plain.as_posix().lstrip("/"), shown, shown_to_model, exists)
        return WriteDecision(Write.CONFIRM, reason) if reason else WriteDecision(Write.ALLOW)
    refusal = folders.write_refusal(path, shown) if folders else f"{shown} is not in a workspace folder"
    if refusal:
        return WriteDecision(Write.REFUSE, refusal)
    relative = folders.real_relative(path)
    assert relative is not None  # inside a folder: write_refusal said so
    for candidate in dict.fromkeys((relative, _lexical_relative(folders, path) or relative)):
        reason = _confirm_reason(candidate, shown, shown_to_model, exists)
        if reason:
            return WriteDecision(Write.CONFIRM, reason)
    return WriteDecision(Write.ALLOW)


def _lexical_relative(folders: Folders, path: pathlib.Path) -> str | None:
    """`path` relative to its folder by name (a link's own name may be the loaded one: `.envrc -> x.py`)."""
    plain = pathlib.Path(posixpath.normpath(str(path.absolute())))
    for root in folders.roots:
        if plain == root or root in plain.parents:
            return plain.relative_to(root).as_posix()
    return None
