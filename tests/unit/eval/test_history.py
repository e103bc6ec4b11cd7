"""Edit tasks from a git history, and the router evaluation on a repository the test builds itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hostile_git import PLACES, arm, ran

from tandem.completion.routing.router import RouterThresholds
from tandem.eval.history import GitError, edit_tasks, git, instruction_of, read_blobs, scan_history, tree_blobs
from tandem.eval.next_edit_tasks import next_edit_tasks
from tandem.eval.router_eval import TreeSymbols, decide, evaluate_repo, render_json, render_text, roc_auc


class Repo:
    """A throwaway git repository with a helper to commit files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.name", "Test")
        self.git("config", "user.email", "test@example.invalid")
        self.git("config", "commit.gpgsign", "false")

    def git(self, *args: str) -> str:
        done = subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def commit(self, subject: str, files: dict[str, str | bytes | None]) -> str:
        for path, content in files.items():
            target = self.root / path
            if content is None:
                self.git("rm", "-q", path)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
            self.git("add", path)
        self.git("commit", "-q", "-m", subject)
        return self.git("rev-parse", "HEAD")


def numbered(n: int, tag: str = "v") -> str:
    return "".join(f"{tag}{i} = {i}\n" for i in range(n))


MODELS = "class Invoice:\n    pass\n\n\ndef compute_total(invoice):\n    return invoice.amount\n"
VIEWS = "from app.models import compute_total\n\n\ndef show(invoice):\n    return compute_total(invoice)\n"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "repo")
    r.commit("Initial import", {"app/models.py": MODELS, "app/views.py": VIEWS, "README.md": "# app\n"})
    return r


def test_tasks_from_history(repo: Repo) -> None:
    small = repo.commit(
        "Fix typo in show (#12)", {"app/views.py": VIEWS.replace("return compute_total", "return  compute_total")}
    )
    renamed_models = MODELS.replace("compute_total", "invoice_total")
    renamed_views = VIEWS.replace("compute_total", "invoice_total")
    multi = repo.commit(
        "Rename compute_total to invoice_total everywhere",
        {"app/models.py": renamed_models, "app/views.py": renamed_views},
    )
    repo.commit("Add logo", {"logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary"})
    repo.commit("Update readme", {"README.md": "# app\n\nInvoices.\n"})
    big = repo.commit("Add constants table", {"app/consts.py": numbered(40)})
    repo.commit("Vendor a generated table", {"app/generated.py": numbered(2000, "g")})

    scan = scan_history(repo.root, limit=50)
    assert scan.commits_seen == 7
    assert scan.skipped == {
        "root commit (no parent)": 1,
        "binary files only": 1,
        "no source file changed": 1,
        "huge (over 1500 lines or 40 files)": 1,
    }
    by_commit = {t.commit: t for t in scan.tasks}
    assert [t.commit for t in scan.tasks] == [big, multi, small]

    task = by_commit[small]
    assert task.instruction == "Fix typo in show"  # the pull request's number is no part of it
    assert task.path == "app/views.py"
    assert task.selection == "    return compute_total(invoice)\n"
    assert (task.first_line, task.end_line) == (4, 5)
    assert task.changed_lines == 2 and task.files == ("app/views.py",)
    assert not task.is_hard()
    assert task.truth_text == VIEWS.replace("return compute_total", "return  compute_total")

    task = by_commit[multi]
    assert task.is_hard()
    assert set(task.files) == {"app/models.py", "app/views.py"}
    assert task.path == "app/views.py"  # both change 4 lines; ties go to the later path
    # From the first to the last changed line, in the parent (which has the typo fix).
    assert task.selection == VIEWS.replace("return compute_total", "return  compute_total")

    task = by_commit[big]
    assert task.parent_text == "" and task.selection == ""  # a new file: nothing to select
    assert task.changed_lines == 40 and task.is_hard()


def test_the_instruction_leaves_out_only_a_trailing_pull_request_number() -> None:
    assert instruction_of("Keep parentheses around the target (#5321)") == "Keep parentheses around the target"
    assert instruction_of("Revert #12 (see #13) for now") == "Revert #12 (see #13) for now"
    assert instruction_of("(#5)") == "(#5)"


