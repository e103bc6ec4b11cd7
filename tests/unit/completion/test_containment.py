"""Where a path really is (`completion.machine.containment`): the variants of leaving a workspace, on a real file
system with real links."""

from __future__ import annotations

import pathlib

import pytest

from tandem.completion.machine.containment import Folders


@pytest.fixture
def tree(tmp_path: pathlib.Path) -> pathlib.Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".bashrc").write_text("")
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "mod.py").write_text("")
    (root / "out").symlink_to(tmp_path / "home", target_is_directory=True)
    (root / "rc.py").symlink_to(tmp_path / "home" / ".bashrc")
    (root / "inner.py").symlink_to(root / "src" / "pkg" / "mod.py")
    (root / "dangling.py").symlink_to(tmp_path / "home" / "not-yet.py")
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / "alias").symlink_to(root / ".git", target_is_directory=True)
    (tmp_path / "repo-other").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../home/.bashrc", "outside the workspace folders"),
        ("src/pkg/../../../home/.bashrc", "outside the workspace folders"),
        ("../repo-other/x.py", "outside the workspace folders"),  # a sibling whose name starts like the root's
        ("out/.bashrc", "through a link outside"),
        ("out/new.py", "through a link outside"),  # creating a file in a linked directory
        ("rc.py", "through a link outside"),
        ("dangling.py", "through a link outside"),  # a link to where nothing is yet: creating it writes outside
        (".git/hooks/post-checkout", "inside .git"),
        (".GIT/config", "inside .git"),
        ("src/.git/config", "inside .git"),
        ("alias/hooks/pre-commit", "inside .git"),  # a link to .git
    ],
)
def test_writes_that_leave_the_workspace_are_refused_naming_the_path(
    tree: pathlib.Path, path: str, reason: str
) -> None:
    folders = Folders([tree / "repo"])
    refusal = folders.write_refusal(tree / "repo" / path, path)
    assert refusal.startswith(path) and reason in refusal


@pytest.mark.parametrize("path", ["src/pkg/mod.py", "src/new/file.py", "new.py", "inner.py", "src/../top.py"])
def test_writes_inside_the_workspace_are_allowed(tree: pathlib.Path, path: str) -> None:
    assert Folders([tree / "repo"]).write_refusal(tree / "repo" / path, path) == ""


def test_an_absolute_path_is_judged_by_where_it_is(tree: pathlib.Path) -> None:
    folders = Folders([tree / "repo"])
    assert folders.write_refusal(tree / "home" / ".bashrc", "/home/.bashrc") != ""
    assert folders.write_refusal(tree / "repo" / "src" / "x.py", "/repo/src/x.py") == ""


def test_every_workspace_folder_counts_and_a_linked_root_is_its_target(tree: pathlib.Path) -> None:
    (tree / "linked-root").symlink_to(tree / "repo", target_is_directory=True)
    folders = Folders([tree / "linked-root", tree / "repo-other"])
    assert folders.write_refusal(tree / "linked-root" / "a.py", "a.py") == ""
    assert folders.write_refusal(tree / "repo" / "a.py", "a.py") == ""  # the same place, by its real name
    assert folders.write_refusal(tree / "repo-other" / "b.py", "b.py") == ""


def test_reads_through_a_link_out_are_refused_and_others_are_not_its_business(tree: pathlib.Path) -> None:
    folders = Folders([tree / "repo"])
    assert folders.read_refusal(tree / "repo" / "rc.py", "rc.py") == "rc.py is a link to a file outside the workspace"
    assert folders.read_refusal(tree / "repo" / "out" / ".bashrc", "out/.bashrc") != ""
    assert folders.read_refusal(tree / "repo" / "inner.py", "inner.py") == ""
    # A document the user opened from outside the workspace (not through a link) is theirs to send.
    assert folders.read_refusal(tree / "home" / ".bashrc", "/home/.bashrc") == ""


def test_no_folders_refuses_every_write(tree: pathlib.Path) -> None:
    assert Folders([]).write_refusal(tree / "repo" / "a.py", "a.py") != ""
