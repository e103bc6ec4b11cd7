"""`tandem replay --edits --repo A --repo B --repo C --leave-one-out`: the router judged on histories it
was not fitted on.

For each history: its edit tasks (`history.scan_history`), each routed as the editor would route it, with
three selections:

    changed   the commit's changed region (first to last changed line): derived from the answer, so
              its size leaks how much the commit changed (an optimistic figure)
    user      the function or block enclosing the changed code a user would be working at (the hunk with
              the most changed lines of code, imports not counted: `user_selection.code_anchor`): what
              a user would select before knowing the answer
    first     the function or block enclosing the first changed line instead: the user's selection
              before that anchor, often the import paragraph, kept beside it to compare figures with

and labelled three times: the label about code (`code_label.code_hard`), the old one (any file counts),
and, for comparison, the label about code with tests counted as code (`count_tests`). Then
the router's weights are fitted on all histories but one and its ROC AUC taken on the one left out, for
each in turn, beside the router before this change (hand-set, tuned on tandem's own history) on the same
tasks. The ridge penalty is chosen inside each fold from the training histories alone
(`router_fit.choose_l2`); the figure at the fixed penalty is printed beside it.

Each task's file history (`file_history.read_history`), and the repository's last commits compared with its
instruction (`file_history.read_past_commits`), are read before the task's commit (at its parent), so the
answer is never in them; the router is fitted with them and without them (`HISTORY_FEATURES`, and each of
the others, left out), each inside the fold, and the held-out figures are printed. The shipped weights are
fitted once, on one of `FIT_OPTIONS` (the changed region, a user's selection, or both pooled), and an
editor routes whatever the user selects: each option's folds are judged with every selection
(`fit_options`). What ships is neither single set but `RouterModel`, a set per selection shape
(`router_shape`: changed regions fit the set for ranges, whole-definition selections the set for
definitions); its folds (`as_shipped`) give the figure of the router an editor runs. Single
features' AUCs per history (nothing fitted) show which only look good with the changed region.
Real figures: nothing here is simulated.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
from tandem.completion.routing.router import RouteInputs, RouterThresholds, feature_values, route_features
from tandem.completion.routing.weights import (
    FEATURES,
    HISTORY_FEATURES,
    LINES_FEATURES,
    SIMILAR_FEATURES,
    RouterModel,
    RouterWeights,
)
from tandem.eval.history import EditTask, scan_history
from tandem.eval.router_bands import LabelBand, bands_by_held_out, bands_on_all
from tandem.eval.router_before import before_score
from tandem.eval.router_eval import HARD_LINES, TreeSymbols, roc_auc
from tandem.eval.router_fit import L2, HeldOut, Sample, choose_l2, fit_weights, leave_one_out, logit
from tandem.eval.router_shape import definition_share, fit_model, judged, shape_folds

SELECTIONS = ("changed", "user", "first")
# Without any git history (the router before it), with all but the selected lines', and with all but the
# similar past commits.
WITHOUT_HISTORY = tuple(f for f in FEATURES if f not in (*HISTORY_FEATURES, *LINES_FEATURES, *SIMILAR_FEATURES))
FILE_HISTORY_ONLY = tuple(f for f in FEATURES if f not in LINES_FEATURES)
WITHOUT_SIMILAR = tuple(f for f in FEATURES if f not in SIMILAR_FEATURES)
# What the shipped weights may be fitted on: the changed region, a user's selection, or each task once with
# each (pooled). Each is fitted in each fold with its penalty chosen there judged with a user's selection
# (what an editor sends), and judged held out with every selection (`fit_options`).
FIT_OPTIONS: dict[str, tuple[str, ...]] = {"changed": ("changed",), "user": ("user",), "pooled": ("changed", "user")}
# The shipped router is `RouterModel`: a set of weights per selection shape (`eval.router_shape`).
SHIPPED_FIT = "shape"


def histories_before(repo: Path, tasks: Sequence[EditTask]) -> list[FileHistory | None]:
    """Each task's file history up to its parent commit (git subprocesses, a few at a time; given a minute
    each, not the server's 1.5 s, so that a figure does not depend on the machine's load)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda task: read_history(repo, task.path, rev=task.parent, timeout=60.0), tasks))


