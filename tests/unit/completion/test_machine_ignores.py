"""Every source of ignore rules git reads (`completion.machine.ignores`), read through the gate's path
checks and kept current; the end-to-end probes over stdio are in tests/e2e/test_e2e_ignore_files.py."""

from __future__ import annotations

import os
import pathlib
import subprocess

from tandem.cache.privacy import PrivacyFilter
from tandem.completion.gate import Gate


def _git(*args: str, cwd: pathlib.Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_info_exclude_is_read_where_git_keeps_it_when_git_is_a_file(tmp_path: pathlib.Path) -> None:
    root, elsewhere = tmp_path / "work", tmp_path / "elsewhere.git"
    root.mkdir()
    _git("init", "-q", f"--separate-git-dir={elsewhere}", cwd=root)
    assert (root / ".git").is_file()
    (elsewhere / "info").mkdir(exist_ok=True)
    (elsewhere / "info" / "exclude").write_text("notes.py\n")
    gate = Gate(root=root)
    verdict = gate.path("notes.py")
    assert not verdict and "info-exclude" in verdict.reason
    assert gate.path("app.py")


def test_a_directory_that_is_excluded_cannot_be_re_included_below_it() -> None:
    privacy = PrivacyFilter(ignore_files={".gitignore": "private/\n", "private/.gitignore": "!*\n!notes.py\n"})
    assert not privacy.check_path("private/notes.py")
    assert not privacy.check_path("private/deeper/x.py")
    # Not excluded as a directory, a file's own pattern may still be undone deeper (as in git).
    privacy = PrivacyFilter(ignore_files={".gitignore": "*.py\n", "src/.gitignore": "!keep.py\n"})
    assert privacy.check_path("src/keep.py") and not privacy.check_path("src/other.py")


def test_an_ignore_file_is_read_again_when_it_changes_and_dropped_when_it_goes(tmp_path: pathlib.Path) -> None:
    """Each request (`Gate.document`, the engine's first question) looks at the ignore files again."""
    (tmp_path / "pkg").mkdir()
    gate = Gate(root=tmp_path)

    def asked(name: str) -> bool:
        return bool(gate.document((tmp_path / "pkg" / name).as_uri()))

    assert asked("a.py")
    (tmp_path / "pkg" / ".tandemignore").write_text("a.py\n")
    assert not asked("a.py")
    (tmp_path / "pkg" / ".tandemignore").write_text("b.py\n")
    assert asked("a.py") and not asked("b.py")
    (tmp_path / "pkg" / ".tandemignore").unlink()
    assert asked("b.py")


def test_an_ignore_file_that_cannot_be_read_closes_its_directory(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pkg").mkdir()
    os.mkfifo(tmp_path / "pkg" / ".gitignore")  # an open for reading would wait for a writer for ever
    gate = Gate(root=tmp_path)
    verdict = gate.path("pkg/a.py")
    assert not verdict and "unreadable" in verdict.reason
    assert gate.path("b.py")


def test_a_folder_below_its_repositorys_top_is_held_to_the_rules_above_it(tmp_path: pathlib.Path) -> None:
    top = tmp_path / "monorepo"
    root = top / "services" / "api"
    root.mkdir(parents=True)
    _git("init", "-q", cwd=top)
    (top / ".gitignore").write_text("services/api/generated.py\nprivate/\n")
    (top / "services" / ".gitignore").write_text("*.secret.py\n")
    (top / ".git" / "info" / "exclude").write_text("/services/api/anchored.py\n")
    gate = Gate(root=root)
    for path in ("generated.py", "private/notes.py", "keys.secret.py", "anchored.py"):
        assert not gate.path(path), path
    assert gate.path("app.py") and gate.path("sub/anchored.py")


def test_a_folder_whose_own_directory_git_excludes_sends_nothing(tmp_path: pathlib.Path) -> None:
    top = tmp_path / "repo"
    (top / "vendor" / "lib").mkdir(parents=True)
    _git("init", "-q", cwd=top)
    (top / ".gitignore").write_text("vendor/\n")
    (top / "vendor" / "lib" / ".gitignore").write_text("!*\n")
    assert not Gate(root=top / "vendor" / "lib").path("x.py")
