"""The plans that ask one model at a time ("fast-first", "accurate", and "draft-check"'s draft): `in_turn`,
with the escalation rule `after_failure`, a pure function of the failed attempt.

A model that is missing hands the edit to the other one (the user is told once); a model that is down or
slow, or a fast answer that fails its checks, hands it over too, once; an edit the user typed over, or one
the gate refused, ends (the answer was fine, or nothing may be sent); an accurate answer that fails its
checks ends it.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.completion.edit.attempt import Ask, Asking, other_tier
from tandem.completion.edit.draft_check import check_draft
from tandem.completion.edit.ending import failed, no_model, ready
from tandem.completion.edit.types import Attempt, EditOutcome, EditProgress, Plan
from tandem.completion.routing.router import Tier


@dataclass(frozen=True, kw_only=True)
class NextStep:
    """What follows an attempt whose answer cannot be used: the other model is asked (`escalation` says
    why), or the edit ends (`message`, for the user)."""

    escalation: str = ""
    message: str = ""
    conflict: bool = False
    # The message is already in the user's words (not a model's failure to be put in words).
    plain: bool = False
    # Said to the user once (a model that is down), and as progress while the other model works.
    notice: str = ""
    progress: str = ""


def after_failure(tier: Tier, attempt: Attempt, *, other_ready: bool) -> NextStep:
    """The escalation rule, a function of the failed attempt alone: an edit the user typed over, or one the
    gate refused, ends (the answer was fine, or nothing may be sent); otherwise, while the other model is
    configured and not yet tried, a model that is down or slow hands over, and so does a fast answer that
    fails its checks; an accurate answer that fails its checks ends the edit."""
    other = other_tier(tier)
    if attempt.outcome == "conflict":
        return NextStep(message=attempt.error, conflict=True)
    if attempt.outcome == "refused":
        return NextStep(message=f"not sent to a model: {attempt.error}", plain=True)
    if other_ready and attempt.outcome == "unavailable":
        return NextStep(
            escalation=f"{tier} model unavailable ({attempt.error}): the {other} model served",
            notice=f"the {tier} model is unavailable ({attempt.error})",
        )
    if other_ready and attempt.outcome == "timeout":
        return NextStep(escalation=f"{tier} model timed out ({attempt.error}): re-run on the {other} model")
    if other_ready and tier == "fast":
        why = "its answer was not an edit" if attempt.outcome == "unparsable" else attempt.error
        return NextStep(
            escalation=f"fast answer rejected ({attempt.outcome}: {attempt.error}): re-run on the accurate model",
            progress=f"escalating to the accurate model: {why}",
        )
    return NextStep(message=attempt.error)


async def in_turn(flow: Asking, ask: Ask, plan: Plan, attempts: list[Attempt], notices: list[str]) -> EditOutcome:
    """One model at a time, the plan's first: a model that is missing, down or slow, or whose answer
    fails its checks, hands the edit to the other one, once (`after_failure` says when)."""
    record, decision = ask.record, ask.decision
    escalation = ""
    tier_name: Tier = "accurate" if plan == "accurate" else "fast"
    checker = flow.models.get("accurate") if plan == "draft-check" else None
    while True:
        other = other_tier(tier_name)
        other_ready = flow.models.get(other) is not None and not any(a.tier == other for a in attempts)
        tier = flow.models.get(tier_name)
        if tier is None:
            if not other_ready:
                why = no_model(tier_name)
                return failed(record, decision, attempts, notices, escalation, why, plain=True)
            notices += flow.tell_once(tier_name, f"no {tier_name} model is configured")
            missing = f"no {tier_name} model configured: the {other} model served"
            escalation = record.escalation = escalation or missing
            tier_name = other
            continue
        attempt, checked = await flow.attempt(tier_name, tier, ask)
        attempts.append(attempt)
        if checked is not None and tier_name == "fast" and checker is not None:
            return await check_draft(flow, ask, plan, tier, checker, attempt, checked, attempts, notices)
        if checked is not None:
            return ready(ask, plan, tier_name, tier, attempt, checked, attempts, notices, escalation)
        step = after_failure(tier_name, attempt, other_ready=other_ready)
        if step.notice:
            notices += flow.tell_once(tier_name, step.notice)
        if step.progress:
            ask.progress(EditProgress(message=step.progress, tier=other))
        if not step.escalation:
            why, conflict, plain = step.message, step.conflict, step.plain
            return failed(record, decision, attempts, notices, escalation, why, conflict=conflict, plain=plain)
        escalation = record.escalation = step.escalation
        tier_name = other
