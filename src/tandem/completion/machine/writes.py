"""Where an edit may write: one decision, by allow-list, for every file an answer names.

A model's answer is text from a provider that a repository may have prompt-injected. An edit is written
without asking only where it is ordinary work on code:

- a file the model was shown (the selection's file, its context files), when it is not a place below;
- a new file whose place and kind are ordinary source: a source suffix (`SOURCE_SUFFIXES`), no part of its
  path starting with `.`, and not a place below.

Anything else needs the user's explicit confirmation (`CONFIRM`): the client shows it and the user accepts
or rejects it (LSP `ChangeAnnotation.needsConfirmation`); a client that cannot ask is refused. Outside the
workspace folders, and inside `.git`, nothing is written at all (`REFUSE`).

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
from dataclasses import dataclass

from tandem.cache.privacy import compile_patterns
from tandem.completion.machine.containment import Folders

# Files the model may create without asking: source code, by suffix.
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .js .jsx .mjs .cjs .ts .tsx .go .rs .java .kt .c .h .cc .cpp .hpp .cs .rb .php .lua .el .swift"
    " .scala .ex .exs .hs .ml .zig .dart .vue .svelte .md .rst .txt .css .scss .html .sql .proto".split()
)

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


def _confirm_reason(relative: str, shown_to_model: bool, exists: bool) -> str:
    """Why `relative` needs the user's word ("" if it does not)."""
    parts = relative.split("/")
    # Either case: on a case-insensitive file system (macOS, Windows) `Tandem.TOML` is `tandem.toml`.
    loaded = _LOADED_ON_AN_EVENT.match_file(relative) or _LOADED_LOWER.match_file(relative.lower())
    if loaded or any(part.startswith(".") for part in parts):
        return f"{relative} is a file that an editor, a shell, git or a tool loads or runs on its own"
    if shown_to_model:
        return ""
    if exists:
        return f"{relative} was not shown to the model"
    if posixpath.splitext(parts[-1])[1].lower() not in SOURCE_SUFFIXES:
        return f"{relative} is a new file that is not ordinary source"
    return ""


def write_decision(
    path: pathlib.Path, *, folders: Folders, shown: str, shown_to_model: bool, exists: bool
) -> WriteDecision:
    """The one decision on writing `path` (`shown`: its name for the user). `shown_to_model`: the model
    was shown the file; `exists`: it is there (or open) now."""
    refusal = folders.write_refusal(path, shown) if folders else f"{shown} is not in a workspace folder"
    if refusal:
        return WriteDecision(Write.REFUSE, refusal)
    relative = folders.real_relative(path)
    assert relative is not None  # inside a folder: write_refusal said so
    for candidate in dict.fromkeys((relative, _lexical_relative(folders, path) or relative)):
        reason = _confirm_reason(candidate, shown_to_model, exists)
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
