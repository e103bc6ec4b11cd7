"""The path of one edit, top to bottom: `EditFlow.run`. No LSP here: plain dataclasses in and out.

    route -> plan -> context -> prompt -> stream -> parse -> validate -> rebase -> outcome
                                          ^                   |
                                          +--- escalate ------+   (fast answer unusable: ask the accurate model)

1. Route: `completion.routing.router` decides from what it can see before generating (selection, instruction,
   cross-file reach from the symbol index, the user's change in progress); the user's or the project's
   override wins, and the reasons are kept either way.
2. Context: the files the route found in the edit's reach are shown to the model beside the edited file,
   those the gate (`completion.gate`) allows.
3. Stream the answer (a whole conversation through `ModelRequest.messages`, raw), reporting progress.
4. Check it (`completion.edit.checks`, in a worker thread): parse, validate (still parses; for the fast model, no
   new undefined names, not far larger than predicted, and no name removed that another file still
   imports), rebase over what the user typed meanwhile.
   Every request passes `Gate.admit` just before it is sent; a refusal ends the edit (nothing is sent, to
   either model).
5. A fast answer that fails 4 (or a fast model that times out) is re-run on the accurate model; a tier
   that is down hands the edit to the other, and the user is told once. An edit the user typed over is
   refused, never escalated: the answer was fine, the text moved.

The plan (`[edit] strategy`, `EditFlow.plan`) says how the models are asked. "fast-first" is 3-5 from the
fast model; "accurate" is 3-4 from the accurate model alone; "hedged" asks both at once: the fast answer
is checked while the accurate one streams; if it passes, the accurate stream is cancelled (its tokens so
far are counted), and if it does not, the accurate answer, already on its way, is checked and used. The
default strategy bands the router's score: fast-first where it is confident the edit is easy, the accurate
model alone where it is confident it is hard, hedged in between; the user's or the project's choice of a
tier is asked alone.

The caller applies `EditOutcome.edits` and then calls `EditFlow.finish`, which writes the one trace
record of the edit (`kind: "edit"`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from tandem.cache.context import MAX_BUDGET_TOKENS
from tandem.cache.tokens import EncodingUnavailable, get_counter
from tandem.completion.config.tree import Config
from tandem.completion.edit.answer import CheckedEdit
from tandem.completion.edit.checks import check_answer
from tandem.completion.edit.file_edits import AnswerParseError, EditConflict, EditError, FileEdit, line_offset
from tandem.completion.edit.parse import EditTarget
from tandem.completion.edit.prompt import EditPrompt, draft_check_message, keeps_draft, selection_lines
from tandem.completion.edit.types import (
    Attempt,
    AttemptOutcome,
    EditInputs,
    EditOutcome,
    EditProgress,
    EditRequest,
    EditTraceRecord,
    ModelSource,
    ModelTier,
    Plan,
    ProgressSink,
)
from tandem.completion.edit.window import Messages, fit_window
from tandem.completion.gate import Gate, Outbound
from tandem.completion.observe.trace import Tracer, estimate_cost_usd
from tandem.completion.providers.backends.base import ModelRequest, StreamStats
from tandem.completion.providers.errors import (
    BackendTimeout,
    BackendUnavailable,
    CompletionError,
    NotConfigured,
    NotSent,
    describe,
)
from tandem.completion.routing.router import RouteDecision, RouterThresholds, Tier, route, route_features
from tandem.completion.routing.weights import DEFAULT_MODEL, RouterModel, RouterWeights

__all__ = ["EditFlow", "EditInputs", "EditOutcome", "EditProgress", "EditRequest"]
log = logging.getLogger(__name__)

# Progress is reported at most every this many characters of answer (a report per token floods the client).
_PROGRESS_EVERY_CHARS = 400


@dataclass(frozen=True, kw_only=True)
class _Ask:
    """What every attempt of one edit shares."""

    messages: tuple[tuple[str, str], ...]
    target: EditTarget
    request: EditRequest
    decision: RouteDecision
    inputs: EditInputs
    record: EditTraceRecord
    progress: ProgressSink
    deadline_s: float
    started_ns: int


def _other(tier: Tier) -> Tier:
    return "accurate" if tier == "fast" else "fast"


class _Cancelled(CompletionError):
    """A hedged attempt stopped because the other answer was used."""


def _classify(error: CompletionError) -> AttemptOutcome:
    if isinstance(error, _Cancelled):
        return "cancelled"
    if isinstance(error, EditConflict):
        return "conflict"
    if isinstance(error, AnswerParseError):
        return "unparsable"
    if isinstance(error, EditError):
        return "invalid"
    if isinstance(error, BackendUnavailable | NotConfigured):
        return "unavailable"
    if isinstance(error, BackendTimeout):
        return "timeout"
    if isinstance(error, NotSent):
        return "refused"
    return "failed"


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
    other = _other(tier)
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
            return self._failed(record, decision, [], [], "", ask, plain=True)
        attempts: list[Attempt] = []
        notices: list[str] = []
        try:
            if plan == "hedged":
                return await self._hedged(ask, plan, attempts, notices)
            return await self._in_turn(ask, plan, attempts, notices)
        except asyncio.CancelledError:
            # Cancelled by the user (or the server stopping): the trace still says what was tried.
            record.outcome = "cancelled"
            self._close(record, attempts, record.escalation, "cancelled")
            self.tracer.write(record)
            raise

    async def _prepare(
        self,
        request: EditRequest,
        inputs: EditInputs,
        decision: RouteDecision,
        record: EditTraceRecord,
        progress: ProgressSink,
    ) -> _Ask | str:
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
        return _Ask(
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

    async def _in_turn(self, ask: _Ask, plan: Plan, attempts: list[Attempt], notices: list[str]) -> EditOutcome:
        """One model at a time, the plan's first: a model that is missing, down or slow, or whose answer
        fails its checks, hands the edit to the other one, once (`after_failure` says when)."""
        record, decision = ask.record, ask.decision
        escalation = ""
        tier_name: Tier = "accurate" if plan == "accurate" else "fast"
        checker = self.models.get("accurate") if plan == "draft-check" else None
        while True:
            other = _other(tier_name)
            other_ready = self.models.get(other) is not None and not any(a.tier == other for a in attempts)
            tier = self.models.get(tier_name)
            if tier is None:
                if not other_ready:
                    why = _no_model(tier_name)
                    return self._failed(record, decision, attempts, notices, escalation, why, plain=True)
                notices += self._tell_once(tier_name, f"no {tier_name} model is configured")
                missing = f"no {tier_name} model configured: the {other} model served"
                escalation = record.escalation = escalation or missing
                tier_name = other
                continue
            attempt, checked = await self._attempt(tier_name, tier, ask)
            attempts.append(attempt)
            if checked is not None and tier_name == "fast" and checker is not None:
                return await self._check_draft(ask, plan, tier, checker, attempt, checked, attempts, notices)
            if checked is not None:
                return self._ready(ask, plan, tier_name, tier, attempt, checked, attempts, notices, escalation)
            step = after_failure(tier_name, attempt, other_ready=other_ready)
            if step.notice:
                notices += self._tell_once(tier_name, step.notice)
            if step.progress:
                ask.progress(EditProgress(message=step.progress, tier=other))
            if not step.escalation:
                why, conflict, plain = step.message, step.conflict, step.plain
                return self._failed(
                    record, decision, attempts, notices, escalation, why, conflict=conflict, plain=plain
                )
            escalation = record.escalation = step.escalation
            tier_name = other

    async def _hedged(self, ask: _Ask, plan: Plan, attempts: list[Attempt], notices: list[str]) -> EditOutcome:
        """Both models at once: the fast answer if it passes its checks (the accurate stream is then
        cancelled), the accurate one otherwise (it was already on its way)."""
        fast, accurate = self.models.get("fast"), self.models.get("accurate")
        assert fast is not None and accurate is not None
        stop_accurate = anyio.CancelScope()
        pending = asyncio.ensure_future(self._attempt("accurate", accurate, ask, cancel=stop_accurate))
        record, decision = ask.record, ask.decision
        try:
            attempt, checked = await self._attempt("fast", fast, ask)
            attempts.append(attempt)
            if checked is not None:
                stop_accurate.cancel()
                attempts.append((await pending)[0])
                return self._ready(ask, plan, "fast", fast, attempt, checked, attempts, notices, "")
            if attempt.outcome in ("conflict", "refused"):
                stop_accurate.cancel()
                attempts.append((await pending)[0])
                if attempt.outcome == "conflict":
                    return self._failed(record, decision, attempts, notices, "", attempt.error, conflict=True)
                why = f"not sent to a model: {attempt.error}"
                return self._failed(record, decision, attempts, notices, "", why, plain=True)
            if attempt.outcome == "unavailable":
                notices += self._tell_once("fast", f"the fast model is unavailable ({attempt.error})")
            escalation = (
                f"fast answer rejected ({attempt.outcome}: {attempt.error}): the accurate model's answer served"
            )
            why = "its answer was not an edit" if attempt.outcome == "unparsable" else attempt.error
            message = f"the accurate model's answer is on its way (fast answer rejected: {why})"
            ask.progress(EditProgress(message=message, tier="accurate"))
            second, checked = await pending
            attempts.append(second)
            if checked is not None:
                return self._ready(ask, plan, "accurate", accurate, second, checked, attempts, notices, escalation)
            if second.outcome == "conflict":
                return self._failed(record, decision, attempts, notices, escalation, second.error, conflict=True)
            return self._failed(record, decision, attempts, notices, escalation, second.error)
        finally:
            if not pending.done():
                # Cancelled from outside (the user, the server stopping): the accurate stream stops too.
                pending.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pending

    async def _check_draft(
        self,
        ask: _Ask,
        plan: Plan,
        fast: ModelTier,
        accurate: ModelTier,
        draft: Attempt,
        checked: tuple[tuple[FileEdit, ...], Mapping[str, str], bool],
        attempts: list[Attempt],
        notices: list[str],
    ) -> EditOutcome:
        """The accurate model checks a fast draft that passed tandem's checks: KEEP applies the draft
        (checked again against the files as they are now), blocks of its own replace it. A check that
        fails (no answer, an answer that fails its checks) leaves the draft, which passed them."""
        check = dataclasses.replace(ask, messages=(*ask.messages, ("user", draft_check_message(draft.answer))))
        ask.progress(EditProgress(message="the accurate model checks the fast model's draft", tier="accurate"))
        second, rewritten = await self._attempt("accurate", accurate, check)
        if keeps_draft(second.answer):
            attempts.append(dataclasses.replace(second, outcome="ok", error=""))
            why = "the accurate model kept the fast model's draft"
        elif rewritten is not None:
            attempts.append(second)
            why = "the accurate model replaced the fast model's draft"
            return self._ready(ask, plan, "accurate", accurate, second, rewritten, attempts, notices, why)
        else:
            attempts.append(second)
            why = f"the accurate model's check failed ({second.outcome}: {second.error}): the fast draft served"
        try:
            result, current = await self._check(draft.answer, "fast", ask)
        except CompletionError as error:
            conflict = isinstance(error, EditConflict)
            return self._failed(ask.record, ask.decision, attempts, notices, why, str(error), conflict=conflict)
        again = (result.edits, dict(current), result.rebased or checked[2])
        return self._ready(ask, plan, "fast", fast, draft, again, attempts, notices, why)

    def _ready(
        self,
        ask: _Ask,
        plan: Plan,
        tier_name: Tier,
        tier: ModelTier,
        used: Attempt,
        checked: tuple[tuple[FileEdit, ...], Mapping[str, str], bool],
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
            record=self._close(ask.record, attempts, escalation, "ready", used=used),
            plan=plan,
        )

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

    async def _attempt(
        self, tier_name: Tier, tier: ModelTier, ask: _Ask, *, cancel: anyio.CancelScope | None = None
    ) -> tuple[Attempt, tuple[tuple[FileEdit, ...], Mapping[str, str], bool] | None]:
        """Ask `tier`, then check its answer; (what happened, (edits, current texts, rebased) or None).
        `cancel`, when cancelled, stops the attempt wherever it is (a hedged accurate answer no longer
        needed): it then ends as "cancelled", with the tokens spent until then."""
        record, progress = ask.record, ask.progress
        model_request = self._model_request(ask, tier)
        stats = StreamStats()
        parts: list[str] = []
        started_ns = time.perf_counter_ns()
        # Short enough for a status bar: the route's reasons were the report before this one.
        where = f"{tier_name} model ({tier.config.model or tier.label})"
        progress(EditProgress(message=f"{where}: asking", tier=tier_name))
        error: CompletionError | None = None
        checked = None
        changed = 0
        scope = cancel or anyio.CancelScope()
        with scope:
            error = await self._stream(tier_name, tier, model_request, stats, parts, ask, where)
            if error is None:
                progress(EditProgress(message=f"{where}: checking the answer", tier=tier_name))
                try:
                    result, current = await self._check("".join(parts), tier_name, ask)
                except CompletionError as exc:
                    error = exc
                else:
                    changed = result.validation.changed_lines
                    checked = (result.edits, dict(current), result.rebased)
        estimated = False
        if scope.cancelled_caught:
            error, checked = _Cancelled("not needed: the fast answer passed its checks"), None
            if not stats.usage.input_tokens and not stats.usage.output_tokens:
                stats.usage.input_tokens, stats.usage.output_tokens = await self._count_tokens(ask.messages, parts)
                estimated = True
        answer = "".join(parts)
        _account(record, stats, tier, answer_chars=None if estimated else len(answer))
        attempt = Attempt(
            tier=tier_name,
            model=tier.label,
            outcome="ok" if error is None else _classify(error),
            error="" if error is None else str(error) or describe(error),
            answer_chars=len(answer),
            changed_lines=changed,
            elapsed_ms=round((time.perf_counter_ns() - started_ns) / 1e6, 3),
            started_ms=round((started_ns - ask.started_ns) / 1e6, 3),
            tokens_in=stats.usage.input_tokens,
            tokens_out=stats.usage.output_tokens,
            tokens_estimated=estimated,
            transport=stats.transport if stats.request_sent_ns else "",
            connection_reused=stats.connection_reused if stats.request_sent_ns else False,
            continuation=stats.continuation if stats.request_sent_ns else "",
            answer=answer,
        )
        return attempt, checked

    def _model_request(self, ask: _Ask, tier: ModelTier) -> ModelRequest:
        """The edit's conversation, as one model request of `tier`."""
        request = ask.request
        return ModelRequest(
            prefix="",
            suffix="",
            language=request.language,
            path=request.path,
            max_tokens=self.config.edit.max_tokens,
            temperature=tier.config.temperature,
            instruction=request.instruction,
            messages=ask.messages,
        )

    async def _stream(
        self,
        tier_name: Tier,
        tier: ModelTier,
        model_request: ModelRequest,
        stats: StreamStats,
        parts: list[str],
        ask: _Ask,
        where: str,
    ) -> CompletionError | None:
        """Stream `tier`'s answer into `parts` through the tier's one read path (`Tier.read`: its hold-off and
        breaker, as for completions), reporting progress; the error that ended it, if any."""
        received = reported = 0

        def take(chunk: str) -> None:
            nonlocal received, reported
            parts.append(chunk)
            received += len(chunk)
            if received - reported >= _PROGRESS_EVERY_CHARS:
                reported = received
                lines = sum(part.count("\n") for part in parts)
                ask.progress(EditProgress(message=f"{where}: {lines} lines received", tier=tier_name))

        outbound = Outbound(request=model_request, document=ask.request.uri, files=ask.target.originals)
        verdict = self.gate.admit(outbound)
        if not verdict:
            return NotSent(verdict.reason)
        end = await tier.read(model_request, stats, take, limit_s=max(0.0, ask.deadline_s - time.monotonic()))
        if end.timed_out:
            return BackendTimeout(f"no complete answer within {self.config.edit.deadline_s:g} s")
        return end.error

    async def _check(self, answer: str, tier_name: Tier, ask: _Ask) -> tuple[CheckedEdit, Mapping[str, str]]:
        predicted = ask.decision.features.expected_lines()
        return await check_answer(answer, ask.target, ask.inputs, fast=tier_name == "fast", predicted_lines=predicted)

    async def _prompt_tokens(self, messages: Messages) -> int:
        return (await self._count_tokens(messages, []))[0]

    async def _count_tokens(self, messages: tuple[tuple[str, str], ...], parts: list[str]) -> tuple[int, int]:
        """(prompt tokens, answer tokens so far) counted here, for a stream cut before its usage arrived."""
        prompt = "".join(content for _, content in messages)
        answer = "".join(parts)
        encoding = self.config.context.encoding

        def count() -> tuple[int, int]:
            # In the worker thread: the first call loads the encoding (a second or more), off the loop.
            try:
                counter = get_counter(encoding)
            except EncodingUnavailable:
                return len(prompt) // 4, len(answer) // 4
            return counter.count(prompt), counter.count(answer)

        return await anyio.to_thread.run_sync(count)

    # -- endings -------------------------------------------------------------------------------

    def _tell_once(self, tier: Tier, why: str) -> list[str]:
        if tier in self._told:
            return []
        self._told.add(tier)
        return [f"tandem: {why}; the {_other(tier)} model serves edits instead."]

    def _close(
        self,
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

    def _failed(
        self,
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
        self._close(record, attempts, escalation, "conflict" if conflict else "failed")
        record.error = message[:300]
        last = attempts[-1] if attempts else None
        if last is not None:
            record.tier, record.model = last.tier, last.model
        if not (conflict or plain) and last is not None:
            log.info("%s: the %s model's answer was not used: %s", record.id, last.tier, last.error)
            message = _in_words(last)
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


def _account(record: EditTraceRecord, stats: StreamStats, tier: ModelTier, *, answer_chars: int | None) -> None:
    """One attempt's phases, tokens, transport and cost, added to the edit's trace record."""
    record.mark("request_sent", stats.request_sent_ns)
    record.mark("first_token", stats.first_token_ns)
    record.mark("answered")
    record.tokens_in += stats.usage.input_tokens
    record.tokens_out += stats.usage.output_tokens
    record.tokens_cached += stats.usage.cached_tokens
    if stats.request_sent_ns:
        # How the (last) model request travelled, as completions' records say it.
        record.transport, record.connection_reused = stats.transport, stats.connection_reused
        record.continuation = stats.continuation
        record.bytes_sent += stats.bytes_sent
    record.cost_usd += estimate_cost_usd(
        tier.config,
        tokens_in=stats.usage.input_tokens,
        tokens_out=stats.usage.output_tokens,
        tokens_cached=stats.usage.cached_tokens,
    )
    if answer_chars is not None:
        record.chars = answer_chars


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


def _in_words(attempt: Attempt) -> str:
    """Why the last model's answer was not applied, as the user reads it. An answer tandem could not read
    as an edit is said so, without the reader's terms (SEARCH/REPLACE blocks, hunks: they stay in the
    trace's `error` and the log); a check's reason is already written for the user ("... would no longer
    parse")."""
    if attempt.outcome == "unparsable":
        return f"the {attempt.tier} model answered, but not with a change tandem could apply to your files"
    return f"the {attempt.tier} model's edit could not be used: {attempt.error}"


def _no_model(tier: Tier) -> str:
    return (
        f"no model is configured for edits (the route chose {tier}). Add [models.fast] and [models.accurate] "
        "tables to ~/.config/tandem/config.toml, or run `tandem demo` to see tandem work against its simulator."
    )
