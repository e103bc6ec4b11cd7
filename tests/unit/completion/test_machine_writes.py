"""Where an edit may write: one decision, by allow-list."""

from __future__ import annotations

import pathlib

import pytest

from tandem.completion.machine.containment import Folders
from tandem.completion.machine.writes import Write, write_decision


def decide(root: pathlib.Path, path: str, *, shown: bool = False, exists: bool = False) -> Write:
    return write_decision(root / path, folders=Folders([root]), shown=path, shown_to_model=shown, exists=exists).write


@pytest.mark.parametrize(
    "path",
    [
        ".vscode/settings.json", ".vscode/tasks.json", "app.code-workspace", ".envrc", ".env", ".nvim.lua",
        ".nvimrc", ".exrc", ".dir-locals.el", "sub/.dir-locals-2.el", ".helix/languages.toml",
        ".githooks/pre-commit", ".husky/pre-push", "hooks/post-checkout", "githooks/pre-commit", "tandem.toml",
        "evil.pth", "venv/lib/python3.11/site-packages/x.py", "sitecustomize.py", "tests/conftest.py",
        "pyproject.toml", "setup.py", "package.json", "eslint.config.js", "build.rs", "Makefile",
        ".github/workflows/ci.yml", ".gitlab-ci.yml", "Jenkinsfile", ".gitattributes", ".pre-commit-config.yaml",
        "node_modules/x/index.js", "flake.nix", ".cargo/config.toml", "Tandem.TOML", "CONFTEST.py", "go.mod",
        "gradle/wrapper/gradle-wrapper.properties", "requirements-dev.txt", "Cargo.toml",
    ],
)  # fmt: skip
def test_what_runs_on_an_event_always_asks(tmp_path: pathlib.Path, path: str) -> None:
    assert decide(tmp_path, path, shown=True, exists=True) is Write.CONFIRM
    assert decide(tmp_path, path) is Write.CONFIRM


def test_ordinary_work_on_code_does_not_ask(tmp_path: pathlib.Path) -> None:
    assert decide(tmp_path, "src/app.py", shown=True, exists=True) is Write.ALLOW
    assert decide(tmp_path, "src/hooks/use_thing.ts") is Write.ALLOW  # a new source file, not git's hooks/
    assert decide(tmp_path, "docs/notes.md") is Write.ALLOW
    assert decide(tmp_path, "config.yaml", shown=True, exists=True) is Write.ALLOW  # shown, not loaded on an event


def test_what_is_neither_asks(tmp_path: pathlib.Path) -> None:
    assert decide(tmp_path, "src/other.py", exists=True) is Write.CONFIRM  # there, but not shown
    assert decide(tmp_path, "run") is Write.CONFIRM  # a new file of no source kind
    assert decide(tmp_path, "x.sh") is Write.CONFIRM


def test_outside_and_git_are_refused_and_links_are_judged_by_both_names(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    assert decide(root, "../x.py") is Write.REFUSE
    assert decide(root, ".git/hooks/pre-commit") is Write.REFUSE
    (root / "innocent.py").write_text("")
    (root / ".envrc").symlink_to(root / "innocent.py")
    assert decide(root, ".envrc", shown=True, exists=True) is Write.CONFIRM  # the name direnv loads
    (root / "alias.py").symlink_to(root / "Makefile")
    assert decide(root, "alias.py", shown=True, exists=True) is Write.CONFIRM  # where it really writes
