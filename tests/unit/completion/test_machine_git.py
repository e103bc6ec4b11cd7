"""git without the repository's programs: every command tandem runs, on a repository that names a program
through every configuration file git reads (`hostile_git`), and the working diff computed in-process."""

from __future__ import annotations

import pathlib
import subprocess

import pytest
from hostile_git import PLACES, arm, clear, drop_blob, git, ran, trap_springs

from tandem.completion.machine import git as machine_git
from tandem.completion.machine.worktree import blob_id
from tandem.completion.routing.file_history import histories, past_commits
from tandem.completion.routing.working_diff import working_diff


@pytest.fixture(params=[PLACES, *((place,) for place in PLACES)], ids=["all", *PLACES])
def hostile(tmp_path: pathlib.Path, request: pytest.FixtureRequest) -> tuple[pathlib.Path, pathlib.Path]:
    root, out = tmp_path / "repo", tmp_path / "out"
    root.mkdir()
    out.mkdir()
    git(root, "init", "-q")
    for name in ("app.py", "notes.txt", "lost.py"):
        (root / name).write_text(f"# {name}\nx = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "start")
    (root / "app.py").write_text("# app.py\nx = 2\ny = 3\n")
    git(root, "add", "app.py")
    git(root, "commit", "-qm", "second")
    arm(root, out, request.param)
    (root / "app.py").write_text("# app.py\nx = 2\ny = 4\nz = 5\n")  # saved, not committed
    (root / "notes.txt").write_text("changed\n")
    return root, out


def test_the_trap_is_real(hostile: tuple[pathlib.Path, pathlib.Path]) -> None:
    """git's own commands on this repository run its programs (so the tests below mean something)."""
    root, out = hostile
    clear(out)
    trap_springs(root)
    # Single-valued keys: the last file git reads wins (the conditional include); the included file's
    # own drivers run too.
    kinds = {name.split("_", 2)[2] for name in ran(out) if name.count("_") >= 2}
    assert {"FSMONITOR", "CLEAN", "SMUDGE", "DIFF_COMMAND", "GPG"} <= kinds, ran(out)


def test_every_command_tandem_runs_runs_none_of_them(hostile: tuple[pathlib.Path, pathlib.Path]) -> None:
    root, out = hostile
    clear(out)
    top = machine_git.toplevel(root)
    assert top == root
    head = machine_git.head_files(root)
    assert head is not None and set(head) == {".gitmodules", "app.py", "lost.py", "notes.txt"}  # no gitlink
    blobs = machine_git.read_blobs(root, [head["app.py"].oid])
    assert blobs[head["app.py"].oid] == b"# app.py\nx = 2\ny = 3\n"  # as stored: no smudge, no textconv
    assert blob_id(blobs[head["app.py"].oid]) == head["app.py"].oid
    history, lines = histories(root, "app.py", 0, 2)
    assert history is not None and history.commits == 2
    assert lines is not None and lines.commits >= 1
    past = past_commits(root)
    assert past is not None and [p.subject for p in past][:1] == ["signed"]
    diff = working_diff(root, {str(root / "lost.py"): "# lost.py\nx = 1\nw = 0\n"})
    # app.py: y = 3 -> y = 4, z = 5 added (saved); notes.txt rewritten (saved); lost.py: a line typed.
    assert set(diff.files) == {"app.py", "notes.txt", "lost.py"}
    assert ran(out) == []


def test_a_missing_object_is_not_fetched(hostile: tuple[pathlib.Path, pathlib.Path]) -> None:
    """A partial clone fetches a missing blob from its promisor remote on demand, through ssh (here the
    repository's own `core.sshCommand`): tandem's reads go without it instead."""
    root, out = hostile
    oid = drop_blob(root, "lost.py")
    clear(out)
    assert machine_git.read_blobs(root, [oid]) == {}
    working_diff(root, {str(root / "lost.py"): "changed\n"})
    assert ran(out) == []
    # The trap: git's own cat-file would run the repository's ssh command to fetch it.
    subprocess.run(["git", "-C", str(root), "cat-file", "-p", oid], capture_output=True, check=False, timeout=30)
    assert any(name.endswith("_SSH") for name in ran(out)), ran(out)


def test_the_processs_own_git_environment_is_not_passed_on(
    hostile: tuple[pathlib.Path, pathlib.Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = hostile
    clear(out)
    for name in ("GIT_PAGER", "PAGER", "GIT_EXTERNAL_DIFF", "GIT_SSH_COMMAND"):
        monkeypatch.setenv(name, str(out / "config_pager.sh"))
    monkeypatch.setenv("GIT_DIR", str(out))  # would point git elsewhere
    assert machine_git.toplevel(root) == root
    assert histories(root, "app.py", 0, 2)[0] is not None
    assert ran(out) == []


def test_a_bare_repository_planted_in_the_workspace_is_not_found(tmp_path: pathlib.Path) -> None:
    """A workspace that is itself a bare repository (HEAD, config, objects at its root: a repository can
    carry one as files) would have its config obeyed by discovery; with `safe.bareRepository=explicit` git
    does not discover it."""
    real = tmp_path / "real"
    real.mkdir()
    git(real, "init", "-q")
    (real / "a.py").write_text("a = 1\n")
    git(real, "add", "a.py")
    git(real, "commit", "-qm", "a")
    bare = tmp_path / "bare"
    subprocess.run(["git", "clone", "-q", "--bare", str(real), str(bare)], check=True, capture_output=True)
    assert machine_git.toplevel(bare) is None
    assert past_commits(bare) is None
