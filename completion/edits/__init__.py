"""Edits: asking a model for one, reading its answer, checking it, and carrying it over the user's typing.

prompt    edit_messages / read_edit_prompt      the request, and reading it back (tests); the draft check
parse     parse_answer                          SEARCH/REPLACE blocks, unified diffs, a fenced range
validate  validate_edits / require_valid        still parses (or balances), no new undefined names, not
                                                far larger than expected
references removed_names / dangling_references  names an edit removed that other files still import
rebase    rebase_edits                          move edits over the user's changes, or refuse
types     FileEdit, apply_edits, the EditError tree
"""

from __future__ import annotations

from tandem.completion.edits.checked import CheckedEdit, checked_edits
from tandem.completion.edits.parse import EditTarget, parse_answer
from tandem.completion.edits.prompt import (
    EDIT_SYSTEM_PROMPT,
    KEEP_ANSWER,
    EditPrompt,
    draft_check_message,
    edit_messages,
    excerpt_span,
    keeps_draft,
    read_edit_prompt,
    selection_lines,
)
from tandem.completion.edits.rebase import rebase_edits, user_changes
from tandem.completion.edits.types import (
    AnswerParseError,
    EditConflict,
    EditError,
    EditInvalid,
    FileEdit,
    apply_all,
    apply_edits,
    changed_lines,
    line_col,
    line_offset,
)
from tandem.completion.edits.validate import (
    Validation,
    ValidationLimits,
    balance_issues,
    require_valid,
    validate_edits,
)

__all__ = [
    "EDIT_SYSTEM_PROMPT",
    "KEEP_ANSWER",
    "AnswerParseError",
    "CheckedEdit",
    "EditConflict",
    "EditError",
    "EditInvalid",
    "EditPrompt",
    "EditTarget",
    "FileEdit",
    "Validation",
    "ValidationLimits",
    "apply_all",
    "apply_edits",
    "balance_issues",
    "changed_lines",
    "checked_edits",
    "draft_check_message",
    "edit_messages",
    "excerpt_span",
    "keeps_draft",
    "line_col",
    "line_offset",
    "parse_answer",
    "read_edit_prompt",
    "rebase_edits",
    "require_valid",
    "selection_lines",
    "user_changes",
    "validate_edits",
]
