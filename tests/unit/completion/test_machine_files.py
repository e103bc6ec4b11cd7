"""The one reader and the one walk: regular files only, bounded, never blocking; a scan that cannot
finish fails closed."""

from __future__ import annotations

import os
import pathlib

import pytest
from deep_tree import deep_tree

from tandem.cache.privacy import PrivacyPolicy
from tandem.completion.machine import scan
from tandem.completion.machine.containment import Folders
from tandem.completion.machine.files import read_file
from tandem.completion.workspace import scan_workspace

SECRET = "PASSWORD_IGNORED_9c1185a5c5e9fc54"


def test_only_regular_files_inside_the_workspace_are_read(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("a = 1\n")
    os.mkfifo(root / "pipe.py")
    (root / "zero.py").symlink_to("/dev/zero")
    (root / "stdin.py").symlink_to("/dev/stdin")
    (root / "tty.py").symlink_to("/dev/tty")
    (tmp_path / "outside.py").write_text("outside = 1\n")
    (root / "out.py").symlink_to(tmp_path / "outside.py")
    (root / "big.py").write_bytes(b"x" * 2000)
    within = Folders([root])
    assert read_file(root / "a.py", max_bytes=100, within=within).data == b"a = 1\n"
    for name in ("pipe.py", "zero.py", "stdin.py", "tty.py"):
        read = read_file(root / name, max_bytes=100, within=within)
        assert read.data is None and read.refusal, name
    assert read_file(root / "zero.py", max_bytes=100).data is None  # not a regular file, wherever it is
    assert "outside" in read_file(root / "out.py", max_bytes=100, within=within).refusal
    assert "too large" in read_file(root / "big.py", max_bytes=1000, within=within).refusal
    assert read_file(root / "missing.py", max_bytes=100, within=within).missing


def test_a_tree_too_deep_to_walk_is_closed_not_opened(tmp_path: pathlib.Path) -> None:
    """1,000 levels: the walk is iterative (no recursion limit), stops at its depth bound, and what lies
    below is refused whatever ignore file it holds."""
    files = {".gitignore": "secret.py\n", "secret.py": f"PASSWORD = '{SECRET}'\n"}
    with deep_tree(tmp_path, 1000, files) as relative:
        result = scan_workspace(tmp_path, policy=PrivacyPolicy(), max_files=100)
    verdict = result.privacy.check_path(f"{relative}/secret.py")
    assert not verdict and "unscanned" in verdict.reason
    assert result.privacy.check_path("top.py")  # the rest of the workspace is not affected


def test_an_unreadable_ignore_file_closes_its_directory(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pkg").mkdir()
    os.mkfifo(tmp_path / "pkg" / ".gitignore")
    (tmp_path / "pkg" / "secret.py").write_text(f"PASSWORD = '{SECRET}'\n")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ".tandemignore").symlink_to("/dev/zero")
    (tmp_path / "ok.py").write_text("ok = 1\n")
    result = scan_workspace(tmp_path, policy=PrivacyPolicy(), max_files=100)
    assert not result.privacy.check_path("pkg/secret.py")
    assert not result.privacy.check_path("other/x.py")
    assert result.privacy.check_path("ok.py")
    assert "pkg/secret.py" not in result.symbols and "ok.py" in result.symbols


def test_a_scan_broken_on_purpose_sends_nothing(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Privacy fails closed: a walk that raises half-way leaves every path refused."""
    (tmp_path / "a.py").write_text("a = 1\n")

    def broken(*args: object, **kwargs: object) -> object:
        raise RecursionError("broken on purpose")

    monkeypatch.setattr(scan.os, "scandir", broken)
    result = scan_workspace(tmp_path, policy=PrivacyPolicy(), max_files=100)
    assert not result.privacy.check_path("a.py") and not result.privacy.check_path("pkg/b.py")


def test_the_walk_is_bounded_in_entries_and_names_what_it_did_not_list(tmp_path: pathlib.Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        for i in range(5):
            (tmp_path / name / f"{i}.py").write_text("x = 1\n")
    record = scan.Walk()
    seen = [directory for directory, _ in scan.walk(tmp_path, record, descend=lambda _: True, max_entries=9)]
    assert seen == ["", "a"]
    assert set(record.unfinished) == {"b", "c"}
