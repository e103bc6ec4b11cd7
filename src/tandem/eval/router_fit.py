"""Fitting the router's weights, and judging them only on a history they were not fitted on.

The router (`completion.routing.router`) is a logistic model over the features an editor has before generating
(`feature_values`). `fit_weights` fits it by L2-regularised logistic regression (Newton's method on
standardised features, a score of inputs: no library needed) to the "hard" label about code
(`code_label.code_hard`). `leave_one_out` fits on every history but one and scores the one left out,
for each in turn, beside the router before this change on the same tasks and under both labels.

The ridge penalty is chosen inside each fold (`choose_l2`): among `L2_GRID`, the one whose mean ROC AUC is
best when each *training* history in turn is left out of a fit on the other training histories. No choice
sees the history being judged. (With three histories, each fold has two training histories, so each inner
figure is a fit on one history judged on the other: a noisy choice, but an honest one.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tandem.completion.routing.router import hand_logit
from tandem.completion.routing.weights import (
    FEATURES,
    HISTORY_FEATURES,
    LINES_FEATURES,
    SIMILAR_FEATURES,
    RouterWeights,
)
from tandem.eval.router_eval import roc_auc

# The ridge penalty on standardised weights (per task), fixed: chosen from 0.03, 0.1, 0.3 (with the selection
# bands) by the leave-one-out figures themselves, so figures at it are mildly optimistic. Printed beside the
# penalty chosen inside each fold (`choose_l2`).
L2 = 0.3
L2_GRID = (0.03, 0.1, 0.3, 1.0)


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """x with matrix @ x = vector, by Gaussian elimination with partial pivoting (matrix is small, SPD)."""
    n = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= factor * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


def fit_weights(
    samples: Sequence[tuple[Mapping[str, float], bool]],
    *,
    l2: float = L2,
    iterations: int = 25,
    features: Sequence[str] = FEATURES,
) -> RouterWeights:
    """Logistic regression of the label on `features` (of `FEATURES`); returns the weights on the raw
    (unstandardised) features. Features constant over the samples, and those not in `features`, get 0."""
    if not samples:
        raise ValueError("no samples to fit")
    names = list(features)
    rows = [[float(x[name]) for name in names] for x, _ in samples]
    labels = [1.0 if y else 0.0 for _, y in samples]
    n, k = len(rows), len(names)
    mean = [sum(r[j] for r in rows) / n for j in range(k)]
    scale = [math.sqrt(sum((r[j] - mean[j]) ** 2 for r in rows) / n) for j in range(k)]
    z = [[1.0] + [(r[j] - mean[j]) / scale[j] if scale[j] > 1e-9 else 0.0 for j in range(k)] for r in rows]
    beta = [0.0] * (k + 1)
    for _ in range(iterations):
        grad = [0.0] * (k + 1)
        hess = [[0.0] * (k + 1) for _ in range(k + 1)]
        for row, y in zip(z, labels, strict=True):
            p = _sigmoid(sum(b * v for b, v in zip(beta, row, strict=True)))
            w = p * (1 - p)
            for i in range(k + 1):
                grad[i] += (p - y) * row[i] / n
                for j in range(i, k + 1):
                    hess[i][j] += w * row[i] * row[j] / n
        for i in range(k + 1):
            for j in range(i):
                hess[i][j] = hess[j][i]
            if i:  # the intercept is not penalised
                grad[i] += l2 * beta[i]
                hess[i][i] += l2
        step = _solve(hess, grad)
        beta = [b - s for b, s in zip(beta, step, strict=True)]
        if max(abs(s) for s in step) < 1e-8:
            break
    raw = {name: (beta[j + 1] / scale[j] if scale[j] > 1e-9 else 0.0) for j, name in enumerate(names)}
    bias = beta[0] - sum(raw[name] * mean[j] for j, name in enumerate(names))
    unused = dict.fromkeys((name for name in FEATURES if name not in raw), 0.0)
    # The average task's history terms, for a request with no history to read.
    missing = sum(raw[name] * mean[j] for j, name in enumerate(names) if name in HISTORY_FEATURES)
    lines_missing = sum(raw[name] * mean[j] for j, name in enumerate(names) if name in LINES_FEATURES)
    similar_missing = sum(raw[name] * mean[j] for j, name in enumerate(names) if name in SIMILAR_FEATURES)
    return RouterWeights(
        bias=round(bias, 4),
        history_missing=round(missing, 4),
        lines_missing=round(lines_missing, 4),
        similar_missing=round(similar_missing, 4),
        **unused,
        **{name: round(value, 4) for name, value in raw.items()},
    )


@dataclass(frozen=True, kw_only=True)
class Sample:
    """One task of one history: the model's inputs for each kind of selection, and both labels."""

    # Inputs by selection kind ("changed": the commit's changed region; "user": the enclosing block).
    inputs: Mapping[str, Mapping[str, float]]
    # The router before this change's score, by selection kind.
    before: Mapping[str, float]
    hard: bool  # the label about code
    hard_old: bool  # the old label (any file counts)
    hard_with_tests: bool = False  # the label about code with tests counted as code (for comparison)
    history_commits: int = 0  # past commits of the task's file read before it (0: none, or no history)


