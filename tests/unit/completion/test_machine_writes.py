"""Where an edit may write: one decision, by allow-list."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

from tandem.completion.machine.containment import Folders
from tandem.completion.machine.writes import Write, WriteDecision, write_decision


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


def test_only_an_existing_file_the_model_was_shown_is_written_unasked(tmp_path: pathlib.Path) -> None:
    assert decide(tmp_path, "src/app.py", shown=True, exists=True) is Write.ALLOW
    assert decide(tmp_path, "src/hooks/use_thing.ts", shown=True, exists=True) is Write.ALLOW  # not git's hooks/
    assert decide(tmp_path, "config.yaml", shown=True, exists=True) is Write.ALLOW  # shown, not loaded on an event


@pytest.mark.parametrize(
    "path",
    ["tests/test_planted.py", "docs/conf.py", "fabfile.py", "gulpfile.js", "src/new_module.py", "docs/notes.md",
     "run", "x.sh", "Gruntfile.js", "noxfile_extra.py"],
)  # fmt: skip
def test_every_new_file_asks(tmp_path: pathlib.Path, path: str) -> None:
    assert decide(tmp_path, path) is Write.CONFIRM
    assert decide(tmp_path, path, shown=True) is Write.CONFIRM  # named in the answer, but not there


def test_an_existing_file_the_model_was_not_shown_asks(tmp_path: pathlib.Path) -> None:
    assert decide(tmp_path, "src/other.py", exists=True) is Write.CONFIRM


def test_gits_own_directory_is_found_by_asking_git_and_never_written(tmp_path: pathlib.Path) -> None:
    root, elsewhere = tmp_path / "ws", tmp_path / "store"
    root.mkdir()
    subprocess.run(["git", "init", "-q", f"--separate-git-dir={elsewhere}"], cwd=root, check=True)
    (root / "hooks").symlink_to(elsewhere / "hooks")  # a link in the workspace into git's directory
    decision = write_decision(
        root / "hooks" / "pre-commit", folders=Folders([root, elsewhere]), shown="hooks/pre-commit",
        shown_to_model=True, exists=True,
    )  # fmt: skip
    assert decision.write is Write.REFUSE and "git's own directory" in decision.reason
    config = write_decision(elsewhere / "config", folders=Folders([root, elsewhere]), shown="config",
                            shown_to_model=True, exists=True)  # fmt: skip
    assert config.write is Write.REFUSE


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


def test_a_change_that_needs_the_users_word_is_refused_where_the_editor_cannot_ask(tmp_path: pathlib.Path) -> None:
    def decision(path: str, *, can_confirm: bool) -> WriteDecision:
        return write_decision(tmp_path / path, folders=Folders([tmp_path]), shown=path, shown_to_model=True,
                              exists=path != "new.py", can_confirm=can_confirm)  # fmt: skip

    assert decision("new.py", can_confirm=True).write is Write.CONFIRM
    refused = decision("new.py", can_confirm=False)
    assert refused.write is Write.REFUSE
    assert refused.reason == (
        "new.py is a new file; this editor cannot ask you to confirm such a change, so it is not written"
    )
    assert decision("app.py", can_confirm=False).write is Write.ALLOW
    assert decision("../x.py", can_confirm=True).write is Write.REFUSE
