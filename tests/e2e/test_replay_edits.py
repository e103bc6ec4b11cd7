"""`tandem replay --edits --repo PATH`: the router's predictions and the simulated time-to-correct-edit
comparison, on a small repository this test builds (a real git history, small and multi-file commits)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from fixtures_sim import SimFactory

from tandem.eval.edit_eval import Models, evaluate_edits, prepare
from tandem.eval.history import scan_history
from tandem.eval.router_eval import roc_auc
from tandem.eval.router_loo import SHIPPED_FIT, evaluate_leave_one_out, samples_of_repo, weights_by_held_out
from tandem.eval.router_shape import model_logit

pytestmark = pytest.mark.e2e

MODELS = '''"""Invoices."""


def compute_total(invoice):
    """The invoice's total."""
    return sum(line.amount for line in invoice.lines)


def average(values):
    return sum(values) / len(values)
'''
VIEWS = """from models import compute_total


def show(invoice):
    return f"{compute_total(invoice)} EUR"
"""
URLS = """from models import compute_total
from views import show

routes = [show, compute_total]
"""
REPORTS = """from models import compute_total


def report(invoices):
    return [compute_total(i) for i in invoices]
"""


def git(root: pathlib.Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(root), *args], check=True, capture_output=True
    )


def commit(root: pathlib.Path, message: str, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).write_text(text)
    git(root, "add", *files)
    git(root, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "start", {"models.py": MODELS, "views.py": VIEWS, "urls.py": URLS, "reports.py": REPORTS})
    models = MODELS.replace("The invoice's total.", "The invoice's total, tax included.")
    commit(root, "fix typo in docstring", {"models.py": models})
    models = models.replace(
        "    return sum(values) / len(values)",
        "    if not values:\n        return 0.0\n    return sum(values) / len(values)",
    )
    commit(root, "handle an empty list in average", {"models.py": models})
    renamed = {
        "models.py": models.replace("compute_total", "invoice_total"),
        "views.py": VIEWS.replace("compute_total", "invoice_total"),
        "urls.py": URLS.replace("compute_total", "invoice_total"),
        "reports.py": REPORTS.replace("compute_total", "invoice_total"),
    }
    commit(root, "rename compute_total to invoice_total in all callers", renamed)
    return root


def replay(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "tandem", "replay", "--edits", *args], capture_output=True, text=True, timeout=300
    )


def by_instruction(runs: list[dict[str, Any]], words: str) -> dict[str, Any]:
    [run] = [r for r in runs if words in r["instruction"]]
    return run


def test_replay_edits_reports_router_figures_and_the_simulated_comparison(repo: pathlib.Path) -> None:
    done = replay("--repo", str(repo), "--json", "--time-scale", "0.02", "--limit", "10")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    router = data["router"]
    assert router["tasks"] == 3 and router["hard"] == 1
    assert router["auc"] == 1.0  # the rename is the one hard task, and it scores highest
    edits = data["edits"]
    assert edits["simulated"] is True and edits["tasks"] == 3 and edits["time_scale"] == pytest.approx(50.0)
    strategies = edits["strategies"]
    assert set(strategies) == {
        "router", "fast-first", "always-fast", "always-accurate", "default (run)", "draft-check (run)", "hedged",
        "draft-check", "router-banded", "banded + hedge", "draft-gated", "banded, gated",
    }  # fmt: skip
    assert strategies["hedged"]["derived"] and not strategies["router"]["derived"]
    # The shipped strategy run through the edit path (banded on the router's score) meets the verdicts
    # derived for it from fast-first's and always-accurate's runs, task by task, and router-banded (the
    # shipped shape at the shipped edges here, with one history) is that derivation.
    assert not strategies["default (run)"]["derived"] and edits["default_agreement"] == [3, 3]
    assert strategies["default (run)"]["correct"] == strategies["router-banded"]["correct"]
    assert strategies["default (run)"]["cost_usd"] <= strategies["banded + hedge"]["cost_usd"] + 1e-9
    # Hedging gets fast-first's right answers, and never makes the user wait longer than it.
    assert strategies["hedged"]["correct"] == strategies["fast-first"]["correct"]
    assert strategies["hedged"]["simulated_s"] <= strategies["fast-first"]["simulated_s"] + 1e-6
    assert strategies["always-accurate"]["tokens"] > 0
    assert strategies["always-fast"]["accurate_served"] == 0
    # Fast-first reaches the accurate model only by escalating a fast answer that failed its checks.
    assert strategies["fast-first"]["accurate_served"] <= strategies["fast-first"]["escalated"]
    assert strategies["fast-first"]["correct"] >= strategies["always-fast"]["correct"]
    assert edits["bound_time_share"] is None or 0 < edits["bound_time_share"] <= 1.0
    assert strategies["always-accurate"]["accurate_served"] == 3
    for figure in strategies.values():
        assert figure["tasks"] == 3
        assert figure["correct"] + figure["wrong"] + figure["refused"] == 3
        assert figure["simulated_s"] > 0
    rename = by_instruction(edits["runs"], "rename compute_total")
    assert rename["served_by"]["router"] == "accurate" and rename["hard"] is True
    typo = by_instruction(edits["runs"], "fix typo")
    assert typo["route"].startswith("fast: ")
    # Routed fast; served by the accurate model only if the fast answer failed its checks (escalation).
    if typo["served_by"]["router"] == "accurate":
        assert strategies["router"]["escalated"] >= 1 and typo["results"]["always-fast"] != "correct"


def test_replay_edits_text_output_is_labelled_simulated(repo: pathlib.Path) -> None:
    done = replay("--repo", str(repo), "--time-scale", "0.02")
    assert done.returncode == 0, done.stderr
    assert "ROC AUC (router score -> hard)" in done.stdout
    assert "SIMULATED" in done.stdout and "always-accurate" in done.stdout


def test_router_only_needs_no_simulator(repo: pathlib.Path) -> None:
    done = replay("--repo", str(repo), "--json", "--router-only")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["edits"] is None and data["router"]["tasks"] == 3


def test_leave_one_out_judges_each_history_on_weights_fitted_without_it(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    other = other_history(tmp_path)
    done = replay("--repo", str(repo), "--repo", str(other), "--leave-one-out", "--router-only", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["leave_one_out"]
    assert data["repos"] == ["repo", "other"]
    held = {(h["repo"], h["selection"]): h for h in data["held_out"]}
    assert set(held) == {(r, s) for r in ("repo", "other") for s in ("changed", "user", "first")}
    assert held[("repo", "changed")]["tasks"] == 3 and held[("other", "changed")]["tasks"] == 2
    # The rename is the one hard task of each history and its instruction is broad: it ranks first.
    assert held[("repo", "changed")]["fitted_auc"] == 1.0 and held[("other", "changed")]["fitted_auc"] == 1.0
    alone = replay("--repo", str(repo), "--leave-one-out", "--router-only")
    assert alone.returncode == 1 and "at least two --repo" in alone.stderr


def test_leave_one_out_chooses_router_banded_edges_without_the_held_out_history(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, "start", {"a.py": MODELS, "b.py": VIEWS})
    commit(other, "fix typo", {"a.py": MODELS.replace("total.", "total!")})
    both = replay("--repo", str(repo), "--repo", str(other), "--leave-one-out", "--json", "--time-scale", "0.02")
    assert both.returncode == 0, both.stderr
    edits = json.loads(both.stdout)["edits"]
    assert set(edits) == {"repo", "other"}
    for name, other_name in (("repo", "other"), ("other", "repo")):
        assert edits[name]["band"] is not None and "router-banded" in edits[name]["strategies"]
        # From the other history's labels only (with two histories it has no held-out scores of its own:
        # no band, every edit hedged).
        assert edits[name]["band_source"].startswith(f"chosen from real labels on {other_name} (")


def test_simulated_edits_are_judged_on_the_code_the_commit_changed(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "logged"
    root.mkdir()
    git(root, "init", "-q")
    commit(root, "start", {"models.py": MODELS, "views.py": VIEWS, "CHANGES.md": "# Changes\n"})
    commit(root, "rename compute_total", {"models.py": MODELS.replace("compute_total", "grand"),
                                           "views.py": VIEWS.replace("compute_total", "grand"),
                                           "CHANGES.md": "# Changes\n\n- renamed\n"})  # fmt: skip
    [task] = scan_history(root, limit=1).tasks
    prepared = prepare(root, task)
    assert prepared is not None
    # The changelog line is no part of what the edit is asked for, nor of what it is judged on.
    assert set(prepared.truth) == set(prepared.shown) == {"models.py", "views.py"}


def test_errors_are_one_line(tmp_path: pathlib.Path) -> None:
    missing = replay()
    assert missing.returncode == 1 and "needs --repo" in missing.stderr
    not_git = replay("--repo", str(tmp_path))
    assert not_git.returncode == 1 and len(not_git.stderr.strip().splitlines()) == 1
    assert "not a git repository" in not_git.stderr.lower() or "git log failed" in not_git.stderr


def other_history(tmp_path: pathlib.Path) -> pathlib.Path:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    commit(other, "start", {"a.py": MODELS, "b.py": VIEWS})
    commit(other, "fix typo", {"a.py": MODELS.replace("total.", "total!")})
    commit(other, "rename compute_total everywhere", {n: t.replace("compute_total", "grand") for n, t in
                                                        {"a.py": MODELS, "b.py": VIEWS}.items()})  # fmt: skip
    return other


def test_simulated_edits_route_with_the_folds_fitted_as_the_shipped_weights_are(
    repo: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    result = evaluate_leave_one_out([repo, other_history(tmp_path)], limit=10)
    models = weights_by_held_out(result)
    assert set(models) == {"repo", "other"} and SHIPPED_FIT == "shape"
    # Each fold's set for ranges is the changed-region fit of that fold, fitted without the history it judges.
    changed = {h.repo: h.weights for h in result.held_out if h.selection == "changed"}
    assert {name: model.ranges for name, model in models.items()} == changed
    for name, model in models.items():
        assert model.definitions != model.ranges
        # The figure printed as the router an editor runs is that fold's model judged on the history left out.
        rows = [s for s in samples_of_repo(repo if name == "repo" else tmp_path / "other", limit=10)]
        scores = [model_logit(model, s.inputs["user"]) for s in rows]
        assert result.as_shipped[name]["user"] == roc_auc(scores, [s.hard for s in rows])


async def test_simulated_edits_route_and_edit_a_users_selection(repo: pathlib.Path, sim_factory: SimFactory) -> None:
    fast = sim_factory(profile="spark", ttft_ms=1, tokens_per_s=100_000.0)
    accurate = sim_factory(profile="codex", ttft_ms=1, tokens_per_s=100_000.0)
    handles = {fast.base_url: fast, accurate.base_url: accurate}

    def set_truth(base_url: str, files: Mapping[str, str]) -> None:
        handles[base_url].set_edit_truth(files, errors="off")

    models = Models(fast_url=fast.base_url, accurate_url=accurate.base_url)
    results = {
        kind: await evaluate_edits(
            repo, models, set_truth=set_truth, strategies=("router", "always-accurate"), selection=kind
        )
        for kind in ("user", "changed")
    }
    tasks = {t.commit[:10]: t for t in scan_history(repo, limit=50).tasks}
    for kind, result in results.items():
        assert result.selection == kind and result.tasks == 3
        # The truth is reachable from either selection: the whole file is shown and the answer may change
        # it outside the selection.
        assert result.strategies["always-accurate"].correct == 3
        for run in result.runs:
            first, end = tasks[run.commit].selected_lines(kind)
            assert run.features is not None and run.features.selection_lines == end - first
    [average] = [t for t in tasks.values() if "empty list" in t.instruction]
    # The commit inserts two lines before `return`: its changed region selects nothing, a user the function.
    assert average.selected_text("changed") == ""
    assert average.selected_text("user").startswith("def average(values):")
