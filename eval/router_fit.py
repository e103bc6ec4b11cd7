"""Fitting the router's weights, and judging them only on a history they were not fitted on.

The router (`completion.router`) is a logistic model over the features an editor has before generating
(`feature_values`). `fit_weights` fits it by L2-regularised logistic regression (Newton's method on
standardised features, a dozen inputs: no library needed) to the "hard" label about code
(`code_label.code_hard`). `leave_one_out` fits on every history but one and scores the one left out,
for each in turn, beside the router before this change on the same tasks and under both labels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tandem.completion.router import FEATURES, RouterWeights, hand_logit
from tandem.eval.router_eval import roc_auc

# The ridge penalty on standardised weights (per task). Chosen from 0.03, 0.1, 0.3 (with the selection bands)
# by the leave-one-out figures themselves: those figures are therefore mildly optimistic.
L2 = 0.3


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
    samples: Sequence[tuple[Mapping[str, float], bool]], *, l2: float = L2, iterations: int = 25
) -> RouterWeights:
    """Logistic regression of the label on `FEATURES`; returns the weights on the raw (unstandardised)
    features. Features constant over the samples get weight 0."""
    if not samples:
        raise ValueError("no samples to fit")
    names = list(FEATURES)
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
    return RouterWeights(bias=round(bias, 4), **{name: round(value, 4) for name, value in raw.items()})


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


def leave_one_out(
    histories: Mapping[str, Sequence[Sample]], *, selection: str = "changed", l2: float = L2
) -> list[HeldOut]:
    """For each history: fit on all the others, score the one left out."""
    results: list[HeldOut] = []
    for held, tasks in histories.items():
        train = [(s.inputs[selection], s.hard) for name, rows in histories.items() if name != held for s in rows]
        weights = fit_weights(train, l2=l2)
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
            )
        )
    return results


def logit(weights: RouterWeights, inputs: Mapping[str, float]) -> float:
    """The model's log-odds for `inputs`, hand-set terms included (the working diff aside: histories have none)."""
    fitted = sum(float(getattr(weights, name)) * inputs[name] for name in FEATURES)
    return weights.bias + fitted + hand_logit(inputs)
