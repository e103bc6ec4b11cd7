"""The file's own change history for the router: read from real git repositories, and never running what a
hostile repository's config names."""

from __future__ import annotations

import dataclasses
import math
import pathlib
import subprocess

import pytest

from tandem.completion.machine import git as machine_git
from tandem.completion.routing.file_history import (
    FileHistory,
    PastCommit,
    file_history,
    histories,
    parse_log,
    past_commits,
    read_history,
    read_lines_history,
    read_past_commits,
)
from tandem.completion.routing.router import (
    RouteInputs,
    RouterThresholds,
    feature_values,
    history_values,
    route,
    route_features,
)
from tandem.completion.routing.similar_commits import SimilarCommits, similar_commits
from tandem.completion.routing.weights import DEFAULT_WEIGHTS, HISTORY_FEATURES

IDENTITY = ["-c", "user.email=a@example.com", "-c", "user.name=a", "-c", "commit.gpgSign=false"]


def git(root: pathlib.Path, *args: str, stdin: bytes | None = None) -> str:
    done = subprocess.run(["git", "-C", str(root), *IDENTITY, *args], input=stdin, capture_output=True, check=True)
    return done.stdout.decode()


def commit(root: pathlib.Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(root, "add", *files)
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD").strip()


def lines(n: int, tag: str) -> str:
    return "".join(f"{tag} = {i}\n" for i in range(n))


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "start", {"src/app.py": "x = 1\n", "src/views.py": "y = 1\n", "README.md": "hi\n"})
    # app.py with a changelog line only: not a co-change (README is no code)
    commit(root, "fix", {"src/app.py": "x = 2\n", "README.md": "hi there\n"})
    # app.py with views.py: a co-change
    commit(root, "feature", {"src/app.py": "x = 3\n", "src/views.py": "y = 2\n"})
    # app.py with its test: not a co-change (tests count only when no source changed)
    commit(root, "fix with test", {"src/app.py": "x = 4\n", "tests/test_app.py": "def test(): pass\n"})
    # app.py rewritten: large (more than 20 lines of code)
    commit(root, "rewrite", {"src/app.py": lines(30, "x")})
    # a commit not touching app.py
    commit(root, "other", {"src/views.py": "y = 3\n", "src/urls.py": "z = 1\n"})
    return root


def test_the_files_past_commits_as_counts(repo: pathlib.Path) -> None:
    history = read_history(repo, "src/app.py")
    # "start" (with views.py and README) and "feature" changed views.py with it; "fix"'s README and "fix with
    # test"'s test are not code beside app.py; "rewrite" changed 30 lines; "other" is not app.py's.
    assert history == FileHistory(
        path="src/app.py", commits=5, co_changed=2, large=1, co_files=1, partners=("src/views.py",)
    )


def test_the_history_ends_at_the_given_commit(repo: pathlib.Path) -> None:
    """The evaluation reads it at a task's parent: the task's own commit (the answer) is not in it."""
    parent = git(repo, "rev-parse", "HEAD~3").strip()  # before "fix with test"
    history = read_history(repo, "src/app.py", rev=parent)
    assert history is not None
    assert (history.commits, history.co_changed, history.large) == (3, 2, 0)
    assert read_history(repo, "src/app.py", rev="--output=/tmp/x") is None  # a revision is never an option


