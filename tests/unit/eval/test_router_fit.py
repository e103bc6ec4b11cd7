"""Unit tests of the label about code, the user's selection, the router's fit and leave-one-out."""

from __future__ import annotations

import dataclasses
import math
import random

import pytest

from tandem.completion.routing.weights import FEATURES, HISTORY_FEATURES, SIMILAR_FEATURES, RouterWeights
from tandem.eval.code_label import code_files, code_hard, file_role
from tandem.eval.history import EditTask, FileChange
from tandem.eval.router_fit import L2, L2_GRID, Sample, choose_l2, fit_weights, leave_one_out, logit
from tandem.eval.router_loo import judged_with_each
from tandem.eval.router_shape import fit_model, judged, model_logit, shape_folds
from tandem.eval.user_selection import code_anchor, code_line_flags, enclosing_block


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("src/app/views.py", "source"),
        ("flask/app.py", "source"),
        ("tests/test_views.py", "test"),
        ("tests/data/cases/comments.py", "test"),
        ("pkg/views_test.go", "test"),
        ("web/button.spec.ts", "test"),
        ("conftest.py", "test"),
        ("docs/conf.py", "doc"),
        ("docs/examples/hello.py", "doc"),
        ("setup.py", "config"),
        (".github/workflows/release.sh", "config"),
        ("proto/api_pb2.py", "generated"),
        ("static/app.min.js", "generated"),
        ("vendor/lib/x.go", "generated"),
        ("CHANGES.rst", "other"),
        ("poetry.lock", "other"),
        ("pyproject.toml", "other"),
        ("README.md", "other"),
    ],
)
def test_change_roles(path: str, role: str) -> None:
    assert file_role(path) == role


def change(path: str, added: int, deleted: int = 0) -> FileChange:
    return FileChange(path=path, added=added, deleted=deleted)


def test_a_fix_with_its_changelog_line_and_regression_test_is_easy() -> None:
    changes = [change("src/app.py", 3, 1), change("CHANGES.rst", 2), change("tests/test_app.py", 30)]
    assert not code_hard(changes)
    # Counting tests, the same commit would be hard: the choice the label makes.
    assert code_hard(changes, count_tests=True)
    assert [c.path for c in code_files(changes)] == ["src/app.py"]


def test_two_source_files_or_many_source_lines_are_hard() -> None:
    assert code_hard([change("src/a.py", 1), change("src/b.py", 1)])
    assert code_hard([change("src/a.py", 15, 6)])
    assert not code_hard([change("src/a.py", 15, 5), change("docs/index.rst", 400)])


def test_a_change_to_tests_alone_is_judged_on_the_tests() -> None:
    assert not code_hard([change("tests/test_a.py", 4)])
    assert code_hard([change("tests/test_a.py", 4), change("tests/test_b.py", 4)])


SOURCE = """import os


def outer(a,
          b):
    x = 1
    if x:
        return 2
    return 3


class K:
    @property
    def m(self):
        return 1

    def n(self):
        pass


X = 1
Y = 2
"""


@pytest.mark.parametrize(
    ("changed", "selected"),
    [
        (7, (3, 9)),  # inside a nested block: the whole function, signature continuation included
        (14, (12, 15)),  # a method: with its decorator, not the whole class
        (13, (12, 15)),  # the header line itself
        (20, (20, 22)),  # module level: the paragraph
        (0, (0, 1)),
    ],
)
def test_the_selection_a_user_would_make(changed: int, selected: tuple[int, int]) -> None:
    assert enclosing_block(SOURCE, changed) == selected


def test_a_huge_block_falls_back_to_the_paragraph() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(200))
    text = "def big():\n" + body[:-1] + "\n\n    y = 1\n    z = 2\n"
    lines = text.splitlines()
    first, end = enclosing_block(text, len(lines) - 1, max_lines=150)
    assert lines[first:end] == ["    y = 1", "    z = 2"]
    assert enclosing_block("", 3) == (0, 0)


def synthetic(n: int, seed: int, shift: float = 0.0) -> list[tuple[dict[str, float], bool]]:
    """Tasks whose label depends on `selection` and `callers` only (plus noise)."""
    rng = random.Random(seed)
    samples = []
    for _ in range(n):
        x = {name: rng.random() for name in FEATURES} | {"broad": 0.0}
        z = 4 * x["selection"] + 2 * x["callers"] - 3 + shift + rng.gauss(0, 0.5)
        samples.append((x, z > 0))
    return samples


def test_the_fit_finds_the_informative_features() -> None:
    weights = fit_weights(synthetic(400, 1), l2=0.01)
    assert weights.selection > 2 and weights.callers > 1
    noise = [abs(getattr(weights, name)) for name in FEATURES if name not in ("selection", "callers")]
    assert max(noise) < 0.6 * weights.callers
    x = {**dict.fromkeys(FEATURES, 0.5), "broad": 0.0}
    assert logit(weights, x) == pytest.approx(weights.bias + sum(getattr(weights, name) * 0.5 for name in FEATURES))


