"""The escalation rule (`completion.edit.escalation.after_failure`) as the pure function of a failed attempt it is:
which failures hand an edit to the other model, and which end it."""

from __future__ import annotations

import pytest

from tandem.completion.edit.escalation import after_failure
from tandem.completion.edit.types import Attempt, AttemptOutcome
from tandem.completion.routing.router import Tier


def failed(tier: Tier, outcome: AttemptOutcome, error: str = "why") -> Attempt:
    return Attempt(tier=tier, model="m", outcome=outcome, error=error)


@pytest.mark.parametrize("tier", ["fast", "accurate"])
@pytest.mark.parametrize("other_ready", [True, False])
def test_an_edit_the_user_typed_over_or_the_gate_refused_ends_whatever_is_left(tier: Tier, other_ready: bool) -> None:
    conflict = after_failure(tier, failed(tier, "conflict", "you changed line 3"), other_ready=other_ready)
    assert (conflict.escalation, conflict.message, conflict.conflict) == ("", "you changed line 3", True)
    refused = after_failure(tier, failed(tier, "refused", "secret.py holds a key"), other_ready=other_ready)
    assert refused.escalation == "" and refused.plain
    assert refused.message == "not sent to a model: secret.py holds a key"


@pytest.mark.parametrize("tier", ["fast", "accurate"])
def test_a_model_that_is_down_or_slow_hands_over_while_the_other_is_untried(tier: Tier) -> None:
    other = "accurate" if tier == "fast" else "fast"
    down = after_failure(tier, failed(tier, "unavailable", "503"), other_ready=True)
    assert down.escalation == f"{tier} model unavailable (503): the {other} model served"
    assert down.notice == f"the {tier} model is unavailable (503)" and not down.message
    slow = after_failure(tier, failed(tier, "timeout", "no answer in 30 s"), other_ready=True)
    assert slow.escalation == f"{tier} model timed out (no answer in 30 s): re-run on the {other} model"
    for outcome in ("unavailable", "timeout"):
        ended = after_failure(tier, failed(tier, outcome, "x"), other_ready=False)  # type: ignore[arg-type]
        assert ended.escalation == "" and ended.message == "x" and not ended.plain


@pytest.mark.parametrize("outcome", ["unparsable", "invalid", "failed"])
def test_only_the_fast_models_rejected_answer_is_asked_again_of_the_accurate_one(outcome: AttemptOutcome) -> None:
    fast = after_failure("fast", failed("fast", outcome, "bad"), other_ready=True)
    assert fast.escalation == f"fast answer rejected ({outcome}: bad): re-run on the accurate model"
    why = "its answer was not an edit" if outcome == "unparsable" else "bad"
    assert fast.progress == f"escalating to the accurate model: {why}"
    accurate = after_failure("accurate", failed("accurate", outcome, "bad"), other_ready=True)
    assert accurate.escalation == "" and accurate.message == "bad"
