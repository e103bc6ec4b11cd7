"""How well the router's pre-generation features predict real edits: replaying a git history.

Each task of `eval.history` is routed exactly as an edit would be in the editor, seeing only
what the user would have shown: the selection and instruction (the selection a user would make, the
function or block enclosing the changed code, `EditTask.user_selection`, which the shipped weights are
fitted on; the commit's changed region, derived from the answer, is routed too and its AUC given
beside), the symbol index of the parent commit's tree (source files, bounded in number and size), the
file's history and the repository's last commits up to the parent commit (`file_history`), and no
working diff. The truth (lines and
files the commit changed) is used only to score the result: ROC AUC of `RouteDecision.score` for
"hard" under the label about code (`code_label.code_hard`: more than one source file or more than 20
changed source lines), and precision/recall of the accurate tier at the configured thresholds. Beside
them: the same under the old label (any file, any line), the router before its weights were fitted
(`router_before`) on the same tasks, and the AUCs of single features.

The shipped weights were fitted on three histories (tandem's own, flask, black): a figure on one of those
is on data the weights saw; `--leave-one-out` (`router_loo`) gives the held-out figures.

`tandem replay --edits --repo PATH [--json]` prints `render_text` or `render_json` of `evaluate_repo`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tandem.completion.routing.file_history import (
    FileHistory,
    PastCommit,
    read_history,
    read_lines_history,
    read_past_commits,
)
from tandem.completion.routing.router import RouteDecision, RouteInputs, RouterThresholds, route, route_features
from tandem.completion.routing.symbol_lookup import FileSymbols, SymbolIndex, SymbolLookup, file_symbols
from tandem.eval.history import EditTask, read_blobs, scan_history, tree_blobs
from tandem.eval.router_before import before_score

HARD_LINES = 20


@dataclass(frozen=True, kw_only=True)
class TaskOutcome:
    """One task: what the router decided, and what the commit really was."""

    commit: str
    instruction: str
    path: str
    score: float
    tier: str
    summary: str
    hard: bool
    hard_old: bool
    before_score: float
    changed_lines: int
    files: int


@dataclass(frozen=True, kw_only=True)
class RouterEvalResult:
    """The evaluation of the router on one repository's history."""

    repo: str
    commits_seen: int
    skipped: dict[str, int]
    tasks: int
    hard: int
    auc: float | None
    # The old label (any file, any line), and the router before its weights were fitted.
    hard_old: int
    auc_old_label: float | None
    before_auc: float | None
    before_auc_old_label: float | None
    precision: float | None
    recall: float | None
    true_positives: int
    false_positives: int
    false_negatives: int
    true_negatives: int
    # AUC of single features alone (selection size, cross-file reach, instruction words), for comparison.
    feature_auc: dict[str, float | None] = field(default_factory=dict)
    thresholds: RouterThresholds = field(default_factory=RouterThresholds)
    outcomes: tuple[TaskOutcome, ...] = ()
    # The selection routed ("user": the figures above; `EditTask.selected_lines`), and the AUC with the
    # commit's changed region as the selection instead (derived from the answer: optimistic).
    selection: str = "user"
    auc_changed_region: float | None = None


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """Area under the ROC curve, as the Mann-Whitney rank statistic (ties share their average rank).
    None when there are no positives or no negatives."""
    positives = sum(1 for label in labels if label)
    negatives = len(labels) - positives
    if positives == 0 or negatives == 0:
        return None
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1  # 1-based average rank of the tie group
        i = j + 1
    rank_sum = sum(rank for rank, label in zip(ranks, labels, strict=True) if label)
    return (rank_sum - positives * (positives + 1) / 2) / (positives * negatives)


def _shared_dirs(a: str, b: str) -> int:
    """How many leading directories paths `a` and `b` have in common."""
    shared = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        shared += 1
    return shared


class TreeSymbols:
    """Symbol indexes of commit trees, parsing each blob once across the whole history."""

    def __init__(self, repo: Path, *, max_files: int, max_file_bytes: int) -> None:
        self._repo = repo
        self._max_files = max_files
        self._max_file_bytes = max_file_bytes
        self._by_blob: dict[str, FileSymbols] = {}

    def index(self, rev: str, near: str) -> SymbolIndex:
        """The index of `rev`'s tree; past `max_files`, the files nearest to `near` in the tree."""
        blobs = tree_blobs(self._repo, rev, max_file_bytes=self._max_file_bytes)
        if len(blobs) > self._max_files:
            keep = sorted(blobs, key=lambda p: (-_shared_dirs(p, near), p))[: self._max_files]
            blobs = {p: blobs[p] for p in keep}
        missing = sorted({b for b in blobs.values() if b not in self._by_blob})
        for blob, text in read_blobs(self._repo, missing).items():
            self._by_blob[blob] = file_symbols(text)
        return SymbolIndex({p: self._by_blob[b] for p, b in blobs.items() if b in self._by_blob})


