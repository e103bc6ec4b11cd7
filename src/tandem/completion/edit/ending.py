"""How an edit ends: ready (`ready`, edits to apply) or not (`failed`, with the reason in the user's words),
and its trace record closed (`close`: the attempts, the escalation, the answer used).
"""

from __future__ import annotations

import logging

from tandem.completion.edit.attempt import Ask, Checked
from tandem.completion.edit.types import Attempt, EditOutcome, ModelTier, Plan
from tandem.completion.observe.trace import EditTraceRecord
from tandem.completion.routing.router import RouteDecision, Tier

log = logging.getLogger(__name__)


def ready(
    ask: Ask,
    plan: Plan,
    tier_name: Tier,
    tier: ModelTier,
    used: Attempt,
    checked: Checked,
    attempts: list[Attempt],
    notices: list[str],
    escalation: str,
) -> EditOutcome:
    edits, current, rebased = checked
    ask.record.tier, ask.record.model = tier_name, tier.label
    return EditOutcome(
        decision=ask.decision,
        edits=edits,
        current=current,
        tier=tier_name,
        attempts=tuple(attempts),
        rebased=rebased,
        notices=tuple(notices),
        escalation=escalation,
        record=close(ask.record, attempts, escalation, "ready", used=used),
        plan=plan,
    )


def close(
    record: EditTraceRecord,
    attempts: list[Attempt],
    escalation: str,
    outcome: str,
    *,
    used: Attempt | None = None,
) -> EditTraceRecord:
    record.attempts = [
        {
            "tier": a.tier,
            "outcome": a.outcome,
            "error": a.error[:300],
            "answer_chars": a.answer_chars,
            "changed_lines": a.changed_lines,
            "started_ms": a.started_ms,
            "ms": a.elapsed_ms,
            "tokens": {"in": a.tokens_in, "out": a.tokens_out, "estimated": a.tokens_estimated},
            "used": a is used,
            "transport": a.transport,
        }
        for a in attempts
    ]
    if used is not None and used.transport:
        # Hedged attempts end in either order: the record's transport is the one of the answer used.
        record.transport, record.connection_reused = used.transport, used.connection_reused
        record.continuation = used.continuation
    record.escalation = escalation
    record.outcome = outcome
    record.source = "model" if attempts else "none"
    return record


def failed(
    record: EditTraceRecord,
    decision: RouteDecision,
    attempts: list[Attempt],
    notices: list[str],
    escalation: str,
    message: str,
    *,
    conflict: bool = False,
    plain: bool = False,
) -> EditOutcome:
    close(record, attempts, escalation, "conflict" if conflict else "failed")
    record.error = message[:300]
    last = attempts[-1] if attempts else None
    if last is not None:
        record.tier, record.model = last.tier, last.model
    if not (conflict or plain) and last is not None:
        log.info("%s: the %s model's answer was not used: %s", record.id, last.tier, last.error)
        message = in_words(last)
    return EditOutcome(
        decision=decision,
        attempts=tuple(attempts),
        message=message,
        conflict=conflict,
        notices=tuple(notices),
        escalation=escalation,
        record=record,
        plan="hedged" if record.plan == "hedged" else "accurate" if record.plan == "accurate" else "fast-first",
    )


def in_words(attempt: Attempt) -> str:
    """Why the last model's answer was not applied, as the user reads it. An answer tandem could not read
    as an edit is said so, without the reader's terms (SEARCH/REPLACE blocks, hunks: they stay in the
    trace's `error` and the log); a check's reason is already written for the user ("... would no longer
    parse")."""
    if attempt.outcome == "unparsable":
        return f"the {attempt.tier} model answered, but not with a change tandem could apply to your files"
    return f"the {attempt.tier} model's edit could not be used: {attempt.error}"


def no_model(tier: Tier) -> str:
    return (
        f"no model is configured for edits (the route chose {tier}). Add [models.fast] and [models.accurate] "
        "tables to ~/.config/tandem/config.toml, or run `tandem demo` to see tandem work against its simulator."
    )