def test_a_constant_feature_gets_no_weight() -> None:
    samples = [({**x, "new_file": 0.0}, y) for x, y in synthetic(200, 2)]
    assert fit_weights(samples).new_file == 0.0
    with pytest.raises(ValueError):
        fit_weights([])


def test_leave_one_out_scores_each_history_on_weights_fitted_without_it() -> None:
    def history(seed: int, shift: float) -> list[Sample]:
        return [
            Sample(inputs={"changed": x}, before={"changed": 0.5}, hard=y, hard_old=True, hard_with_tests=y)
            for x, y in synthetic(150, seed, shift)
        ]

    histories = {"a": history(3, 0.0), "b": history(4, 0.5), "c": history(5, -0.5)}
    results = leave_one_out(histories, selection="changed")
    assert [r.repo for r in results] == ["a", "b", "c"]
    for r in results:
        assert r.fitted_auc is not None and r.fitted_auc > 0.85
        assert r.before_auc == 0.5  # a constant score ranks nothing
        assert r.fitted_auc_old_label is None  # every task hard under the old label: no AUC
        # The label with tests counted is scored with the same scores (here it is the same label).
        assert r.hard_with_tests == r.hard and r.fitted_auc_with_tests == r.fitted_auc
        assert isinstance(r.weights, RouterWeights)
    # Each fold's weights differ: each is fitted without its own history.
    assert len({r.weights for r in results}) == 3
    assert not math.isnan(results[0].weights.bias)


def test_the_penalty_is_chosen_from_the_training_histories_alone() -> None:
    def history(seed: int, shift: float) -> list[Sample]:
        return [
            Sample(inputs={"changed": x}, before={"changed": 0.5}, hard=y, hard_old=y)
            for x, y in synthetic(120, seed, shift)
        ]

    histories = {"a": history(6, 0.0), "b": history(7, 0.5), "c": history(8, -0.5)}
    results = leave_one_out(histories, selection="changed")
    for r in results:
        training = {name: rows for name, rows in histories.items() if name != r.repo}
        assert r.l2 in L2_GRID and r.l2 == choose_l2(training, selection="changed")
        assert r.fitted_auc_fixed_l2 is not None
    # Given the penalty, nothing is chosen and the fixed figure is the fitted one.
    fixed = leave_one_out(histories, selection="changed", l2=L2)
    assert all(r.l2 == L2 and r.fitted_auc == r.fitted_auc_fixed_l2 for r in fixed)
    assert choose_l2({"a": histories["a"]}) == L2  # one history: nothing to leave out


def test_the_users_anchor_is_the_hunk_with_the_most_changed_code() -> None:
    # The commit adds an import (a hunk before line 0) and rewrites the body of m (line 14, one line for
    # five): the first changed line's block is the import paragraph, the anchor's is the method.
    truth = SOURCE.replace("        return 1\n", "".join(f"        y{i} = {i}\n" for i in range(5)))
    truth = "import sys\n" + truth
    hunks = ((0, 0, 0, 1), (14, 15, 15, 20))
    assert code_anchor(SOURCE, truth, hunks) == 14
    task = EditTask(
        commit="c", parent="p", instruction="x", path="a.py", parent_text=SOURCE, truth_text=truth,
        first_line=0, end_line=15, start=0, end=0, changes=(), code_anchor=code_anchor(SOURCE, truth, hunks),
    )  # fmt: skip
    lines = SOURCE.splitlines(keepends=True)
    start, end = task.user_selection
    assert SOURCE[start:end] == "".join(lines[12:15])
    start, end = task.user_selection_at_first_change
    assert SOURCE[start:end] == lines[0]
    assert dataclasses.replace(task, code_anchor=None).user_selection == task.user_selection_at_first_change


def test_imports_comments_and_blanks_are_not_code_and_code_wins_over_size() -> None:
    text = "from a import (\n    b,\n    c,\n)\n# note\n\nx = f(b)\n"
    assert code_line_flags(text) == [False, False, False, False, False, False, True]
    # A larger hunk of imports loses to a one-line change of code; it removes no code, so the anchor is
    # where it inserts (its start), and hunks of no code at all anchor at the first.
    assert code_anchor(text, text, ((0, 4, 0, 4), (6, 6, 6, 7))) == 6
    assert code_anchor(text, text, ((1, 3, 1, 3), (4, 6, 4, 6))) == 1
    assert code_anchor(text, text, ()) is None


