"""From a model's answer to edits that are safe to apply now: parse, validate, rebase, in that order.

    answer --parse_answer--> edits over what the model saw
           --validate_edits--> still parses / balances, no new undefined names, not far larger than predicted
           --rebase_edits--> moved onto the user's current text

`AnswerParseError` and `EditInvalid` mean "the model got it wrong": a fast answer is re-run on the
accurate model. `EditConflict` means "the user typed over it": nothing is applied, the user is told.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tandem.completion.edit.file_edits import EditInvalid, FileEdit
from tandem.completion.edit.parse import EditTarget, parse_answer
from tandem.completion.edit.rebase import rebase_edits
from tandem.completion.edit.validate import Validation, ValidationLimits, validate_edits


@dataclass(frozen=True, kw_only=True)
class CheckedEdit:
    """Edits ready to apply to the current texts, and what was checked on the way."""

    edits: tuple[FileEdit, ...]
    validation: Validation
    # True when the user typed meanwhile and the edits were moved over their changes.
    rebased: bool


def checked_edits(
    answer: str,
    target: EditTarget,
    *,
    current: Mapping[str, str],
    predicted_lines: int | None = None,
    check_names: bool = False,
    limits: ValidationLimits | None = None,
) -> CheckedEdit:
    """Parse `answer` over `target.originals`, validate it, and rebase it onto `current` (the files'
    texts now; a file the edit creates may be absent). Raises an `EditError` subclass on failure."""
    edits = parse_answer(answer, target)
    verdict = validate_edits(
        target.originals,
        edits,
        predicted_lines=predicted_lines,
        primary=target.primary,
        check_names=check_names,
        limits=limits,
    )
    if not verdict.ok:
        raise EditInvalid("; ".join(verdict.problems))
    moved = rebase_edits(edits, target.originals, current)
    rebased = any(current.get(path, text) != text for path, text in target.originals.items())
    return CheckedEdit(edits=tuple(moved), validation=verdict, rebased=rebased)