def test_limit_and_pure_insertion(repo: Repo) -> None:
    repo.commit("Add discount", {"app/models.py": MODELS + "\n\nDISCOUNT = 0.1\n"})
    repo.commit("Add tax", {"app/models.py": MODELS + "\n\nDISCOUNT = 0.1\nTAX = 0.2\n"})
    (task,) = edit_tasks(repo.root, limit=1)
    assert task.instruction == "Add tax"
    # Only added lines: the selection is empty, at the insertion point.
    assert task.selection == "" and task.first_line == task.end_line == 9
    assert task.start == len(MODELS + "\n\nDISCOUNT = 0.1\n")


def test_rename_is_one_change(repo: Repo) -> None:
    repo.git("mv", "app/views.py", "app/pages.py")
    repo.git("commit", "-q", "-m", "Move views to pages")
    (task,) = edit_tasks(repo.root, limit=1)
    assert task.files == ("app/pages.py",)
    assert task.changes[0].old_path == "app/views.py"
    assert task.changed_lines == 0


def test_the_primary_file_is_code_before_its_tests_and_the_label_is_about_code(repo: Repo) -> None:
    fixed = MODELS.replace("return invoice.amount", "return invoice.amount or 0")
    tests = "".join(f"def test_{i}():\n    assert compute_total([]) == {i} * 0\n\n" for i in range(20))
    repo.commit("Fix compute_total for empty invoices", {"app/models.py": fixed, "tests/test_models.py": tests,
                                                         "CHANGES.md": "- fixed\n"})  # fmt: skip
    (task,) = edit_tasks(repo.root, limit=1)
    assert task.path == "app/models.py"  # not the longer test file
    assert task.is_hard() and not task.is_code_hard() and task.is_code_hard(count_tests=True)
    start, end = task.user_selection
    assert task.parent_text[start:end] == "def compute_total(invoice):\n    return invoice.amount\n"


def test_the_users_selection_is_the_function_changed_not_the_import_added(repo: Repo) -> None:
    views = "import math\n" + VIEWS
    views = views.replace("return compute_total(invoice)", "return math.ceil(compute_total(invoice))")
    repo.commit("Round the shown total up", {"app/views.py": views})
    (task,) = edit_tasks(repo.root, limit=1)
    assert task.first_line == 0 and task.code_anchor == 4  # the import is added before line 0
    start, end = task.user_selection
    assert task.parent_text[start:end] == "def show(invoice):\n    return compute_total(invoice)\n"
    start, end = task.user_selection_at_first_change
    assert task.parent_text[start:end] == "from app.models import compute_total\n"


def test_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(GitError, match="git log failed"):
        scan_history(tmp_path)


def test_the_evaluation_runs_none_of_a_repositorys_programs(tmp_path: Path) -> None:
    """A history under evaluation is someone else's: its config names filters, diff drivers, textconv,
    gpg, pagers and hooks (`hostile_git`), and the evaluation's git runs none of them (as the door's does)."""
    repo = Repo(tmp_path / "repo")
    first = repo.commit("Add the models", {"app/models.py": MODELS})
    repo.commit("Add the views", {"app/views.py": VIEWS})
    repo.commit("Round the total", {"app/models.py": MODELS.replace("return invoice.amount", "return round(x)")})
    out = tmp_path / "out"
    out.mkdir()
    arm(repo.root, out, PLACES)
    assert scan_history(repo.root, limit=5).tasks
    next_edit_tasks(repo.root, limit=5)
    blobs = tree_blobs(repo.root, "HEAD")
    assert read_blobs(repo.root, list(blobs.values()))
    assert git(repo.root, "show", f"{first}:app/models.py").decode() == MODELS
    assert ran(out) == []
    with pytest.raises(GitError, match="not a command"):
        git(repo.root, "checkout", first)  # would run the smudge filter and the hooks