def past_commits_before(repo: Path, tasks: Sequence[EditTask]) -> list[tuple[PastCommit, ...] | None]:
    """Each task's repository's last commits up to its parent commit (the task's own is never among them)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda task: read_past_commits(repo, rev=task.parent, timeout=60.0), tasks))


def lines_histories_before(repo: Path, tasks: Sequence[EditTask]) -> list[dict[str, FileHistory | None]]:
    """Each task's selected lines' history up to its parent commit, per selection kind."""

    def one(task: EditTask) -> dict[str, FileHistory | None]:
        return {
            kind: read_lines_history(repo, task.path, *task.selected_lines(kind), rev=task.parent, timeout=60.0)
            if task.parent_text
            else None
            for kind in SELECTIONS
        }

    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(one, tasks))


def samples_of_repo(
    repo: Path,
    *,
    limit: int,
    thresholds: RouterThresholds | None = None,
    max_index_files: int = 3000,
    progress: Callable[[str], None] | None = None,
) -> list[Sample]:
    """The tasks of `repo`'s history as fitting samples (inputs for both selections, both labels)."""
    thresholds = thresholds or RouterThresholds()
    scan = scan_history(repo, limit=limit)
    trees = TreeSymbols(repo, max_files=max_index_files, max_file_bytes=200_000)
    samples: list[Sample] = []
    histories = histories_before(repo, scan.tasks)
    by_lines = lines_histories_before(repo, scan.tasks)
    pasts = past_commits_before(repo, scan.tasks)
    for task, history, lines, past in zip(scan.tasks, histories, by_lines, pasts, strict=True):
        symbols = trees.index(task.parent, task.path)
        inputs: dict[str, dict[str, float]] = {}
        before: dict[str, float] = {}
        for kind in SELECTIONS:
            features = route_features(
                RouteInputs(
                    mode="edit",
                    path=task.path,
                    selection=task.selected_text(kind),
                    instruction=task.instruction,
                    new_file=not task.parent_text,
                    symbols=symbols,
                    history=history,
                    lines_history=lines[kind] or FileHistory(path=task.path),
                    past_commits=past,
                ),
                thresholds=thresholds,
            )
            inputs[kind] = feature_values(features, thresholds)
            before[kind] = before_score(features, thresholds)
        samples.append(
            Sample(
                inputs=inputs,
                before=before,
                hard=task.is_code_hard(max_lines=HARD_LINES),
                hard_old=task.is_hard(max_lines=HARD_LINES),
                hard_with_tests=task.is_code_hard(max_lines=HARD_LINES, count_tests=True),
                history_commits=history.commits if history is not None else 0,
            )
        )
    if progress is not None:
        progress(f"{repo}: {len(samples)} tasks from {scan.commits_seen} commits")
    return samples


@dataclass(frozen=True, kw_only=True)
class LeaveOneOutResult:
    repos: tuple[str, ...]
    limit: int
    l2: float
    held_out: tuple[HeldOut, ...]
    # Per history and selection kind: each feature's AUC alone for the new label (nothing fitted).
    feature_auc: dict[str, dict[str, dict[str, float | None]]]
    # Fitted on every history (what the router ships); not a held-out figure. Its penalty is chosen the
    # way each fold's is, by leaving each of the histories out in turn.
    all_weights: RouterWeights
    all_l2: float = L2
    # The same without the file's history (`HISTORY_FEATURES` not fitted): held out, and fitted on all.
    held_out_without_history: tuple[HeldOut, ...] = ()
    # With the file's history but not the selected lines'.
    held_out_file_history_only: tuple[HeldOut, ...] = ()
    # With everything but the similar past commits.
    held_out_without_similar: tuple[HeldOut, ...] = ()
    all_weights_without_history: RouterWeights | None = None
    all_l2_without_history: float = L2
    # Tasks with a history read (a file with past commits before the task), per history.
    with_history: dict[str, int] = field(default_factory=dict)
    # Per fit option (`FIT_OPTIONS`), history and selection kind: the AUC of that option's weights fitted
    # without the history, judged with that selection (`judged_with_each`); `as_shipped` is the router by
    # selection shape's (`by_shape`).
    fit_options: dict[str, dict[str, dict[str, float | None]]] = field(default_factory=dict)
    as_shipped: dict[str, dict[str, float | None]] = field(default_factory=dict)
    shipped_fit: str = SHIPPED_FIT
    # The single set fitted on a user's selection (the router before it was split by shape): per history,
    # the weights fitted without it (on `FIT_OPTIONS["user"]`, the penalty chosen in the fold), judged
    # with a user's selection; what the simulated edits on that history route with (`weights_by_held_out`).
    shipped_folds: tuple[HeldOut, ...] = ()
    # The router by selection shape (`RouterModel`, what ships): per history, the model fitted without it
    # (`router_shape.shape_folds`); its AUC there per selection kind; the model fitted on all of them (the
    # shipped defaults, not a held-out figure); and each history's share of whole-definition selections.
    shape_folds: dict[str, RouterModel] = field(default_factory=dict)
    by_shape: dict[str, dict[str, float | None]] = field(default_factory=dict)
    shape_model: RouterModel | None = None
    definition_share: dict[str, dict[str, float]] = field(default_factory=dict)
    # The `[edit]` bands chosen from real labels (`router_bands`): per history, on the others alone (what its
    # simulated default is judged with); and on every history at once (what the defaults are set from).
    label_bands: dict[str, LabelBand] = field(default_factory=dict)
    label_band_all: LabelBand | None = None