def lines_history_before(repo: Path, task: EditTask, kind: str = "changed") -> FileHistory:
    """The history of the task's selected lines (by default its changed region; `EditTask.selected_lines`)
    up to its parent commit; none read (a new file, or git could not answer) counts as no commit, as in the
    fit."""
    found = None
    if task.parent_text:
        first, end = task.selected_lines(kind)
        found = read_lines_history(repo, task.path, first, end, rev=task.parent, timeout=60.0)
    return found or FileHistory(path=task.path)


def decide(
    task: EditTask,
    symbols: SymbolLookup | None,
    thresholds: RouterThresholds,
    history: FileHistory | None = None,
    lines_history: FileHistory | None = None,
    past_commits: Sequence[PastCommit] | None = None,
    kind: str = "user",
) -> RouteDecision:
    """Route one history task as the editor would: edit mode, its selection (of `kind`:
    `EditTask.selected_text`) and instruction, the file's history and the repository's last commits before
    the commit, no working diff (a commit's diff is the truth, not the user's change in progress)."""
    features = route_features(
        RouteInputs(
            mode="edit",
            path=task.path,
            selection=task.selected_text(kind),
            instruction=task.instruction,
            new_file=not task.parent_text,
            symbols=symbols,
            history=history,
            lines_history=lines_history,
            past_commits=past_commits,
        ),
        thresholds=thresholds,
    )
    return route(features, thresholds)


def evaluate_tasks(
    tasks: Sequence[EditTask],
    *,
    symbols_for: Callable[[EditTask], SymbolLookup | None],
    thresholds: RouterThresholds,
    history_for: Callable[[EditTask], FileHistory | None] | None = None,
    lines_history_for: Callable[[EditTask], FileHistory | None] | None = None,
    past_commits_for: Callable[[EditTask], Sequence[PastCommit] | None] | None = None,
    kind: str = "user",
) -> tuple[list[RouteDecision], list[TaskOutcome]]:
    """Route every task with its selection of `kind`; `symbols_for` gives the symbol index of the task's
    parent tree, `history_for` its file's history up to the parent, `lines_history_for` that of the
    selected lines, `past_commits_for` the repository's last commits up to it."""
    decisions: list[RouteDecision] = []
    outcomes: list[TaskOutcome] = []
    for task in tasks:
        history = history_for(task) if history_for is not None else None
        lines_history = lines_history_for(task) if lines_history_for is not None else None
        past = past_commits_for(task) if past_commits_for is not None else None
        decision = decide(task, symbols_for(task), thresholds, history, lines_history, past, kind)
        decisions.append(decision)
        outcomes.append(
            TaskOutcome(
                commit=task.commit[:10],
                instruction=task.instruction,
                path=task.path,
                score=round(decision.score, 4),
                tier=decision.tier,
                summary=decision.summary(),
                hard=task.is_code_hard(max_lines=HARD_LINES),
                hard_old=task.is_hard(max_lines=HARD_LINES),
                before_score=round(before_score(decision.features, thresholds), 4),
                changed_lines=task.changed_lines,
                files=len(task.changes),
            )
        )
    return decisions, outcomes


