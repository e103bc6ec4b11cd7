"""The path of one edit, top to bottom: `EditFlow.run`. No LSP here: plain dataclasses in and out.

    route -> plan -> context -> prompt -> stream -> parse -> validate -> rebase -> outcome
                                          ^                   |
                                          +--- escalate ------+   (fast answer unusable: ask the accurate model)

1. Route: `completion.routing.router` decides from what it can see before generating (selection, instruction,
   cross-file reach from the symbol index, the user's change in progress); the user's or the project's
   override wins, and the reasons are kept either way.
2. Context: the files the route found in the edit's reach are shown to the model beside the edited file,
   those the gate (`completion.gate`) allows.
3. Stream the answer (a whole conversation through `ModelRequest.messages`, raw), reporting progress
   (`attempt.ask_model`, one model's try).
4. Check it (`completion.edit.checks`, in a worker thread): parse, validate (still parses; for the fast model, no
   new undefined names, not far larger than predicted, and no name removed that another file still
   imports), rebase over what the user typed meanwhile.
   Every request passes `Gate.admit` just before it is sent; a refusal ends the edit (nothing is sent, to
   either model).
5. A fast answer that fails 4 (or a fast model that times out) is re-run on the accurate model; a tier
   that is down hands the edit to the other, and the user is told once. An edit the user typed over is
   refused, never escalated: the answer was fine, the text moved (`escalation.after_failure`).

The plan (`[edit] strategy`, `EditFlow.plan`) says how the models are asked, each plan a module of its own.
"fast-first" is 3-5 from the fast model; "accurate" is 3-4 from the accurate model alone (both
`escalation.in_turn`); "hedged" (`hedged`) asks both at once: the fast answer is checked while the accurate
one streams; if it passes, the accurate stream is cancelled (its tokens so far are counted), and if it does
not, the accurate answer, already on its way, is checked and used; "draft-check" is fast-first with the
accurate model checking a draft that passed (`draft_check`). How an edit ends is `ending`. The
default strategy bands the router's score: fast-first where it is confident the edit is easy, the accurate
model alone where it is confident it is hard, hedged in between; the user's or the project's choice of a
tier is asked alone.

The caller applies `EditOutcome.edits` and then calls `EditFlow.finish`, which writes the one trace
record of the edit (`kind: "edit"`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

import anyio

from tandem.cache.context import MAX_BUDGET_TOKENS
from tandem.completion.config.tree import Config
from tandem.completion.edit.attempt import Ask, Checked, ask_model, count_tokens, other_tier
from tandem.completion.edit.ending import close, failed
from tandem.completion.edit.escalation import in_turn
from tandem.completion.edit.file_edits import line_offset
from tandem.completion.edit.hedged import hedged
from tandem.completion.edit.parse import EditTarget
from tandem.completion.edit.prompt import EditPrompt, selection_lines
from tandem.completion.edit.types import (
    Attempt,
    EditInputs,
    EditOutcome,
    EditProgress,
    EditRequest,
    ModelSource,
    ModelTier,
    Plan,
    ProgressSink,
)
from tandem.completion.edit.window import Messages, fit_window
from tandem.completion.gate import Gate
from tandem.completion.observe.trace import EditTraceRecord, Tracer
from tandem.completion.routing.router import RouteDecision, RouterThresholds, Tier, route, route_features
from tandem.completion.routing.weights import DEFAULT_MODEL, RouterModel, RouterWeights

__all__ = ["EditFlow", "EditInputs", "EditOutcome", "EditProgress", "EditRequest"]


class EditFlow:
    """Runs edits: one instance per server (or per evaluation), sharing the models and the tracer."""

    def __init__(
        self,
        *,
        models: ModelSource,
        tracer: Tracer,
        config: Config,
        weights: RouterWeights | RouterModel = DEFAULT_MODEL,
        gate: Gate | None = None,
    ) -> None:
        self.models = models
        # What may be sent (the server's gate knows the workspace's ignore files; the default applies the rest).
        self.gate = gate or Gate()
        self.tracer = tracer
        self.config = config
        # The router's model (an evaluation passes weights fitted without the history it replays).
        self.weights = weights
        # Tiers the user has been told are down or missing, so each is told once.
        self._told: set[str] = set()

    def decide(self, request: EditRequest, inputs: EditInputs) -> RouteDecision:
        """The route of `request`, with its reasons; the request's override, then the project's, win."""
        thresholds: RouterThresholds = self.config.router
        inputs_of_request = dataclasses.replace(
            inputs.route,
            mode="edit",
            path=request.path,
            selection=request.text[request.start : request.end],
            instruction=request.instruction,
            new_file=not request.text,
        )
        features = route_features(inputs_of_request, thresholds=thresholds)
        override: Tier | None = request.override or (self.config.router.force or None)
        return route(features, thresholds, override=override, weights=self.weights)

    def plan(self, decision: RouteDecision) -> Plan:
        """How the edit asks its models: a tier chosen by the user or the project is asked alone (the
        fast one first, escalating); otherwise `[edit] strategy` decides (see the module docstring)."""
        edit = self.config.edit
        if decision.overridden or edit.strategy == "route":
            return "accurate" if decision.tier == "accurate" else "fast-first"
        if edit.strategy == "draft-check":
            return "draft-check"
        if decision.score >= edit.accurate_from:
            return "accurate"
        if decision.score >= edit.hedge_from:
            return "hedged"
        return "fast-first"

    async def run(
        self, request: EditRequest, inputs: EditInputs, *, on_progress: ProgressSink | None = None
    ) -> EditOutcome:
        """Route, ask, check, escalate; see the module docstring. Cancelling the task stops the model stream."""
        progress = on_progress or (lambda _: None)
        record = EditTraceRecord(
            kind="edit",
            received_ns=request.received_ns or time.perf_counter_ns(),
            file=request.path.rsplit("/", 1)[-1],
            language=request.language,
            client=request.client,
            mode="edit",
        )
        decision = self.decide(request, inputs)
        plan = self.plan(decision)
        if plan == "hedged" and (self.models.get("fast") is None or self.models.get("accurate") is None):
            plan = "fast-first"  # one model to ask: the sequence below hands over to whichever is there
        record.route_score, record.features = decision.score, decision.trace_features()
        record.route_reasons = list(decision.reasons)
        if inputs.route.late:
            record.route_reasons.append(f"decided without {', '.join(inputs.route.late)} (not read in time)")
        record.plan = plan
        progress(_plan_progress(plan, decision))
        ask = await self._prepare(request, inputs, decision, record, progress)
        if isinstance(ask, str):
            return failed(record, decision, [], [], "", ask, plain=True)
        attempts: list[Attempt] = []
        notices: list[str] = []
        try:
            if plan == "hedged":
                return await hedged(self, ask, plan, attempts, notices)
            return await in_turn(self, ask, plan, attempts, notices)
        except asyncio.CancelledError:
            # Cancelled by the user (or the server stopping): the trace still says what was tried.
            record.outcome = "cancelled"
            close(record, attempts, record.escalation, "cancelled")
            self.tracer.write(record)
            raise

    async def _prepare(
        self,
        request: EditRequest,
        inputs: EditInputs,
        decision: RouteDecision,
        record: EditTraceRecord,
        progress: ProgressSink,
    ) -> Ask | str:
        """What every attempt shares: the files shown beside the edited one, the prompt within the largest
        window, and where the answer is looked for; or, when the selection cannot be shown, why."""
        context = self._context(request, decision, inputs)
        record.context_files = len(context)
        first, end = selection_lines(request.text, request.start, request.end)
        prompt = EditPrompt(
            path=request.path,
            text=request.text,
            first_line=first,
            end_line=end,
            instruction=request.instruction,
            context=context,
            language=request.language,
        )
        prompt, messages, over = await fit_window(
            prompt, answer_tokens=self.config.edit.max_tokens, count=self._prompt_tokens, window_tokens=self._window()
        )
        record.prompt_chars = sum(len(content) for _, content in messages)
        record.shown_lines = list(prompt.shown) if prompt.shown is not None else None
        record.mark("context_built")
        if over:
            return over
        shown = None
        if prompt.shown is not None:
            shown = (line_offset(request.text, prompt.shown[0]), line_offset(request.text, prompt.shown[1]))
        target = EditTarget(
            originals={request.path: request.text, **context},
            primary=request.path,
            selection=(request.start, request.end) if request.end > request.start else None,
            shown=shown,
        )
        return Ask(
            messages=messages,
            target=target,
            request=request,
            decision=decision,
            inputs=inputs,
            record=record,
            progress=progress,
            deadline_s=time.monotonic() + self.config.edit.deadline_s,
            started_ns=time.perf_counter_ns(),
        )

    async def attempt(
        self, tier_name: Tier, tier: ModelTier, ask: Ask, *, cancel: anyio.CancelScope | None = None
    ) -> tuple[Attempt, Checked | None]:
        """One model's try (`attempt.ask_model`), with this flow's configuration and gate."""
        return await ask_model(tier_name, tier, ask, config=self.config, gate=self.gate, cancel=cancel)

    def tell_once(self, tier: Tier, why: str) -> list[str]:
        if tier in self._told:
            return []
        self._told.add(tier)
        return [f"tandem: {why}; the {other_tier(tier)} model serves edits instead."]

    def finish(self, outcome: EditOutcome, *, applied: bool = False, error: str = "") -> None:
        """Write the edit's trace record, once the caller knows whether its edits were applied (call it
        for failed outcomes too)."""
        record = outcome.record
        if record is None:
            return
        if outcome.ok:
            record.outcome = "applied" if applied else "rejected"
            record.error = error
            record.applied_files = len({e.path for e in outcome.edits}) if applied else 0
        record.mark("done")
        self.tracer.write(record)

    # -- steps ---------------------------------------------------------------------------------

    def _window(self) -> int:
        """The smallest context window (tokens) of the configured models: one prompt serves every attempt."""
        windows = [
            tier.config.context_tokens
            for name in ("fast", "accurate")
            if (tier := self.models.get(name)) is not None and tier.config.context_tokens
        ]
        return min(windows, default=MAX_BUDGET_TOKENS)

    def _context(self, request: EditRequest, decision: RouteDecision, inputs: EditInputs) -> dict[str, str]:
        """Other files to show the model: the caller's extra files, then the route's reach, within limits (and
        at most as many characters as the window has tokens: a third of it or less)."""
        f = decision.features
        limits = self.config.edit
        budget = min(limits.context_chars, self._window())
        context: dict[str, str] = {}
        reach = [*f.mentioned_files, *f.caller_files, *f.dependency_files]
        for index, path in enumerate([*inputs.extra_context, *reach]):
            extra = index < len(inputs.extra_context)
            if path == request.path or path in context or (not extra and len(context) >= limits.context_files):
                continue
            text = inputs.read_text(path)
            if text is None or len(text) > budget or not self.gate.file(path, text):
                continue
            context[path] = text
            budget -= len(text)
        return context

    async def _prompt_tokens(self, messages: Messages) -> int:
        return (await count_tokens(self.config.context.encoding, messages, []))[0]


def _plan_progress(plan: Plan, decision: RouteDecision) -> EditProgress:
    """The first progress line: where the edit goes, and why."""
    if plan == "hedged":
        why = "; ".join(decision.reasons[:2]) or "no signal"
        return EditProgress(
            message=f"fast and accurate at once (router score {decision.score:.2f}): {why}", tier="fast"
        )
    if plan == "draft-check":
        return EditProgress(message="fast, then the accurate model checks its draft", tier="fast")
    tier: Tier = "accurate" if plan == "accurate" else "fast"
    if tier == decision.tier:
        return EditProgress(message=decision.message(), tier=tier)
    return EditProgress(message=f"{tier}: router score {decision.score:.2f}", tier=tier)