def test_the_selected_lines_own_history(repo: pathlib.Path) -> None:
    # Lines 11-20 of app.py as it is now were written by "rewrite" alone (30 lines of code, app.py alone).
    assert read_lines_history(repo, "src/app.py", 10, 20) == FileHistory(path="src/app.py", commits=1, large=1)
    # Every line of it is "rewrite"'s: its first too (the line it replaced is gone).
    assert read_lines_history(repo, "src/app.py", 0, 1) == FileHistory(path="src/app.py", commits=1, large=1)
    # Before "rewrite", the file's one line goes back through each commit that changed it: the two that
    # changed views.py with it among them.
    before = git(repo, "rev-parse", "HEAD~2").strip()
    one = read_lines_history(repo, "src/app.py", 0, 1, rev=before)
    assert one is not None and (one.commits, one.co_changed, one.large) == (4, 2, 0)
    # At an earlier commit, the lines are that commit's: "start"'s one line, changed with views.py.
    start = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    assert read_lines_history(repo, "src/app.py", 0, 1, rev=start) == FileHistory(
        path="src/app.py", commits=1, co_changed=1, co_files=1, partners=("src/views.py",)
    )
    assert read_lines_history(repo, "src/app.py", 3, 3) == FileHistory(path="src/app.py")  # nothing selected
    assert read_lines_history(repo, "src/app.py", 100, 120) is None  # past the file's end
    assert histories(repo, "src/app.py", 10, 20) == (read_history(repo, "src/app.py"), FileHistory(
        path="src/app.py", commits=1, large=1))  # fmt: skip


def test_commits_and_output_are_bounded(repo: pathlib.Path) -> None:
    two = read_history(repo, "src/app.py", max_commits=2)
    assert two is not None and two.commits == 2
    # Output cut inside the third commit: the two read whole are kept, the cut one is dropped.
    full = subprocess.run(
        ["git", "-C", str(repo), "log", "--no-merges", "--full-diff", "--numstat", "-z", "--no-renames",
         "--format=%x01%H", "HEAD", "--", "src/app.py"],
        capture_output=True, check=True,
    ).stdout  # fmt: skip
    third = [i for i, byte in enumerate(full) if byte == 1][2]
    cut = read_history(repo, "src/app.py", max_output=third + 5)
    assert cut is not None and cut.commits == 2
    assert len(parse_log(full)) == 5 and len(parse_log(full[: third + 5], complete=False)) == 2


def test_no_repository_no_git_or_an_unknown_file_is_no_history(
    repo: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x = 1\n")
    assert file_history(plain, "a.py") is None
    assert file_history(None, "a.py") is None
    unknown = file_history(repo, "src/new.py")
    assert unknown is not None and unknown.commits == 0
    assert file_history(repo, "src/app.py") == read_history(repo, "src/app.py")
    # A machine without git (git is looked up once per process, so the lookup's answer is what changes).
    monkeypatch.setattr(machine_git, "executable", lambda: None)
    assert file_history(repo, "src/app.py") is None


MARKERS = ("FSMONITOR", "EXTERNAL_DIFF", "TEXTCONV", "PAGER", "GPG", "PAGER_LOG")


def plant_commands(root: pathlib.Path, out: pathlib.Path) -> None:
    """Config that makes git run a script (each leaves a marker file in `out`) on status, diff, log."""
    for name in MARKERS:
        script = out / f"{name.lower()}.sh"
        script.write_text(f"#!/bin/sh\ntouch '{out / ('RAN_' + name)}'\ncat >/dev/null 2>&1\nexit 0\n")
        script.chmod(0o755)
    git(root, "config", "core.fsmonitor", str(out / "fsmonitor.sh"))
    git(root, "config", "diff.external", str(out / "external_diff.sh"))
    git(root, "config", "core.pager", str(out / "pager.sh"))
    git(root, "config", "pager.log", str(out / "pager_log.sh"))
    git(root, "config", "diff.evil.textconv", str(out / "textconv.sh"))
    git(root, "config", "gpg.program", str(out / "gpg.sh"))
    git(root, "config", "log.showSignature", "true")
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "attributes").write_text("*.py diff=evil\n")


