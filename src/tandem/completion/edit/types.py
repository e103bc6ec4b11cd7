"""The values an edit is made of, in and out of `completion.edit.flow.EditFlow.run` (no LSP, no I/O).

EditRequest      the instruction over a range of one file, as the user gave it
EditInputs       what the server knows besides: how to read files, the router's one input
EditProgress     one progress line for the user
Attempt          one model's try: its outcome and error in words
EditOutcome      edits ready to apply (or why there are none), with the route and the attempts

The edit's trace record (`EditTraceRecord`: route score, feature counts, attempts, never text) is the trace's
(`completion.observe.trace`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol

from tandem.completion.edit.file_edits import FileEdit
from tandem.completion.observe.trace import EditTraceRecord
from tandem.completion.routing.router import RouteDecision, RouteInputs, Tier

if TYPE_CHECKING:
    from tandem.completion.config.tree import ModelConfig
    from tandem.completion.providers.backends.base import ModelRequest, StreamStats
    from tandem.completion.providers.tiers import Reading


class ModelTier(Protocol):
    """One configured model (`completion.providers.tiers.Tier` is one): its configuration, its label, and its
    one read path (`Tier.reading`)."""

    config: ModelConfig
    label: str

    def reading(
        self,
        request: ModelRequest,
        stats: StreamStats,
        *,
        limit_s: float | None = ...,
    ) -> AbstractAsyncContextManager[Reading]: ...


class ModelSource(Protocol):
    """The configured models by tier name (`completion.providers.tiers.Tiers`, the engine's, is one)."""

    def get(self, name: str) -> ModelTier | None: ...


AttemptOutcome = Literal[
    "ok", "unparsable", "invalid", "conflict", "unavailable", "timeout", "refused", "failed", "cancelled"
]
# How an edit asks its models (`completion.edit.flow`): one after the other starting with the fast one,
# both at once, the accurate one alone, or the fast one with the accurate one checking its draft.
Plan = Literal["fast-first", "hedged", "accurate", "draft-check"]


@dataclass(frozen=True, kw_only=True)
class EditRequest:
    """One edit: an instruction over `[start, end)` (code-point offsets) of `text`, the file at `path`
    (workspace-relative: the name the model sees and the edits carry)."""

    path: str
    text: str
    start: int
    end: int
    instruction: str
    language: str = ""
    # The user's choice for this edit (`tandem.edit`'s `model`), or None to let the project/router decide.
    override: Tier | None = None
    client: str = ""
    received_ns: int = 0
    # The open document's uri, when the edit is of one: its own verdict (`completion.gate`) applies too.
    uri: str = ""


def _no_text(path: str) -> str | None:
    return None


@dataclass(frozen=True, kw_only=True)
class EditInputs:
    """What the server knows besides the request: how to read files, and the router's one input."""

    # Current texts of files, by workspace-relative path (absent: unknown); read again at rebase time.
    current_texts: Callable[[Collection[str]], Mapping[str, str]]
    # Text of another workspace file to show the model, or None (unreadable, or private).
    read_text: Callable[[str], str | None] = _no_text
    # What the router reads (`routing.router.RouteInputs`, gathered once by `service.gather_inputs`); the
    # flow fills in the request's part (mode, path, selection, instruction, new file).
    route: RouteInputs = field(default_factory=lambda: RouteInputs(mode="edit"))
    # Files to show whatever the route found (the evaluation shows the commit's files).
    extra_context: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One model's try at the edit."""

    tier: Tier
    model: str
    outcome: AttemptOutcome
    error: str = ""
    answer_chars: int = 0
    changed_lines: int = 0
    elapsed_ms: float = 0.0
    # When the request was started, from the edit's start (hedged attempts overlap).
    started_ms: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    # The provider reports usage at the end of a stream: for a stream cancelled before it, the tokens are
    # counted here from the prompt and the answer received (tiktoken), and this says so.
    tokens_estimated: bool = False
    # How its request travelled ("" if none was sent): the record says the used attempt's.
    transport: str = ""
    connection_reused: bool = False
    continuation: str = ""
    # The answer's text, for a later step of the same edit (a draft to check); never traced.
    answer: str = field(default="", repr=False)


@dataclass(frozen=True, kw_only=True)
class EditOutcome:
    """The result of `EditFlow.run`: edits over `current` (empty when there is nothing to apply) and why."""

    decision: RouteDecision
    edits: tuple[FileEdit, ...] = ()
    # The texts the edits apply to: each file as it was when the answer was checked.
    current: Mapping[str, str] = field(default_factory=dict)
    # The tier whose answer this is (None when no answer could be used).
    tier: Tier | None = None
    attempts: tuple[Attempt, ...] = ()
    # For the user: what went wrong, when `edits` is empty.
    message: str = ""
    conflict: bool = False
    rebased: bool = False
    # Things to tell the user once (a tier that is down or missing).
    notices: tuple[str, ...] = ()
    escalation: str = ""
    record: EditTraceRecord | None = None
    plan: Plan = "fast-first"

    @property
    def ok(self) -> bool:
        return bool(self.edits)


@dataclass(frozen=True, kw_only=True)
class EditProgress:
    """A progress report: one line for the user, and the tier at work."""

    message: str
    tier: Tier | None = None


ProgressSink = Callable[[EditProgress], None]
