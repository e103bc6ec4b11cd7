"""Unit tests of `completion.edit_runs`: the router at other boundaries, the hard label, the bound."""

from __future__ import annotations

import pytest

from tandem.completion.routing.router import score_of_pressure
from tandem.eval.edit_runs import TaskRun, knowing_hard, operating_points, oracle_bound


def run(
    fast: str,
    accurate: str,
    fast_s: float,
    accurate_s: float,
    *,
    hard: bool = False,
    first: str = "",
    first_s: float = 0.0,
    score: float = 0.0,
) -> TaskRun:
    return TaskRun(
        commit="c",
        instruction="i",
        hard=hard,
        changed_lines=1,
        files=1,
        route="",
        score=score,
        results={"always-fast": fast, "always-accurate": accurate, "fast-first": first or fast},
        simulated_s={"always-fast": fast_s, "always-accurate": accurate_s, "fast-first": first_s or fast_s},
        served_by={},
    )


def test_the_bound_takes_fast_answers_that_are_right_and_the_cheapest_accurate_ones() -> None:
    runs = [
        run("correct", "correct", 1.0, 10.0),  # fast is right: 1 s
        run("wrong", "correct", 1.0, 20.0),  # only accurate is right: 20 s if needed
        run("refused", "correct", 2.0, 60.0),  # only accurate is right, dearer
        run("wrong", "wrong", 1.0, 30.0),  # nobody: the fast attempt, 1 s
    ]
    # always-accurate is right 3 times; keeping all 3 needs both accurate answers.
    assert oracle_bound(runs, keep=1.0) == pytest.approx(1.0 + 20.0 + 60.0 + 1.0)
    # Keeping 2 of 3 (0.6): the fast answer and the cheaper accurate one; the dear task gets the fast try.
    assert oracle_bound(runs, keep=0.6) == pytest.approx(1.0 + 20.0 + 2.0 + 1.0)


def test_where_only_the_fast_answer_is_right_the_bound_takes_it() -> None:
    assert oracle_bound([run("wrong", "correct", 1.0, 5.0)], keep=1.0) == pytest.approx(5.0)
    assert oracle_bound([run("correct", "wrong", 1.0, 5.0)], keep=1.0) == pytest.approx(1.0)


def test_knowing_hard_takes_accurate_on_hard_tasks_and_fast_first_on_the_rest() -> None:
    runs = [
        run("wrong", "correct", 1.0, 40.0, hard=True),
        run("refused", "correct", 1.0, 9.0, first="correct", first_s=10.0),
        run("correct", "correct", 1.0, 9.0),
    ]
    correct, seconds = knowing_hard(runs)
    assert correct == 3
    assert seconds == pytest.approx(40.0 + 10.0 + 1.0)


def test_operating_points_send_tasks_at_or_over_the_boundary_to_the_accurate_model() -> None:
    runs = [
        # Scored very hard: fast-first gets it wrong, the accurate model right.
        run("wrong", "correct", 1.0, 40.0, score=score_of_pressure(3.0)),
        # Scored just hard: fast-first escalates and gets it right, dearer than asking accurate at once.
        run("refused", "correct", 1.0, 9.0, first="correct", first_s=10.0, score=score_of_pressure(1.2)),
        run("correct", "correct", 1.0, 9.0, score=score_of_pressure(0.2)),
    ]
    default, strict = operating_points(runs, accurate_correct=3, accurate_s=58.0, pressures=(1.0, 2.0))
    assert (default.to_accurate, strict.to_accurate) == (2, 1)
    assert default.keeps == strict.keeps == 1.0
    assert default.time_share == pytest.approx((40.0 + 9.0 + 1.0) / 58.0)
    assert strict.time_share == pytest.approx((40.0 + 10.0 + 1.0) / 58.0)
    assert default.accurate_score == 0.5
    lax = operating_points(runs, accurate_correct=3, accurate_s=58.0, pressures=(4.0,))[0]
    assert lax.to_accurate == 0 and lax.keeps == pytest.approx(2 / 3)