def signed_commit(root: pathlib.Path) -> None:
    """A commit carrying a (fake) signature, so `log --show-signature` would call gpg.program on it."""
    tree = git(root, "write-tree").strip()
    head = git(root, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {head}\nauthor a <a@example.com> 1700000000 +0000\n"
        "committer a <a@example.com> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    sha = git(root, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body.encode()).strip()
    git(root, "update-ref", "HEAD", sha)


def ran(out: pathlib.Path) -> list[str]:
    return sorted(p.name for p in out.glob("RAN_*"))


def test_a_hostile_repositorys_commands_never_run(
    repo: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (repo / "src" / "app.py").write_text("x = 5\n")
    git(repo, "add", "src/app.py")
    plant_commands(repo, out)
    signed_commit(repo)
    # The trap is armed: git's ordinary commands run the repository's scripts.
    subprocess.run(["git", "-C", str(repo), "status"], capture_output=True, check=True)
    subprocess.run(["git", "-C", str(repo), "diff", "HEAD~2", "HEAD"], capture_output=True, check=True)
    subprocess.run(["git", "-C", str(repo), "log", "-p", "-n2"], capture_output=True, check=True)
    assert {"RAN_FSMONITOR", "RAN_EXTERNAL_DIFF", "RAN_TEXTCONV", "RAN_GPG"} <= set(ran(out)), ran(out)
    for marker in out.glob("RAN_*"):
        marker.unlink()
    # The guarded read itself, even on this repository (the server does not get this far, below): it
    # reads the history and runs none of them.
    history = read_history(repo, "src/app.py")
    assert history is not None and history.commits == 6
    assert ran(out) == []
    lines = read_lines_history(repo, "src/app.py", 0, 1)
    assert lines is not None and lines.commits == 1  # the signed commit wrote that line
    assert ran(out) == []
    past = read_past_commits(repo)
    assert past is not None and past[0] == PastCommit(subject="signed", hard=True)  # app.py: 30 lines to 1
    assert ran(out) == []
    # The server's entry points read the history of such a repository too: what git runs cannot reach a
    # program whatever the config says, so there is no config to look at.
    assert file_history(repo, "src/app.py") == history
    assert histories(repo, "src/app.py", 0, 1) == (history, lines)
    assert past_commits(repo) == past
    assert ran(out) == []
    # The user's own environment naming a pager does not start one either (a terminal is not at hand in a
    # test: the pager is disabled by option, by config and by environment whatever stdout is).
    monkeypatch.setenv("GIT_PAGER", str(out / "pager.sh"))
    monkeypatch.setenv("PAGER", str(out / "pager.sh"))
    assert read_history(repo, "src/app.py") == history
    assert read_past_commits(repo) == past
    assert ran(out) == []


def log_odds(p: float) -> float:
    return math.log(p / (1 - p))


def test_the_history_is_a_router_feature_with_its_reason() -> None:
    t = RouterThresholds()
    history = FileHistory(
        path="app/models.py", commits=20, co_changed=15, large=6, co_files=12, partners=("app/views.py",)
    )
    base = dict(mode="edit", path="app/models.py", selection="x = 1\n", instruction="fix the total")
    with_history = route_features(RouteInputs(**base, history=history))  # type: ignore[arg-type]
    without = route_features(RouteInputs(**base))  # type: ignore[arg-type]
    values = feature_values(with_history, t)
    assert values["history_co_change"] == pytest.approx((15 + 1.5) / 23 - 0.5)
    assert values["history_large"] == pytest.approx((6 + 1.5) / 23 - 0.5)
    # No history is neutral: every history input is 0, so its weights add nothing.
    assert history_values(None) == dict.fromkeys(HISTORY_FEATURES, 0.0)
    assert all(feature_values(without, t)[name] == 0.0 for name in HISTORY_FEATURES)
    weights = dataclasses.replace(DEFAULT_WEIGHTS, history_co_change=1.0, history_large=1.0, history_files=0.5)
    decision = route(with_history, t, weights=weights)
    reason = "its file changed with other code in 15 of its last 20 commits (views.py, ...), more than 20 lines in 6"
    assert reason in decision.reasons
    quiet = route_features(RouteInputs(**base, history=FileHistory(path="app/models.py", commits=20)))  # type: ignore[arg-type]
    assert decision.score > route(quiet, t, weights=weights).score
    # No history to read (no git): the average task's history terms stand in for it, not a quiet file's.
    never = route_features(RouteInputs(**base, history=FileHistory(path="app/models.py")))  # type: ignore[arg-type]
    assert feature_values(never, t)["history_co_change"] == 0.0
    gap = log_odds(route(without, t, weights=weights).score) - log_odds(route(never, t, weights=weights).score)
    assert gap == pytest.approx(weights.history_missing)
    assert route(with_history, t).trace_features()["history_co_changed"] == 15
    assert route(without, t).trace_features()["history_commits"] is None


def test_the_selected_lines_history_is_a_router_feature_with_its_reason() -> None:
    t = RouterThresholds()
    busy = FileHistory(path="app/models.py", commits=6, co_changed=5, large=4)
    base = dict(mode="edit", path="app/models.py", selection="x = 1\n", instruction="fix the total")
    features = route_features(RouteInputs(**base, lines_history=busy))  # type: ignore[arg-type]
    values = feature_values(features, t)
    assert values["lines_co_change"] == pytest.approx((5 + 1.5) / 9 - 0.5)
    assert values["lines_large"] == pytest.approx((4 + 1.5) / 9 - 0.5)
    weights = dataclasses.replace(DEFAULT_WEIGHTS, lines_co_change=1.0, lines_large=1.0, lines_missing=0.25)
    decision = route(features, t, weights=weights)
    assert "the selected lines changed with other code in 5 of their last 6 commits, more than 20 lines in 4" in (
        decision.reasons
    )
    quiet = route_features(RouteInputs(**base, lines_history=FileHistory(path="app/models.py", commits=6)))  # type: ignore[arg-type]
    assert decision.score > route(quiet, t, weights=weights).score
    never = route_features(RouteInputs(**base, lines_history=FileHistory(path="app/models.py")))  # type: ignore[arg-type]
    unread = route_features(RouteInputs(**base))  # type: ignore[arg-type]
    gap = log_odds(route(unread, t, weights=weights).score) - log_odds(route(never, t, weights=weights).score)
    assert gap == pytest.approx(0.25)
    assert decision.trace_features()["lines_history_co_changed"] == 5


def test_the_repositorys_past_commits_by_subject_and_label(repo: pathlib.Path, tmp_path: pathlib.Path) -> None:
    past = read_past_commits(repo)
    # Newest first; hard = more than one code file or more than 20 lines of code (README and tests aside).
    assert past == (
        PastCommit(subject="other", hard=True),
        PastCommit(subject="rewrite", hard=True),
        PastCommit(subject="fix with test", hard=False),
        PastCommit(subject="feature", hard=True),
        PastCommit(subject="fix", hard=False),
        PastCommit(subject="start", hard=True),
    )
    # Read at a past commit, nothing after it is in them; a mass change and a merge are left out.
    parent = git(repo, "rev-parse", "HEAD~1").strip()
    assert read_past_commits(repo, rev=parent) == past[1:]
    commit(repo, "vendor everything", {f"vendor/m{i}.py": "x = 1\n" for i in range(41)})
    git(repo, "checkout", "-qb", "side", "HEAD~1")
    commit(repo, "on the side", {"src/side.py": "s = 1\n"})
    git(repo, "checkout", "-q", "-")
    git(repo, "merge", "-q", "--no-edit", "side")
    assert [c.subject for c in read_past_commits(repo) or ()][:3] == ["on the side", "other", "rewrite"]
    assert read_past_commits(repo, max_commits=2) == (PastCommit(subject="on the side", hard=False),)
    assert read_past_commits(repo, rev="--output=/tmp/x") is None  # a revision is never an option
    assert read_past_commits(repo, rev="no-such-rev") is None
    assert past_commits(repo) == read_past_commits(repo)
    plain = tmp_path / "plain"
    plain.mkdir()
    assert past_commits(plain) is None and past_commits(None) is None


def test_the_past_commits_most_like_the_instruction() -> None:
    past = [
        PastCommit(subject="Fix crash on empty cache files", hard=False),
        PastCommit(subject="Add preview feature: hug parentheses", hard=True),
        PastCommit(subject="Add preview feature: wrap comprehensions (#123)", hard=True),
        PastCommit(subject="Fix typo in docs/index.rst", hard=False),
        PastCommit(subject="Fix the changelog", hard=False),
        PastCommit(subject="Bump mypy", hard=False),
    ]
    like_preview = similar_commits("Add a preview feature for dict unpacking", past)
    assert like_preview.commits == 6 and like_preview.hard == 2
    # Both preview commits share words with it; 'add' and 'feature' and 'preview' outweigh nothing else.
    assert like_preview.neighbours == 2 and like_preview.neighbours_hard == 2
    assert like_preview.similarity == pytest.approx(like_preview.hard_similarity)
    # Shrunk towards the repository's share (3/8) by twice their similarity (0.51): +0.13.
    assert like_preview.lift() == pytest.approx((0.5093 + 2 * 3 / 8) / (0.5093 + 2) - 3 / 8, abs=1e-3)
    # A fix reads like the fixes: easy ones, so below the repository's share.
    like_fix = similar_commits("Fix crash on a broken cache", past)
    assert like_fix.neighbours_hard == 0 and like_fix.neighbours == 3 and like_fix.lift() < -0.05
    # A path's words are not words of the instruction; nothing in common: no neighbour, no lift.
    unlike = similar_commits("Rename docs/index.rst", past)
    assert unlike.neighbours == 0 and unlike.lift() == 0.0
    assert similar_commits("anything", []) == SimilarCommits()
    assert SimilarCommits().lift() == 0.0
    # A word in every subject says nothing; at most ten neighbours, the newest first among equals.
    rules = [PastCommit(subject=f"add parser rule {i}", hard=i < 10) for i in range(15)]
    assert similar_commits("add parser rule", rules).neighbours == 0
    mixed = similar_commits("add parser rule", rules + [PastCommit(subject="fix docs", hard=False)] * 15)
    assert mixed.neighbours == 10 and mixed.neighbours_hard == 10


def test_the_similar_past_commits_are_a_router_feature_with_their_reason() -> None:
    t = RouterThresholds()
    past = [PastCommit(subject="Add preview feature: hug parentheses", hard=True)] + [
        PastCommit(subject=f"Fix typo number {i}", hard=False) for i in range(9)
    ]
    base = dict(mode="edit", path="src/linegen.py", selection="x = 1\n", instruction="Add preview feature: wrap")
    features = route_features(RouteInputs(**base, past_commits=past))  # type: ignore[arg-type]
    assert features.similar == similar_commits("Add preview feature: wrap", past)
    values = feature_values(features, t)
    assert values["similar_hard"] == pytest.approx(features.similar.lift()) and values["similar_hard"] > 0.15
    weights = dataclasses.replace(DEFAULT_WEIGHTS, similar_hard=2.0, similar_missing=0.3)
    decision = route(features, t, weights=weights)
    assert "1 of the 1 past commits most like it changed other code or more than 20 lines (1 of all 10)" in (
        decision.reasons
    )
    assert decision.score > route(features, t, weights=dataclasses.replace(weights, similar_hard=0.0)).score
    # Not read (no git): the fit's average term stands in for it.
    unread = route_features(RouteInputs(**base))  # type: ignore[arg-type]
    assert unread.similar is None and feature_values(unread, t)["similar_hard"] == 0.0
    unrelated = route_features(RouteInputs(**base, past_commits=[]))  # type: ignore[arg-type]
    gap = log_odds(route(unread, t, weights=weights).score) - log_odds(route(unrelated, t, weights=weights).score)
    assert gap == pytest.approx(0.3)
    assert decision.trace_features()["similar_neighbours_hard"] == 1
    assert route(unread, t).trace_features()["similar_commits"] is None
    # Inline completions do not compare anything.
    assert route_features(RouteInputs(mode="inline", instruction="Add preview", past_commits=past)).similar is None