def judged_with_each(
    histories: Mapping[str, Sequence[Sample]], held_out: Sequence[HeldOut]
) -> dict[str, dict[str, float | None]]:
    """Each history's AUC, per selection kind, of the weights of `held_out` (one fold per history) fitted
    without it. A fold fitted on one selection may be judged with another: the shipped weights are fitted
    once, and an editor routes whatever the user selects."""
    fitted = {h.repo: h.weights for h in held_out}
    return {
        name: {
            kind: roc_auc([logit(fitted[name], s.inputs[kind]) for s in rows], [s.hard for s in rows])
            for kind in SELECTIONS
            if all(kind in s.inputs for s in rows)
        }
        for name, rows in histories.items()
        if name in fitted
    }


def name_of(repo: Path) -> str:
    resolved = repo.resolve()
    return resolved.name or str(resolved)


def evaluate_leave_one_out(
    repos: Sequence[Path], *, limit: int, progress: Callable[[str], None] | None = None
) -> LeaveOneOutResult:
    """Samples of each repository, then the leave-one-out fit and scores for both selection kinds."""
    histories: dict[str, list[Sample]] = {}
    for repo in repos:
        name = name_of(repo)
        while name in histories:
            name += "'"
        histories[name] = samples_of_repo(repo, limit=limit, progress=progress)
    held: list[HeldOut] = []
    without: list[HeldOut] = []
    file_only: list[HeldOut] = []
    no_similar: list[HeldOut] = []
    for kind in SELECTIONS:
        held += leave_one_out(histories, selection=kind)
        without += leave_one_out(histories, selection=kind, features=WITHOUT_HISTORY)
        file_only += leave_one_out(histories, selection=kind, features=FILE_HISTORY_ONLY)
        no_similar += leave_one_out(histories, selection=kind, features=WITHOUT_SIMILAR)
    feature_auc = {
        name: {
            kind: {f: roc_auc([s.inputs[kind][f] for s in rows], [s.hard for s in rows]) for f in FEATURES}
            for kind in SELECTIONS
        }
        for name, rows in histories.items()
    }
    folds = {name: leave_one_out(histories, selection="user", fit_on=fit_on) for name, fit_on in FIT_OPTIONS.items()}
    options = {name: judged_with_each(histories, held_out) for name, held_out in folds.items()}
    shipped_on = FIT_OPTIONS["user"]
    by_shape = shape_folds(histories)
    shape_auc = judged(histories, by_shape, SELECTIONS)
    everything = [(s.inputs[kind], s.hard) for rows in histories.values() for s in rows for kind in shipped_on]
    all_l2 = choose_l2(histories, selection="user", fit_on=shipped_on)
    all_l2_without = choose_l2(histories, selection="user", fit_on=shipped_on, features=WITHOUT_HISTORY)
    return LeaveOneOutResult(
        repos=tuple(histories),
        limit=limit,
        l2=L2,
        held_out=tuple(held),
        feature_auc=feature_auc,
        all_weights=fit_weights(everything, l2=all_l2),
        all_l2=all_l2,
        held_out_without_history=tuple(without),
        held_out_file_history_only=tuple(file_only),
        held_out_without_similar=tuple(no_similar),
        all_weights_without_history=fit_weights(everything, l2=all_l2_without, features=WITHOUT_HISTORY),
        all_l2_without_history=all_l2_without,
        with_history={name: sum(1 for s in rows if s.history_commits) for name, rows in histories.items()},
        fit_options=options,
        as_shipped=shape_auc,
        shipped_folds=tuple(folds["user"]),
        shape_folds=by_shape,
        by_shape=shape_auc,
        shape_model=fit_model(histories),
        definition_share={kind: definition_share(histories, kind) for kind in SELECTIONS},
        label_bands=bands_by_held_out(histories),
        label_band_all=bands_on_all(histories),
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def render_text(result: LeaveOneOutResult) -> str:
    lines = [
        f"router, leave one history out ({', '.join(result.repos)}; up to {result.limit} tasks each; "
        f"logistic weights, ridge penalty chosen inside each fold): ROC AUC on the history left out of the fit",
        "  label: hard = more than one source file or more than 20 changed source lines (tests count only "
        "when nothing else changed); old label: any file, any line",
    ]
    for kind in SELECTIONS:
        what = {
            "changed": "selection = the commit's changed region (derived from the answer: optimistic)",
            "user": "selection = the function or block enclosing the changed code (what a user would select)",
            "first": "selection = the function or block enclosing the first changed line (often an import)",
        }[kind]
        lines.append(f"  {what}")
        fixed = f"L2 {result.l2:g}"
        lines.append(f"    {'held out':<12}{'tasks':>6}{'hard':>6}{'fitted':>9}{'(L2)':>7}{fixed:>8}{'before':>9}"
                     f"{'no hist.':>10}{'(L2)':>7}   {'old label: hard':>16}{'fitted':>9}{'before':>9}   "
                     f"{'tests counted: hard':>20}{'fitted':>9}")  # fmt: skip
        without = {h.repo: h for h in result.held_out_without_history if h.selection == kind}
        file_only = {h.repo: h for h in result.held_out_file_history_only if h.selection == kind}
        no_similar = {h.repo: h for h in result.held_out_without_similar if h.selection == kind}
        gains: list[float] = []
        lines_gains: list[float] = []
        similar_gains: list[float] = []
        for h in result.held_out:
            if h.selection != kind:
                continue
            w = without.get(h.repo)
            if w is not None and h.fitted_auc is not None and w.fitted_auc is not None:
                gains.append(h.fitted_auc - w.fitted_auc)
            f = file_only.get(h.repo)
            if f is not None and h.fitted_auc is not None and f.fitted_auc is not None:
                lines_gains.append(h.fitted_auc - f.fitted_auc)
            n = no_similar.get(h.repo)
            if n is not None and h.fitted_auc is not None and n.fitted_auc is not None:
                similar_gains.append(h.fitted_auc - n.fitted_auc)
            lines.append(
                f"    {h.repo:<12}{h.tasks:>6}{h.hard:>6}{_fmt(h.fitted_auc):>9}{f'({h.l2:g})':>7}"
                f"{_fmt(h.fitted_auc_fixed_l2):>8}{_fmt(h.before_auc):>9}"
                f"{_fmt(w.fitted_auc if w else None):>10}{f'({w.l2:g})' if w else '':>7}   "
                f"{h.hard_old:>16}{_fmt(h.fitted_auc_old_label):>9}{_fmt(h.before_auc_old_label):>9}   "
                f"{h.hard_with_tests:>20}{_fmt(h.fitted_auc_with_tests):>9}"
            )
        if gains:
            lines.append(
                f"    the histories: {' '.join(f'{g:+.3f}' for g in gains)} (mean {sum(gains) / len(gains):+.3f}) "
                "against the same fit without them"
            )
        if lines_gains:
            lines.append(
                f"    the selected lines' history on top of the file's: {' '.join(f'{g:+.3f}' for g in lines_gains)} "
                f"(mean {sum(lines_gains) / len(lines_gains):+.3f})"
            )
        if similar_gains:
            lines.append(
                f"    the similar past commits on top of the rest: {' '.join(f'{g:+.3f}' for g in similar_gains)} "
                f"(mean {sum(similar_gains) / len(similar_gains):+.3f})"
            )
    lines += [
        "  (before = the router before its weights were fitted: hand-set on tandem's own history, so its figure",
        "   on tandem's history is on the data it was tuned on. Not fitted here, and set with tandem's history in",
        "   view: the thresholds the features are scaled by and the instruction word lists, so tandem's fitted",
        "   figure is not wholly held out either. The leading-verb classes were written from the words' meaning,",
        "   but added after seeing every history's figures. 'fitted' = the penalty in brackets, chosen inside the",
        "   fold by leaving each training history out in turn; 'L2 "
        f"{result.l2:g}' = the fixed penalty, once chosen among three by the",
        "   figures themselves. 'tests counted': the same scores against the label with tests counted as code.",
        "   'no hist.' = fitted in the fold the same way without the file's and the selected lines' own history",
        "   and the similar past commits (its penalty in brackets).)",
        "  tasks whose file had past commits before the task: "
        + ", ".join(f"{name} {n}" for name, n in result.with_history.items()),
    ]
    if result.fit_options:
        lines.append(
            "  fitted on each option (penalty chosen in the fold judged with the enclosing block) and judged held out "
            "with each selection, changed region -> enclosing block -> first change's:"
        )
        for option, by_repo in result.fit_options.items():
            judged = [[kinds.get(kind) for kinds in by_repo.values()] for kind in SELECTIONS]
            means = [sum(v for v in row if v is not None) / max(1, sum(v is not None for v in row)) for row in judged]
            each = ", ".join(
                f"{name} " + "->".join(_fmt(kinds.get(kind)) for kind in SELECTIONS) for name, kinds in by_repo.items()
            )
            mean = "->".join(_fmt(m) for m in means)
            lines.append(f"    fitted on {'+'.join(FIT_OPTIONS[option]):<13}{each}; mean {mean}")
    if result.by_shape:
        lines.append(_shape_line(result))
    lines.append(
        "  single features alone, new label (nothing fitted), changed region -> enclosing block -> first change's:"
    )
    for name, kinds in result.feature_auc.items():
        parts = [f"{f} " + "->".join(_fmt(kinds[kind][f]) for kind in SELECTIONS) for f in FEATURES]
        lines.append(f"    {name}: " + ", ".join(parts))
    lines.append(
        f"  one set fitted on all of them (user, L2 {result.all_l2:g} chosen by leaving each out in turn; not a "
        "held-out figure): " + ", ".join(f"{k} {v:g}" for k, v in asdict(result.all_weights).items())
    )
    if result.shape_model is not None:
        for part in ("ranges", "definitions"):
            lines.append(
                f"  shipped, by shape, {part}: fitted on all of them (not a held-out figure): "
                + ", ".join(f"{k} {v:g}" for k, v in asdict(getattr(result.shape_model, part)).items())
            )
    if result.all_weights_without_history is not None:
        lines.append(
            f"  fitted on all of them without the histories (L2 {result.all_l2_without_history:g}): "
            + ", ".join(
                f"{k} {v:g}"
                for k, v in asdict(result.all_weights_without_history).items()
                if k
                not in (
                    *HISTORY_FEATURES,
                    *LINES_FEATURES,
                    *SIMILAR_FEATURES,
                    "history_missing",
                    "lines_missing",
                    "similar_missing",
                )
            )
        )
    return "\n".join(lines)


def _shape_line(result: LeaveOneOutResult) -> str:
    """The shipped router's held-out figures, and how many selections of each kind were whole definitions."""
    by_repo = result.by_shape
    means = []
    for kind in SELECTIONS:
        known = [v for kinds in by_repo.values() if (v := kinds.get(kind)) is not None]
        means.append(sum(known) / len(known) if known else None)
    each = ", ".join(
        f"{name} " + "->".join(_fmt(kinds.get(kind)) for kind in SELECTIONS) for name, kinds in by_repo.items()
    )
    shares = "; ".join(
        f"{kind} " + ", ".join(f"{name} {share:.0%}" for name, share in by_name.items())
        for kind, by_name in result.definition_share.items()
    )
    return (
        f"    shipped, by shape  {each}; mean {'->'.join(_fmt(m) for m in means)}\n"
        "      (a set of weights for ranges fitted on changed regions, one for whole definitions fitted on the user's "
        f"selections that are one; whole definitions among the selections: {shares})"
    )


def result_json(result: LeaveOneOutResult) -> dict[str, Any]:
    return asdict(result)


def render_json(result: LeaveOneOutResult) -> str:
    return json.dumps(result_json(result), indent=2)


def weights_by_held_out(result: LeaveOneOutResult) -> Mapping[str, RouterModel]:
    """{history: the model fitted without it the way the shipped model is fitted} (`shape_folds`): what an
    editor would run on a repository the router was not fitted on."""
    return result.shape_folds
