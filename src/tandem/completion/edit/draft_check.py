"""The "draft-check" plan's second step: the accurate model checks a fast draft that passed tandem's checks
(`prompt.draft_check_message`). KEEP applies the draft, checked again against the files as they are now;
blocks of its own replace it; a check that fails leaves the draft.
"""

from __future__ import annotations

import dataclasses

from tandem.completion.edit.attempt import Ask, Asking, Checked, check
from tandem.completion.edit.ending import failed, ready
from tandem.completion.edit.file_edits import EditConflict
from tandem.completion.edit.prompt import draft_check_message, keeps_draft
from tandem.completion.edit.types import Attempt, EditOutcome, EditProgress, ModelTier, Plan
from tandem.completion.providers.errors import CompletionError


async def check_draft(
    flow: Asking,
    ask: Ask,
    plan: Plan,
    fast: ModelTier,
    accurate: ModelTier,
    draft: Attempt,
    checked: Checked,
    attempts: list[Attempt],
    notices: list[str],
) -> EditOutcome:
    """The accurate model checks a fast draft that passed tandem's checks: KEEP applies the draft
    (checked again against the files as they are now), blocks of its own replace it. A check that
    fails (no answer, an answer that fails its checks) leaves the draft, which passed them."""
    checking = dataclasses.replace(ask, messages=(*ask.messages, ("user", draft_check_message(draft.answer))))
    ask.progress(EditProgress(message="the accurate model checks the fast model's draft", tier="accurate"))
    second, rewritten = await flow.attempt("accurate", accurate, checking)
    if keeps_draft(second.answer):
        attempts.append(dataclasses.replace(second, outcome="ok", error=""))
        why = "the accurate model kept the fast model's draft"
    elif rewritten is not None:
        attempts.append(second)
        why = "the accurate model replaced the fast model's draft"
        return ready(ask, plan, "accurate", accurate, second, rewritten, attempts, notices, why)
    else:
        attempts.append(second)
        why = f"the accurate model's check failed ({second.outcome}: {second.error}): the fast draft served"
    try:
        result, current = await check(draft.answer, "fast", ask)
    except CompletionError as error:
        conflict = isinstance(error, EditConflict)
        return failed(ask.record, ask.decision, attempts, notices, why, str(error), conflict=conflict)
    again = (result.edits, dict(current), result.rebased or checked[2])
    return ready(ask, plan, "fast", fast, draft, again, attempts, notices, why)
