"""Where a path really is (`completion.machine.containment`), where mutation testing found it thin: a workspace root
that is itself a link, the root itself, names that sort near `.git`, and neighbours whose names compare
close to the root's (`python tools/mutation.py --module tandem.completion.machine.containment`)."""

from __future__ import annotations

import pathlib

import pytest

from tandem.completion.machine.containment import Folders


@pytest.fixture
def linked_root(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """(the workspace as the editor names it: a link, the folder it leads to)."""
    real = tmp_path / "real-repo"
    (real / "src").mkdir(parents=True)
    (real / "src" / "a.py").write_text("")
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / ".bashrc").write_text("")
    (real / "rc.py").symlink_to(tmp_path / "home" / ".bashrc")
    (real / ".git").mkdir()
    link = tmp_path / "repo"
    link.symlink_to(real, target_is_directory=True)
    return link, real


def test_a_workspace_root_that_is_a_link_holds_what_is_inside_it(
    linked_root: tuple[pathlib.Path, pathlib.Path],
) -> None:
    link, real = linked_root
    folders = Folders([link])
    for root in (link, real):
        assert folders.contains(root / "src" / "a.py") and folders.lexically_inside(root / "src" / "a.py")
        assert folders.read_refusal(root / "src" / "a.py", "src/a.py") == ""
        assert folders.write_refusal(root / "src" / "new.py", "src/new.py") == ""
        assert folders.real_relative(root / "src" / "a.py") == "src/a.py"
        # Its links out are still links out, and .git is still .git.
        assert folders.read_refusal(root / "rc.py", "rc.py") == "rc.py is a link to a file outside the workspace"
        assert "through a link outside" in folders.write_refusal(root / "rc.py", "rc.py")
        assert "inside .git" in folders.write_refusal(root / ".git" / "config", ".git/config")
    home = link.parent / "home" / ".bashrc"
    assert not folders.contains(home) and folders.real_relative(home) is None
    assert folders.write_refusal(home, "~/.bashrc") == "~/.bashrc is outside the workspace folders"


def test_the_root_itself_is_inside(tmp_path: pathlib.Path) -> None:
    folders = Folders([tmp_path])
    assert folders.contains(tmp_path) and folders.lexically_inside(tmp_path)
    assert folders.real_relative(tmp_path) == "."
    assert folders.read_refusal(tmp_path, ".") == ""


def test_neighbours_that_compare_close_to_the_root_are_outside(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "m"
    root.mkdir()
    folders = Folders([root])
    for neighbour in (tmp_path / "z", tmp_path / "mm" / "a.py", tmp_path / "a", tmp_path):
        assert not folders.lexically_inside(neighbour), neighbour
        assert not folders.contains(neighbour), neighbour
        assert folders.real_relative(neighbour) is None, neighbour


@pytest.mark.parametrize("name", [".config/x.py", ".a", "-x.py", ".gitignore", ".github/ci.yml", "a.git/x", ".", "A"])
def test_names_that_sort_near_git_may_be_written(tmp_path: pathlib.Path, name: str) -> None:
    assert Folders([tmp_path]).write_refusal(tmp_path / name / "f.py", name) == ""


def test_no_folders_is_false_and_holds_nothing(tmp_path: pathlib.Path) -> None:
    folders = Folders([])
    assert not folders and Folders([tmp_path])
    assert not folders.contains(tmp_path) and folders.real_relative(tmp_path) is None