@dataclass(frozen=True, kw_only=True)
class HeldOut:
    """One history left out of the fit: ROC AUCs on it of the router fitted on the others and of the
    router before this change, for one selection kind, under the new label and the old."""

    repo: str
    selection: str
    tasks: int
    hard: int
    hard_old: int
    fitted_auc: float | None
    before_auc: float | None
    fitted_auc_old_label: float | None
    before_auc_old_label: float | None
    weights: RouterWeights
    # The label about code with tests counted: hard tasks, and the same scores' AUC for it.
    hard_with_tests: int = 0
    fitted_auc_with_tests: float | None = None
    # The ridge penalty the fit used (chosen inside the fold when `leave_one_out` was given none), and the
    # AUC at the fixed `L2` for comparison.
    l2: float = L2
    fitted_auc_fixed_l2: float | None = None
    # The selection kinds the weights were fitted on (`leave_one_out`'s `fit_on`).
    fitted_on: tuple[str, ...] = ()


def _rows(
    histories: Mapping[str, Sequence[Sample]], names: Sequence[str], fit_on: Sequence[str]
) -> list[tuple[Mapping[str, float], bool]]:
    """Each task of `names` once per selection kind in `fit_on` (pooled: a task twice, with each selection)."""
    return [(s.inputs[kind], s.hard) for name in names for s in histories[name] for kind in fit_on]


def _held_out_auc(
    histories: Mapping[str, Sequence[Sample]],
    train: Sequence[str],
    test: str,
    selection: str,
    l2: float,
    features: Sequence[str] = FEATURES,
    fit_on: Sequence[str] | None = None,
) -> float | None:
    weights = fit_weights(_rows(histories, train, fit_on or (selection,)), l2=l2, features=features)
    tasks = histories[test]
    return roc_auc([logit(weights, s.inputs[selection]) for s in tasks], [s.hard for s in tasks])


def choose_l2(
    histories: Mapping[str, Sequence[Sample]],
    *,
    selection: str = "changed",
    grid: Sequence[float] = L2_GRID,
    features: Sequence[str] = FEATURES,
    fit_on: Sequence[str] | None = None,
) -> float:
    """The penalty in `grid` with the best mean ROC AUC over `histories`, each left out in turn of a fit on
    the others (the first of equals), fitted on the `fit_on` selections (default: `selection`) and judged
    with `selection`. Given only the training histories, it never sees the judged one."""
    names = list(histories)
    if len(names) < 2:
        return L2

    def mean_auc(l2: float) -> float:
        aucs = [
            _held_out_auc(histories, [n for n in names if n != test], test, selection, l2, features, fit_on)
            for test in names
        ]
        known = [a for a in aucs if a is not None]
        return sum(known) / len(known) if known else 0.0

    return max(grid, key=lambda l2: (mean_auc(l2), -grid.index(l2)))


def leave_one_out(
    histories: Mapping[str, Sequence[Sample]],
    *,
    selection: str = "changed",
    l2: float | None = None,
    features: Sequence[str] = FEATURES,
    fit_on: Sequence[str] | None = None,
) -> list[HeldOut]:
    """For each history: fit on all the others, score the one left out with `selection`. `l2` None: the
    penalty is chosen inside each fold from the training histories alone (`choose_l2`). `features`: the
    inputs fitted (the others get weight 0). `fit_on`: the selection kinds fitted on (default `selection`;
    several pool each task once per kind)."""
    fit_on = tuple(fit_on or (selection,))
    results: list[HeldOut] = []
    for held, tasks in histories.items():
        names = [name for name in histories if name != held]
        train = {n: histories[n] for n in names}
        chosen = l2 if l2 is not None else choose_l2(train, selection=selection, features=features, fit_on=fit_on)
        weights = fit_weights(_rows(histories, names, fit_on), l2=chosen, features=features)
        scores = [logit(weights, s.inputs[selection]) for s in tasks]
        before = [s.before[selection] for s in tasks]
        new, old = [s.hard for s in tasks], [s.hard_old for s in tasks]
        results.append(
            HeldOut(
                repo=held,
                selection=selection,
                tasks=len(tasks),
                hard=sum(new),
                hard_old=sum(old),
                fitted_auc=roc_auc(scores, new),
                before_auc=roc_auc(before, new),
                fitted_auc_old_label=roc_auc(scores, old),
                before_auc_old_label=roc_auc(before, old),
                weights=weights,
                hard_with_tests=sum(s.hard_with_tests for s in tasks),
                fitted_auc_with_tests=roc_auc(scores, [s.hard_with_tests for s in tasks]),
                l2=chosen,
                fitted_auc_fixed_l2=_held_out_auc(histories, names, held, selection, L2, features, fit_on),
                fitted_on=fit_on,
            )
        )
    return results


def logit(weights: RouterWeights, inputs: Mapping[str, float]) -> float:
    """The model's log-odds for `inputs`, hand-set terms included (the working diff aside: histories have none)."""
    fitted = sum(float(getattr(weights, name)) * inputs[name] for name in FEATURES)
    missing = weights.history_missing * inputs.get("history_missing", 0.0)
    missing += weights.lines_missing * inputs.get("lines_missing", 0.0)
    missing += weights.similar_missing * inputs.get("similar_missing", 0.0)
    return weights.bias + missing + fitted + hand_logit(inputs)
