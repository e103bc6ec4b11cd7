"""The router's git inputs under one deadline, cached per file and HEAD (`completion.routing.inputs`), on real
git repositories."""

from __future__ import annotations

import asyncio
import pathlib
import subprocess
import threading

import pytest

from tandem.completion.machine.git import head_commit
from tandem.completion.routing import inputs
from tandem.completion.routing.inputs import (
    FILE_HISTORY,
    LINES_HISTORY,
    PAST_COMMITS,
    WORKING_DIFF,
    RouterInputsCache,
    RouterInputsQuery,
    gather_router_inputs,
)

IDENTITY = ["-c", "user.email=a@example.com", "-c", "user.name=a", "-c", "commit.gpgSign=false"]


def git(root: pathlib.Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *IDENTITY, *args], capture_output=True, check=True)
    return done.stdout.decode().strip()


def commit(root: pathlib.Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    commit(root, "first", {"a.py": "x = 1\ny = 2\n", "b.py": "z = 3\n"})
    commit(root, "both", {"a.py": "x = 10\ny = 2\n", "b.py": "z = 30\n"})
    return root


def _query(root: pathlib.Path, deadline_s: float = 30.0) -> RouterInputsQuery:
    return RouterInputsQuery(root=root, path="a.py", first_line=0, end_line=1, deadline_s=deadline_s)


def test_head_is_read_from_the_repository_files(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    assert head_commit(repo) == git(repo, "rev-parse", "HEAD")
    git(repo, "pack-refs", "--all")
    assert head_commit(repo) == git(repo, "rev-parse", "HEAD")
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "other", str(worktree))
    assert head_commit(worktree) == git(worktree, "rev-parse", "HEAD")
    assert head_commit(tmp_path) is None


def test_inputs_are_read_then_served_from_the_cache_until_head_moves(repo: pathlib.Path) -> None:
    cache = RouterInputsCache()

    async def run() -> None:
        first = await gather_router_inputs(_query(repo), cache)
        assert first.late == ()
        assert first.history is not None and first.history.commits == 2
        assert first.lines_history is not None and first.past_commits is not None
        assert first.cached == ()
        again = await gather_router_inputs(_query(repo), cache)
        assert set(again.cached) == {FILE_HISTORY, LINES_HISTORY, PAST_COMMITS}
        assert again.history == first.history
        commit(repo, "third", {"a.py": "x = 100\ny = 2\n"})
        moved = await gather_router_inputs(_query(repo), cache)
        assert moved.cached == ()
        assert moved.history is not None and moved.history.commits == 3

    asyncio.run(run())
    cache.close()


def test_past_the_deadline_the_router_decides_without_and_the_read_serves_the_next_edit(
    repo: pathlib.Path,
) -> None:
    cache = RouterInputsCache()

    async def run() -> None:
        # No time at all: nothing read in time, everything named.
        rushed = await gather_router_inputs(_query(repo, deadline_s=0.0), cache)
        assert set(rushed.late) == {WORKING_DIFF, FILE_HISTORY, LINES_HISTORY, PAST_COMMITS}
        assert rushed.history is None and rushed.past_commits is None
        # The reads went on in the background: the next edit finds them cached.
        later = await gather_router_inputs(_query(repo), cache)
        assert later.late == ()
        assert set(later.cached) == {FILE_HISTORY, LINES_HISTORY, PAST_COMMITS}
        assert later.history is not None and later.history.commits == 2

    asyncio.run(run())
    cache.close()


def test_warm_starts_the_reads_an_edit_then_finds(repo: pathlib.Path) -> None:
    cache = RouterInputsCache()
    cache.warm(repo, "a.py")

    async def run() -> None:
        read = await gather_router_inputs(_query(repo), cache)
        assert FILE_HISTORY in read.cached and PAST_COMMITS in read.cached

    asyncio.run(run())
    cache.close()


def test_warm_with_lines_starts_their_history_one_read_at_a_time(
    repo: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit offered on lines 0-1 starts their history: the edit then finds it cached. A second range
    offered while that read runs is not started (a sweep of selections queues nothing)."""
    release = threading.Event()
    real = inputs.selected_lines_history

    def held(*args: object) -> object:
        release.wait(10)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(inputs, "selected_lines_history", held)
    cache = RouterInputsCache()
    cache.warm(repo, "a.py", (0, 1))
    cache.warm(repo, "a.py", (1, 2))  # the first range's read is still running: not started
    release.set()

    async def run() -> None:
        read = await gather_router_inputs(_query(repo), cache)
        assert {FILE_HISTORY, PAST_COMMITS, LINES_HISTORY} <= set(read.cached)
        other = await gather_router_inputs(
            RouterInputsQuery(root=repo, path="a.py", first_line=1, end_line=2, deadline_s=30.0), cache
        )
        assert LINES_HISTORY not in other.cached and other.lines_history is not None

    asyncio.run(run())
    cache.close()


def test_no_repository_means_no_history_and_nothing_late(tmp_path: pathlib.Path) -> None:
    cache = RouterInputsCache()
    (tmp_path / "a.py").write_text("x = 1\n")

    async def run() -> None:
        read = await gather_router_inputs(_query(tmp_path), cache)
        assert read.history is None and read.past_commits is None and read.late == ()

    asyncio.run(run())
    cache.close()