def test_each_fit_option_is_judged_with_each_selection() -> None:
    # The label follows `selection` in the changed region's inputs; the user's selection carries the same
    # value reversed, so a fit on the changed region ranks the user's selections backwards, a fit on the
    # user's selection ranks them right, and a fit on both pooled learns little from `selection`.
    def history(seed: int) -> list[Sample]:
        rows = []
        for x, y in synthetic(120, seed):
            flipped = {**x, "selection": 1.0 - x["selection"]}
            before = {"changed": 0.5, "user": 0.5}
            rows.append(Sample(inputs={"changed": x, "user": flipped}, before=before, hard=y, hard_old=y))
        return rows

    histories = {"a": history(9), "b": history(10), "c": history(11)}
    held = leave_one_out(histories, selection="changed")
    shipped = judged_with_each(histories, held)
    assert set(shipped) == {"a", "b", "c"}
    by_user = judged_with_each(histories, leave_one_out(histories, selection="user", fit_on=("user",)))
    pooled_held = leave_one_out(histories, selection="user", fit_on=("changed", "user"))
    pooled = judged_with_each(histories, pooled_held)
    for r in held:
        assert r.fitted_on == ("changed",) and shipped[r.repo]["changed"] == r.fitted_auc
        user = shipped[r.repo]["user"]
        assert user is not None and r.fitted_auc is not None and user < r.fitted_auc - 0.2
        assert by_user[r.repo]["user"] == pytest.approx(r.fitted_auc, abs=0.02)
        assert by_user[r.repo]["changed"] == pytest.approx(user, abs=0.02)
        assert user < pooled[r.repo]["user"] < by_user[r.repo]["user"]  # type: ignore[operator]
        assert "first" not in shipped[r.repo]  # a selection the samples do not carry is left out
    assert all(h.fitted_on == ("changed", "user") for h in pooled_held)
    # Pooled, each task counts once per selection: the fit is that of the rows listed twice.
    rows = [(s.inputs[k], s.hard) for n in ("b", "c") for s in histories[n] for k in ("changed", "user")]
    assert pooled_held[0].weights == fit_weights(rows, l2=pooled_held[0].l2)


def test_the_missing_histories_stand_in_as_the_average_tasks_terms() -> None:
    samples = synthetic(300, 12)
    weights = fit_weights(samples, l2=0.01)
    for group, missing in ((HISTORY_FEATURES, "history_missing"), (SIMILAR_FEATURES, "similar_missing")):
        terms = [getattr(weights, f) * sum(x[f] for x, _ in samples) / len(samples) for f in group]
        assert all(terms)
        assert getattr(weights, missing) == pytest.approx(sum(terms), abs=2e-3)
    # The logit adds it for a task without that history.
    x = {**samples[0][0], "similar_missing": 1.0}
    assert logit(weights, x) - logit(weights, samples[0][0]) == pytest.approx(weights.similar_missing)


def test_the_router_by_shape_scores_each_shape_with_the_set_fitted_on_it() -> None:
    # In a whole definition `selection` points the other way than in a range (as the selected function's
    # size did across real histories): one set fitted on both learns little from it, a set per shape learns
    # each direction. Half the user's selections are whole definitions, the rest are ranges like the
    # changed region.
    def history(seed: int) -> list[Sample]:
        rows = []
        for i, (x, y) in enumerate(synthetic(160, seed)):
            changed = {**x, "whole_definition": 0.0}
            whole = i % 2 == 0
            user = {**x, "selection": 1.0 - x["selection"], "whole_definition": 1.0} if whole else changed
            before = {"changed": 0.5, "user": 0.5}
            rows.append(Sample(inputs={"changed": changed, "user": user}, before=before, hard=y, hard_old=y))
        return rows

    histories = {"a": history(21), "b": history(22), "c": history(23)}
    folds = shape_folds(histories)
    by_shape = judged(histories, folds, ("changed", "user"))
    pooled = judged_with_each(histories, leave_one_out(histories, selection="user", fit_on=("changed", "user")))
    for name, model in folds.items():
        assert model.ranges.selection > 1 and model.definitions.selection < -1
        # The ranges' set is the changed-region fit without the history; the definitions' set sees only
        # the whole definitions of the others.
        others = [n for n in histories if n != name]
        ranges_rows = [(s.inputs["changed"], s.hard) for n in others for s in histories[n]]
        assert model.ranges.bias == fit_weights(ranges_rows, l2=model_l2(model.ranges, ranges_rows)).bias
        user_auc, pooled_auc = by_shape[name]["user"], pooled[name]["user"]
        assert user_auc is not None and pooled_auc is not None and user_auc > pooled_auc + 0.1
        x = histories[name][0].inputs["user"]
        assert model_logit(model, x) == logit(model.definitions, x)
    # A history without a whole definition: the ranges' set scores both.
    plain = {n: [dataclasses.replace(s, inputs={"changed": s.inputs["changed"], "user": s.inputs["changed"]})
                 for s in rows] for n, rows in histories.items()}  # fmt: skip
    model = fit_model(plain)
    assert model.definitions == model.ranges


def model_l2(weights: RouterWeights, rows: list[tuple[dict[str, float], bool]]) -> float:
    """The grid's penalty whose fit on `rows` gives `weights` (the one `choose_l2` picked)."""
    return next(l2 for l2 in L2_GRID if fit_weights(rows, l2=l2) == weights)
