"""`tandem replay --next-edits --repo PATH` on a small repository this test builds: a commit that renames a
parameter in three places is one task; the user types the first rename and the simulator, answering from the
commit, suggests the other two."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

pytestmark = pytest.mark.e2e

BEFORE = (
    "import math\n\n\n"
    "def area(r):\n    scale = 1\n    half = r / 2\n    unit = 1\n    return math.pi * r * r * scale * unit\n\n\n"
    "print(area(2))\n"
)
AFTER = BEFORE.replace("area(r)", "area(radius)").replace("= r /", "= radius /").replace("r * r", "radius * radius")


def git(root: pathlib.Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root), *args], check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    for message, text in (("circle", BEFORE), ("Rename r to radius", AFTER)):
        (root / "shapes.py").write_text(text)
        git(root, "add", "shapes.py")
        git(root, "commit", "-q", "-m", message)
    return root


def test_replay_next_edits_reports_every_figure_beside_the_baseline(repo: pathlib.Path) -> None:
    args = ["--next-edits", "--repo", str(repo), "--json", "--time-scale", "0.1", "--error-rate", "0"]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "replay", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["tasks"] == 1 and "tandem sim" in data["simulated"]
    baseline = data["baseline"]["later_keys_typed"]
    assert baseline > 0
    for strategy in ("next-edits", "next-edits+prefetch"):
        run = data[strategy]
        # The two later renames were suggested exactly, so the user typed none of them.
        assert (run["suggested_exactly"], run["later_changes"]) == (2, 2), run
        assert run["keys_saved"] == baseline and run["accepted_chars"] > 0
        assert run["after_change_ms"]["n"] >= 1 and run["after_change_ms"]["p95"] >= run["after_change_ms"]["p50"]
        for quantile in ("server_ms_p50", "server_ms_p95"):
            assert run[quantile]["sim_ttft"] is not None and run[quantile]["sim_generation_to_first_hunk"] is not None
        # Each suggestion shown after a change was asked either at once or after the pause, or answered
        # from the rewrite an earlier key asked for (and, without prefetch, each shown after an accept).
        by_wait = run["shown_server_ms_by_wait"]
        assert set(by_wait) == {"at_once", "after_pause", "rebased"}
        after_accept = run["after_accept_ms"]["n"] if strategy == "next-edits" else 0
        shown = sum(part["n"] for part in by_wait.values())
        assert shown == run["after_change_ms"]["n"] + after_accept
        # The user's first change was typed key by key: one request's rewrite served the keys after it.
        assert run["rebased_answers"] >= 1 and run["model_requests"] < run["requests"]
        assert run["fates"].get("accepted") == 2
        assert set(run["shares"]) >= {
            "no_change_of_model_requests",
            "stale_of_model_requests",
            "stale_before_asking_of_requests",
            "accept_refused_stale_of_answered",
        }
        assert run["tokens_per_accepted_char"] > 0
    # Prefetch on accept: the second suggestion was being made while the first was applied.
    assert data["next-edits+prefetch"]["after_accept_ms"]["n"] == 1


def test_replay_next_edits_runs_the_strategies_and_settings_asked_for(repo: pathlib.Path) -> None:
    args = ["--next-edits", "--repo", str(repo), "--json", "--time-scale", "0.1", "--error-rate", "0"]
    chosen = ["--next-edit-strategies", "next-edits", "--next-edit-setting", "pause='typed'"]
    chosen += ["--next-edit-setting", "settle='distinct-line'", "--next-edit-order", "bottom-up"]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "replay", *args, *chosen], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["strategies"] == ["next-edits"] and "next-edits+prefetch" not in data
    # Bottom-up: the user renames the last use first, and the two changes above it are suggested.
    assert data["order"] == "bottom-up" and data["baseline"]["later_keys_typed"] > 0
    assert data["next_edit_settings"] == {"pause": "typed", "settle": "distinct-line"}
    assert (data["next-edits"]["suggested_exactly"], data["next-edits"]["later_changes"]) == (2, 2)
    wrong = subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "replay", *args, "--next-edit-setting", "pause"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wrong.returncode == 1 and "NAME=VALUE" in wrong.stderr


def test_replay_next_edits_can_run_under_a_speculation_budget(repo: pathlib.Path) -> None:
    args = ["--next-edits", "--repo", str(repo), "--json", "--time-scale", "0.1", "--error-rate", "0"]
    args += ["--next-edit-strategies", "next-edits", "--tokens-per-minute", "100"]
    done = subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "replay", *args], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    run = data["next-edits"]
    # No prompt fits in 100 tokens a minute: nothing is asked, nothing suggested, the user types it all.
    assert data["tokens_per_minute"] == 100 and run["model_requests"] == 0 and run["outcomes"].get("skipped", 0) > 0
    assert run["suggested_exactly"] == 0 and run["keys_saved"] == 0