def test_roc_auc() -> None:
    assert roc_auc([0.1, 0.2, 0.8, 0.9], [False, False, True, True]) == 1.0
    assert roc_auc([0.9, 0.8, 0.2, 0.1], [False, False, True, True]) == 0.0
    assert roc_auc([0.5, 0.5, 0.5, 0.5], [False, True, False, True]) == 0.5
    assert roc_auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == 0.75
    assert roc_auc([0.1, 0.2], [True, True]) is None


def test_evaluate_repo(repo: Repo) -> None:
    models, views = MODELS, VIEWS
    for i in range(4):
        views = views.replace(f"return compute_total(invoice){'' if i == 0 else f' + {i - 1}'}",
                              f"return compute_total(invoice) + {i}")  # fmt: skip
        repo.commit(f"Tweak show result {i}", {"app/views.py": views})
    models = models.replace("compute_total", "grand_total")
    views = views.replace("compute_total", "grand_total")
    repo.commit("Rename compute_total to grand_total across the app", {"app/models.py": models, "app/views.py": views})
    repo.commit("Add a large report module", {"app/report.py": numbered(60, "r")})
    body = "".join(f"    x{i} = invoice.amount * {i}\n" for i in range(30))
    models = models.replace("    return invoice.amount\n", body + "    return x0\n")
    repo.commit("Rewrite grand_total", {"app/models.py": models})

    result = evaluate_repo(repo.root, limit=20, thresholds=RouterThresholds())
    assert result.tasks == 7 and result.hard == 3
    assert result.auc == 1.0
    # The score ranks every hard commit above every easy one ...
    assert result.auc == 1.0
    # ... and at the default boundary each goes to the accurate model: the new file, the rename, and the
    # rewrite from a one-line selection by its instruction alone (weights fitted on a user's selection,
    # where the selection's size says little, lean on the instruction).
    assert (result.true_positives, result.false_positives, result.false_negatives) == (3, 0, 0)
    assert result.precision == 1.0 and result.recall == 1.0
    accurate = {o.instruction: o for o in result.outcomes if o.tier == "accurate"}
    assert set(accurate) == {"Rewrite grand_total", "Add a large report module",
                             "Rename compute_total to grand_total across the app"}  # fmt: skip
    assert "broad instruction ('across')" in accurate["Rename compute_total to grand_total across the app"].summary
    assert "instruction restructures code ('rewrite')" in accurate["Rewrite grand_total"].summary
    # Both labels and the router before its weights were fitted, on the same tasks.
    assert result.hard_old == 3 and result.auc_old_label == 1.0 and result.before_auc == 1.0
    text = render_text(result)
    assert "ROC AUC (router score -> hard): 1.000; the router before its weights were fitted 1.000" in text
    # Routed with a user's selection (the enclosing function), the changed region's figure beside it.
    assert result.selection == "user" and result.auc_changed_region is not None
    assert f"with the commit's changed region instead, derived from the answer: {result.auc_changed_region:.3f}" in text
    rewrite = next(t for t in edit_tasks(repo.root, limit=1) if t.instruction == "Rewrite grand_total")
    assert decide(rewrite, None, RouterThresholds()).features.selection_lines == 2  # the whole function
    assert decide(rewrite, None, RouterThresholds(), kind="changed").features.selection_lines == 1
    assert "skipped 1: root commit (no parent)" in text
    data = json.loads(render_json(result))
    assert data["auc"] == 1.0 and len(data["outcomes"]) == 7
    assert data["thresholds"]["large_selection_lines"] == 30


def test_index_keeps_the_files_nearest_the_edit(repo: Repo) -> None:
    repo.commit(
        "More files", {"lib/far.py": "def far_away():\n    pass\n", "app/near.py": "def close_by():\n    pass\n"}
    )
    head = repo.git("rev-parse", "HEAD")
    index = TreeSymbols(repo.root, max_files=3, max_file_bytes=10_000).index(head, "app/models.py")
    assert index.file_count() == 3
    assert index.files_defining("close_by") == {"app/near.py"}
    assert index.files_defining("far_away") == set()