def evaluate_repo(
    repo: Path,
    *,
    limit: int = 200,
    thresholds: RouterThresholds | None = None,
    max_index_files: int = 3000,
    max_index_file_bytes: int = 200_000,
) -> RouterEvalResult:
    """Build up to `limit` edit tasks from `repo`'s history, route each, and score the routes."""
    thresholds = thresholds or RouterThresholds()
    scan = scan_history(repo, limit=limit)
    trees = TreeSymbols(repo, max_files=max_index_files, max_file_bytes=max_index_file_bytes)
    indexes = {task.commit: trees.index(task.parent, task.path) for task in scan.tasks}
    histories = {task.commit: read_history(repo, task.path, rev=task.parent, timeout=60.0) for task in scan.tasks}
    pasts = {task.commit: read_past_commits(repo, rev=task.parent, timeout=60.0) for task in scan.tasks}

    def route_all(kind: str) -> tuple[list[RouteDecision], list[TaskOutcome]]:
        return evaluate_tasks(
            scan.tasks,
            symbols_for=lambda task: indexes[task.commit],
            thresholds=thresholds,
            history_for=lambda task: histories[task.commit],
            lines_history_for=lambda task: lines_history_before(repo, task, kind),
            past_commits_for=lambda task: pasts[task.commit],
            kind=kind,
        )

    decisions, outcomes = route_all("user")
    changed, _ = route_all("changed")
    labels = [o.hard for o in outcomes]
    old_labels = [o.hard_old for o in outcomes]
    before = [o.before_score for o in outcomes]
    predicted = [d.tier == "accurate" for d in decisions]
    tp = sum(1 for p, h in zip(predicted, labels, strict=True) if p and h)
    fp = sum(1 for p, h in zip(predicted, labels, strict=True) if p and not h)
    fn = sum(1 for p, h in zip(predicted, labels, strict=True) if not p and h)
    tn = len(labels) - tp - fp - fn
    feats = [d.features for d in decisions]
    feature_auc = {
        "selection lines": roc_auc([f.selection_lines for f in feats], labels),
        "cross-file reach": roc_auc(
            [len(f.mentioned_files) + len(f.caller_files) + 0.25 * len(f.dependency_files) for f in feats],
            labels,
        ),
        "instruction words": roc_auc(
            [
                2 * len(f.broad_words) + len(f.wide_words) + 0.5 * f.instruction_items - len(f.small_words)
                for f in feats
            ],
            labels,
        ),
    }
    return RouterEvalResult(
        repo=str(repo),
        commits_seen=scan.commits_seen,
        skipped=dict(scan.skipped),
        tasks=len(outcomes),
        hard=sum(labels),
        auc=roc_auc([d.score for d in decisions], labels),
        hard_old=sum(old_labels),
        auc_old_label=roc_auc([d.score for d in decisions], old_labels),
        before_auc=roc_auc(before, labels),
        before_auc_old_label=roc_auc(before, old_labels),
        precision=tp / (tp + fp) if tp + fp else None,
        recall=tp / (tp + fn) if tp + fn else None,
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
        true_negatives=tn,
        feature_auc=feature_auc,
        thresholds=thresholds,
        outcomes=tuple(outcomes),
        selection="user",
        auc_changed_region=roc_auc([d.score for d in changed], labels),
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def render_text(result: RouterEvalResult, *, show_tasks: int = 10) -> str:
    """A human summary: the figures, what was skipped, and the worst misroutes."""
    lines = [
        f"router evaluation on {result.repo}",
        f"  commits examined {result.commits_seen}, tasks {result.tasks} ({result.hard} hard: more than one "
        f"source file or more than {HARD_LINES} changed source lines; {result.hard_old} under the old label, "
        "any file, any line)",
    ]
    for why, count in sorted(result.skipped.items()):
        lines.append(f"  skipped {count}: {why}")
    lines += [
        f"  ROC AUC (router score -> hard): {_fmt(result.auc)}; the router before its weights were fitted "
        f"{_fmt(result.before_auc)}; old label: {_fmt(result.auc_old_label)}, "
        f"before {_fmt(result.before_auc_old_label)}",
        "  (selection = the function or block enclosing the changed code, what a user would select; with the "
        f"commit's changed region instead, derived from the answer: {_fmt(result.auc_changed_region)})",
        "  (the weights were fitted on tandem's, flask's and black's histories: on those this is not a held-out "
        "figure; see --leave-one-out)",
        f"  at the configured thresholds: precision {_fmt(result.precision)}, recall {_fmt(result.recall)} "
        f"(tp {result.true_positives}, fp {result.false_positives}, fn {result.false_negatives}, "
        f"tn {result.true_negatives})",
        "  single features alone: " + ", ".join(f"{name} {_fmt(auc)}" for name, auc in result.feature_auc.items()),
    ]
    misses = [o for o in result.outcomes if (o.tier == "accurate") != o.hard]
    misses.sort(key=lambda o: -abs(o.score - 0.5))
    if misses and show_tasks:
        lines.append(f"  misroutes ({len(misses)}), most confident first:")
        for o in misses[:show_tasks]:
            truth = f"{o.changed_lines} lines, {o.files} file{'s' * (o.files != 1)}"
            lines.append(f"    {o.commit} {o.instruction[:60]!r}: {o.summary}; truth {truth}")
    return "\n".join(lines)


def result_json(result: RouterEvalResult) -> dict[str, Any]:
    """The result as plain JSON-ready values."""
    return asdict(result)


def render_json(result: RouterEvalResult) -> str:
    return json.dumps(result_json(result), indent=2)
