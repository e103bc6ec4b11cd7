"""The "hedged" plan: both models at once. The fast answer is checked while the accurate one streams; if it
passes, the accurate stream is cancelled (its tokens so far are counted), and if it does not, the accurate
answer, already on its way, is checked and used.
"""

from __future__ import annotations

import asyncio
import contextlib

import anyio

from tandem.completion.edit.attempt import Ask, Asking
from tandem.completion.edit.ending import failed, ready
from tandem.completion.edit.types import Attempt, EditOutcome, EditProgress, Plan


async def hedged(flow: Asking, ask: Ask, plan: Plan, attempts: list[Attempt], notices: list[str]) -> EditOutcome:
    """Both models at once: the fast answer if it passes its checks (the accurate stream is then
    cancelled), the accurate one otherwise (it was already on its way)."""
    fast, accurate = flow.models.get("fast"), flow.models.get("accurate")
    assert fast is not None and accurate is not None
    stop_accurate = anyio.CancelScope()
    pending = asyncio.ensure_future(flow.attempt("accurate", accurate, ask, cancel=stop_accurate))
    record, decision = ask.record, ask.decision
    try:
        attempt, checked = await flow.attempt("fast", fast, ask)
        attempts.append(attempt)
        if checked is not None:
            stop_accurate.cancel()
            attempts.append((await pending)[0])
            return ready(ask, plan, "fast", fast, attempt, checked, attempts, notices, "")
        if attempt.outcome in ("conflict", "refused"):
            stop_accurate.cancel()
            attempts.append((await pending)[0])
            if attempt.outcome == "conflict":
                return failed(record, decision, attempts, notices, "", attempt.error, conflict=True)
            why = f"not sent to a model: {attempt.error}"
            return failed(record, decision, attempts, notices, "", why, plain=True)
        if attempt.outcome == "unavailable":
            notices += flow.tell_once("fast", f"the fast model is unavailable ({attempt.error})")
        escalation = f"fast answer rejected ({attempt.outcome}: {attempt.error}): the accurate model's answer served"
        why = "its answer was not an edit" if attempt.outcome == "unparsable" else attempt.error
        message = f"the accurate model's answer is on its way (fast answer rejected: {why})"
        ask.progress(EditProgress(message=message, tier="accurate"))
        second, checked = await pending
        attempts.append(second)
        if checked is not None:
            return ready(ask, plan, "accurate", accurate, second, checked, attempts, notices, escalation)
        if second.outcome == "conflict":
            return failed(record, decision, attempts, notices, escalation, second.error, conflict=True)
        return failed(record, decision, attempts, notices, escalation, second.error)
    finally:
        if not pending.done():
            # Cancelled from outside (the user, the server stopping): the accurate stream stops too.
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
